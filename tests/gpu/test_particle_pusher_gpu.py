"""The walk-through on the H200: same physics as the host run within 1e-6."""

import importlib.util
import json
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
    trace = json.loads((tmp_path / "trace_step4.json").read_text())["traceEvents"]
    # step 4 launches on the GPU: the trace has the device process with its launches
    device = [e for e in trace if e["ph"] == "X" and e["cat"] == "kernel.device"]
    assert {e["name"] for e in device} >= {"gather_field", "boris_push", "deposit_charge"}
    assert all(e["dur"] > 0 for e in device)
    if importlib.util.find_spec("matplotlib") is not None:
        assert (tmp_path / "particles_cupy.png").is_file()
        assert (tmp_path / "profile_step4.png").is_file()


def step_reports(stdout: str) -> list[str]:
    """The 'transfers of one time step' report of each step of the walk-through."""
    reports = []
    for section in stdout.split("transfers of one time step:\n")[1:]:
        reports.append(section.split("kernel profile:")[0].strip())
    return reports


def test_transfer_reports_match_the_emulated_device(tmp_path):
    """The same program (Kernels with and without CUDA versions) on the emulated device and on
    the GPU reports the same transfers, step by step."""
    args = [sys.executable, str(WALKTHROUGH), "--particles", "800", "--steps", "12"]
    base = {k: v for k, v in os.environ.items() if k not in {"CUNUMPY_BACKEND"}}
    gpu = subprocess.run(
        [*args, "--output", str(tmp_path / "gpu")],
        capture_output=True,
        text=True,
        timeout=900,
        env={**base, "CUNUMPY_BACKEND": "cupy"},
    )
    fake = subprocess.run(
        [*args, "--output", str(tmp_path / "fake")],
        capture_output=True,
        text=True,
        timeout=900,
        env={**base, "CUNUMPY_FAKE_CUPY": "1"},
    )
    assert gpu.returncode == 0, gpu.stderr[-3000:]
    assert fake.returncode == 0, fake.stderr[-3000:]
    gpu_reports, fake_reports = step_reports(gpu.stdout), step_reports(fake.stdout)
    assert len(gpu_reports) == 4
    assert gpu_reports == fake_reports
    assert "fallback (2)" in gpu_reports[1]  # step 2: gather and push fall back
