"""`xp.cuda.graph` on the GPU (issue 25): the programs of the emulated-device tests
(tests/cuda_graph_programs.py), here captured with CuPy's stream capture and replayed as CUDA
graphs, kernel nodes updated in place by the driver; and the walk-through's graph flag."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from cuda_graph_programs import PROGRAMS, WALKTHROUGH_DIR, check_output, run

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_graph_program_on_the_gpu(tmp_path, name):
    check_output(tmp_path, name, run(tmp_path, name, emulated=False))


def test_the_walkthrough_runs_with_its_graph_flag_on_the_gpu(tmp_path):
    env = {**os.environ, "CUNUMPY_BACKEND": "cupy"}
    env.pop("CUNUMPY_FAKE_CUPY", None)
    result = subprocess.run(
        [sys.executable, str(Path(WALKTHROUGH_DIR) / "walkthrough.py")]
        + ["--particles", "10000", "--steps", "50", "--graph", "--output", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=900,
        env=env,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    step4 = result.stdout.split("=== step 4: all ported, one CUDA graph per step")[1]
    assert "graph replays: 50 launch(es) ran 100 kernel(s)" in step4
    verdict = step4.split("step 4: largest relative difference to the host run")[1]
    assert "same physics" in verdict.splitlines()[0]
