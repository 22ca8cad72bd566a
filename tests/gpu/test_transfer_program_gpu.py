"""The program that tests/cxx runs on the emulated device backend, run on the GPU: the same
results and the same transfer counts (a real CuPy does not report the implicit sync)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu

PROGRAM = Path(__file__).resolve().parents[1] / "programs" / "transfer_program.py"


def test_transfer_counts_match_the_emulated_backend():
    env = {k: v for k, v in os.environ.items() if k not in {"CUNUMPY_FAKE_CUPY", "CUNUMPY_BACKEND"}}
    result = subprocess.run(
        [sys.executable, str(PROGRAM)], env=env, capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, result.stderr[-3000:]
    sys.path.insert(0, str(PROGRAM.parent))
    try:
        from transfer_program import EXPECTED
    finally:
        sys.path.pop(0)
    out = json.loads(result.stdout)
    assert out["counts"] == {**EXPECTED, "syncs": 0}, out["report"]
    assert "kernel 'axpy' grid [782, 1, 1] block [128, 1, 1]" in out["report"]
