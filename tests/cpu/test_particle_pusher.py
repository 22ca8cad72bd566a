"""The particle pusher walk-through runs end to end on NumPy and writes its plot."""

import json
import subprocess
import sys
from pathlib import Path

WALKTHROUGH = Path(__file__).resolve().parents[2] / "examples/particle_pusher/walkthrough.py"


def test_walkthrough_on_numpy(tmp_path):
    result = subprocess.run(
        [
            sys.executable,
            str(WALKTHROUGH),
            "--particles",
            "500",
            "--steps",
            "20",
            "--output",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env={**__import__("os").environ, "CUNUMPY_BACKEND": "numpy"},
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    out = result.stdout
    assert "CUDA kernels: 0 of 3 (missing: boris_push, deposit_charge, gather_field)" in out
    assert "CUDA kernels: 3 of 3" in out
    assert "assert_no_transfers() around a time step: passed" in out
    for step in ("step1", "step2", "step3", "step4"):
        trace = json.loads((tmp_path / f"trace_{step}.json").read_text())["traceEvents"]
        assert {e["name"] for e in trace if e["ph"] == "X"} == {
            "gather_field",
            "boris_push",
            "deposit_charge",
        }
        assert (tmp_path / f"profile_{step}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    png = tmp_path / "particles_numpy.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
