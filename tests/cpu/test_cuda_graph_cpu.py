"""`xp.cuda.graph` on the emulated device (issue 25): a capture runs nothing, a replay runs the
recorded launches in order; new scalars and same-shape arrays update the kernels in place,
anything else asks for a re-capture; what a graph cannot hold is refused at the call, naming
it and the line; the ledger and the kernel profile see replays; the walk-through's graph mode
equals its eager loop. Results are checked against NumPy. The programs (shared with
tests/gpu/test_cuda_graph_gpu.py) run in their own processes; their kernels run in the CPU
emulator, so a host C++ compiler is needed (skipped without)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from cuda_graph_programs import PROGRAMS, WALKTHROUGH_DIR, check_output, run

import cunumpy as xp
from cunumpy.exceptions import GraphCaptureError
from cunumpy.kernel_testing import emulation_compiler

needs_emulator = pytest.mark.skipif(
    emulation_compiler() is None, reason="the emulated device needs a host C++ compiler"
)


@needs_emulator
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_graph_program_on_the_emulated_device(tmp_path, name):
    check_output(tmp_path, name, run(tmp_path, name, emulated=True))


def test_the_numpy_backend_has_nothing_to_capture():
    with xp.use_backend("numpy"):
        with pytest.raises(GraphCaptureError, match="NumPy backend"):
            xp.cuda.graph(lambda: None)


def test_a_graph_takes_a_callable():
    with pytest.raises(TypeError, match="callable"):
        xp.cuda.graph(42)


@needs_emulator
def test_the_walkthrough_runs_with_its_graph_flag(tmp_path):
    env = {**os.environ, "CUNUMPY_FAKE_CUPY": "1", "OMP_NUM_THREADS": "1"}
    env.pop("CUNUMPY_BACKEND", None)
    result = subprocess.run(
        [sys.executable, str(Path(WALKTHROUGH_DIR) / "walkthrough.py")]
        + ["--particles", "300", "--steps", "12", "--graph"]
        + ["--rtol", "1e-10", "--output", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=900,
        env=env,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    step4 = result.stdout.split("=== step 4: all ported, one CUDA graph per step")[1]
    assert "graph replays: 12 launch(es) ran 24 kernel(s)" in step4
    verdict = step4.split("step 4: largest relative difference to the host run")[1]
    assert "same physics" in verdict.splitlines()[0]
