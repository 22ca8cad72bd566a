"""The python examples of the struct and accumulation guides run (host side)."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    "doc", ["docs/kernel-arguments-and-structs.md", "docs/accumulation-kernels.md"]
)
def test_guide_examples_run(doc: str) -> None:
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / doc).read_text(), flags=re.S)
    assert blocks, f"{doc} has no python example"
    for code in blocks:
        exec(compile(code, doc, "exec"), {})
