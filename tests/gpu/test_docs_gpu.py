"""The CUDA guide's example runs on a GPU."""

import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[2]


def test_writing_cuda_kernels_example_runs():
    text = (ROOT / "docs/writing-cuda-kernels.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert blocks
    namespace: dict = {}
    for code in blocks:
        exec(compile(code, "writing-cuda-kernels.md", "exec"), namespace)
    assert float(namespace["y"].sum()) == 2 * 2.0 * sum(range(1000))
