"""Every ```python block of the README and of docs/ runs, so no example drifts from the code.

Each page runs in a fresh process, its blocks in order in one namespace (a later block uses
what an earlier one defined), with cwd in a temporary folder. Pages run on the NumPy backend;
a block marked ``<!-- test: device -->`` (the line above its fence) needs the GPU path and runs
only on the emulated device (``CUNUMPY_FAKE_CUPY=1``, backend ``cupy``), where the whole page
runs again. A page with a block marked ``<!-- test: metal -->`` (a Metal kernel) runs with
``CUNUMPY_FAKE_METAL=1``: its Metal kernels run on the emulated Metal device. New pages are
picked up by the glob: nothing to register.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from cunumpy.kernel_testing import emulation_compiler

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
BLOCK = re.compile(r"(?:<!--\s*test:\s*(\w+)\s*-->\s*\n)?```python\n(.*?)```", re.S)
MARKERS = {None, "device", "metal"}

pytestmark = [
    pytest.mark.cxx,
    pytest.mark.skipif(emulation_compiler() is None, reason="needs a host C++ compiler"),
]

# Runs the blocks given on stdin; line numbers in tracebacks are those of the page.
RUNNER = """
import json, sys
page, mode, blocks = json.load(sys.stdin)
if mode == "emulated":
    import cunumpy  # installs the fake CuPy before a block imports cupy
namespace = {"__name__": "__main__"}
for line, marker, code in blocks:
    if marker == "device" and mode != "emulated":
        continue
    exec(compile("\\n" * line + code, page, "exec"), namespace)
"""


def blocks_of(page: Path) -> list[tuple[int, str | None, str]]:
    """``(line before the code, marker, code)`` of every python block."""
    text = page.read_text()
    found = []
    for match in BLOCK.finditer(text):
        marker = match.group(1)
        assert marker in MARKERS, f"{page.name}: unknown test marker {marker!r}"
        found.append((text[: match.start(2)].count("\n"), marker, match.group(2)))
    return found


CASES = [
    pytest.param(page, mode, id=f"{page.relative_to(ROOT)}-{mode}")
    for page in PAGES
    if blocks_of(page)
    for mode in ("numpy", "emulated")
    if mode == "numpy" or any(m == "device" for _, m, _ in blocks_of(page))
]


def test_every_page_with_code_is_covered():
    pages = {case.values[0] for case in CASES}
    assert ROOT / "README.md" in pages and ROOT / "docs/kernel-fusion.md" in pages


@pytest.mark.parametrize(("page", "mode"), CASES)
def test_page_code_runs(page: Path, mode: str, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("CUNUMPY_FAKE_CUPY",)}
    env["CUNUMPY_BACKEND"] = "numpy"
    if mode == "emulated":
        env.update(CUNUMPY_FAKE_CUPY="1", CUNUMPY_BACKEND="cupy")
    env["MPLBACKEND"] = "Agg"
    env.pop("CUNUMPY_FAKE_METAL", None)
    if any(m == "metal" for _, m, _ in blocks_of(page)):
        env["CUNUMPY_FAKE_METAL"] = "1"
    payload = json.dumps([str(page), mode, blocks_of(page)])
    result = subprocess.run(
        [sys.executable, "-c", RUNNER],
        input=payload,
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
        env=env,
    )
    assert result.returncode == 0, (
        f"{page.name} ({mode}) failed:\n{result.stdout[-3000:]}\n{result.stderr[-4000:]}"
    )
