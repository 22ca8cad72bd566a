"""The examples of xp.algorithms, streams/staging and xp.scipy/optimize run, on NumPy and on the
emulated device (in a subprocess, as a user would run them), and the python blocks of their
guides run on NumPy."""

from __future__ import annotations

import os
import re
import runpy
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ["particle_cells.py", "async_output.py", "setup_solvers.py"]
GUIDES = ["docs/particle-algorithms.md", "docs/streams-and-staging.md", "docs/scipy-and-solvers.md"]


def needs_scipy(name: str) -> None:
    if name == "setup_solvers.py":
        pytest.importorskip("scipy")


@pytest.mark.parametrize("name", EXAMPLES)
def test_example_runs_on_numpy(name, capsys):
    needs_scipy(name)
    namespace = runpy.run_path(str(ROOT / "examples" / name), run_name="example")
    namespace["main"]()
    assert capsys.readouterr().out


@pytest.mark.parametrize("name", EXAMPLES)
def test_example_runs_on_the_emulated_device(name):
    needs_scipy(name)
    env = {**os.environ, "CUNUMPY_FAKE_CUPY": "1", "CUNUMPY_BACKEND": "cupy"}
    result = subprocess.run(
        [sys.executable, str(ROOT / "examples" / name)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]


@pytest.mark.parametrize("guide", GUIDES)
def test_guide_blocks_run(guide):
    if "scipy" in guide:
        pytest.importorskip("scipy")
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / guide).read_text(), flags=re.S)
    assert blocks, f"{guide} has no python example"
    for code in blocks:
        exec(compile(code, guide, "exec"), {})
