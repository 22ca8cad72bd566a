"""The walk-through on the emulated device (CUDA kernels run in the CPU emulator): the five
steps with their fallbacks, copies and launches, and the same physics as the host run."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

WALKTHROUGH = Path(__file__).resolve().parents[2] / "examples/particle_pusher/walkthrough.py"


@pytest.mark.cxx
@pytest.mark.skipif(
    shutil.which("c++") is None and shutil.which("g++") is None, reason="needs a C++ compiler"
)
def test_walkthrough_on_the_emulated_device(tmp_path):
    env = {**os.environ, "CUNUMPY_FAKE_CUPY": "1"}
    env.pop("CUNUMPY_BACKEND", None)
    result = subprocess.run(
        [
            sys.executable,
            str(WALKTHROUGH),
            "--particles",
            "500",
            "--steps",
            "20",
            "--rtol",
            "1e-12",
            "--output",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=900,
        env=env,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    out = result.stdout
    assert "=== step 2: device backend, host fallbacks (cupy backend) ===" in out
    assert "still falling back to the host: " in out
    assert "kernel_conversion" in out and "fallback (1)" in out
    assert "step 4: largest relative difference to the host run" in out
    assert "0 transfer(s) through cunumpy" in out.split("=== step 4")[1]
    assert "assert_no_transfers() around a time step: passed" in out
    assert "missing_cuda='raise' refuses an unported kernel" in out
    assert (tmp_path / "particles_cupy.png").is_file()
    schema = json.loads((Path(__file__).parents[1] / "data/trace_event_schema.json").read_text())
    for step in ("step2", "step4"):  # fallbacks with their copies, then launches only
        jsonschema.validate(json.loads((tmp_path / f"trace_{step}.json").read_text()), schema)
    trace = json.loads((tmp_path / "trace_step4.json").read_text())["traceEvents"]
    calls = {e["name"] for e in trace if e["ph"] == "X" and e["cat"] == "kernel.cuda"}
    assert calls == {"gather_field", "boris_push", "deposit_charge"}
    assert (tmp_path / "profile_step2.png").read_bytes()[:4] == b"\x89PNG"
