"""The examples of docs/testing-without-a-gpu.md run (each block in its own process, since the
last one installs the fake CuPy)."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

from cunumpy.kernel_testing import emulation_compiler

pytestmark = [
    pytest.mark.cxx,
    pytest.mark.skipif(emulation_compiler() is None, reason="needs a host C++ compiler"),
]

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "testing-without-a-gpu.md"
BLOCKS = re.findall(r"```python\n(.*?)```", GUIDE.read_text(), flags=re.S)


def test_the_guide_has_its_three_examples():
    assert len(BLOCKS) == 3


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_guide_example_runs(index):
    result = subprocess.run(
        [sys.executable, "-c", BLOCKS[index]], capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    expected = ["True", "out-of-bounds access through pointer parameter 0 'y'", "1 to_device"]
    assert expected[index] in result.stdout, result.stdout
