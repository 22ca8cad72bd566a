"""The code in the README and the guides runs (blocks that need a GPU run in tests/gpu)."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HOST_DOCS = ["README.md", "docs/backends-and-transfers.md"]


def python_blocks(path: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", path.read_text(), flags=re.S)


@pytest.mark.parametrize("doc", HOST_DOCS)
def test_python_blocks_run(doc, capsys):
    blocks = python_blocks(ROOT / doc)
    assert blocks, f"{doc} has no python example"
    for code in blocks:
        exec(compile(code, doc, "exec"), {})
    assert "transfer(s) through cunumpy" in capsys.readouterr().out


def test_demo_runs(capsys):
    namespace: dict = {"__name__": "demo"}
    exec(compile((ROOT / "examples/demo.py").read_text(), "demo.py", "exec"), namespace)
    namespace["main"]()
    out = capsys.readouterr().out
    assert "backend" in out and "transfer report:" in out
