"""The walk-through on the H200: same physics as the host run within 1e-6."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu

WALKTHROUGH = Path(__file__).resolve().parents[2] / "examples/particle_pusher/walkthrough.py"


def test_walkthrough_on_the_gpu(tmp_path):
    env = {**os.environ, "CUNUMPY_BACKEND": "cupy"}
    result = subprocess.run(
        [sys.executable, str(WALKTHROUGH), "--output", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=900,
        env=env,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "0 transfer(s) through cunumpy" in result.stdout.split("=== step 4")[1]
    assert (tmp_path / "particles_cupy.png").is_file()
