"""The command line on the GPU machine: ``info`` sees the device with its limits, NVRTC and the
driver; ``check`` compiles with NVRTC (the lead reads what ``scripts/gpu-check`` saved of both
in $OUT: cunumpy-info.txt/json, cunumpy-check.txt)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[2]


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cunumpy", *args], capture_output=True, text=True, timeout=600
    )


def test_info_reports_the_device_nvrtc_and_driver():
    import cupy

    result = cli("info", "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["cupy"]["available"] is True
    assert report["versions"]["cupy"] == cupy.__version__ or any(
        report["versions"][k] == cupy.__version__ for k in ("cupy-cuda12x", "cupy-cuda13x")
    )
    assert report["cuda"]["driver"]["device_count"] == cupy.cuda.runtime.getDeviceCount()
    props = cupy.cuda.runtime.getDeviceProperties(0)
    device = report["devices"][0]
    assert device["maxThreadsPerBlock"] == props["maxThreadsPerBlock"]
    assert device["major"] * 10 + device["minor"] in report["cuda"]["nvrtc"]["supported_archs"]


def test_check_compiles_with_nvrtc(tmp_path):
    good = ROOT / "tests/kernel_pkg/axpy/axpy_cuda.cu"
    result = cli("check", str(good), "--json")
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(result.stdout)
    assert report["compiler"] == "nvrtc"
    assert all(k["compiled"] == "nvrtc" for f in report["files"] for k in f["kernels"])
    bad = tmp_path / "bad.cu"
    bad.write_text('extern "C" __global__ void k(double* y) { y[0] = nope; }\n')
    failed = cli("check", str(bad))
    assert failed.returncode == 1 and "nope" in failed.stdout
