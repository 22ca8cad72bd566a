"""The examples of the porting guides run; the pytest functions they define run too (their
device half skips without a device backend)."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def python_blocks(path: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", path.read_text(), flags=re.S)


def test_pairing_guide_runs(capsys):
    namespace: dict = {}
    for code in python_blocks(ROOT / "docs/pairing-host-and-cuda-kernels.md"):
        exec(compile(code, "pairing-host-and-cuda-kernels.md", "exec"), namespace)
    out = capsys.readouterr().out
    assert "CUDA kernels: 1 of 2 (missing: shift)" in out
    assert "('y',)" in out and "kernel profile: 6 call(s) of 2 kernel(s)" in out
    assert "evaluate: parallel loop `for ip in range(...)`" in out  # the scratch-struct example


def test_testing_guide_runs():
    namespace: dict = {}
    for code in python_blocks(ROOT / "docs/testing-kernels.md"):
        exec(compile(code, "testing-kernels.md", "exec"), namespace)
    assert [p.id for p in namespace["parity_cases"](namespace["catalog"])] == ["axpy"]
    namespace["test_scale_on_both"]("numpy")
    try:
        namespace["test_axpy_agrees"]()
    except pytest.skip.Exception:
        pass  # no device backend here
