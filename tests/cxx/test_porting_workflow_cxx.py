"""The porting workflow's device tests (tests/gpu/test_kernel_porting_device.py: conversions,
fallbacks, parity, the kernel profile and the five steps of the overview) on the emulated device
backend, so CI runs them without a GPU. One subprocess with ``CUNUMPY_FAKE_CUPY=1``: the fake
is installed by ``import cunumpy`` before anything imports CuPy, and never leaks into the other
tests of this process."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from cunumpy.kernel_testing import emulation_compiler

pytestmark = [
    pytest.mark.cxx,
    pytest.mark.skipif(emulation_compiler() is None, reason="needs a host C++ compiler"),
]

TESTS = Path(__file__).resolve().parents[1]
DEVICE_TESTS = TESTS / "gpu" / "test_kernel_porting_device.py"


def test_porting_workflow_device_tests_pass_on_the_emulated_device():
    env = {**os.environ, "CUNUMPY_FAKE_CUPY": "1", "OMP_NUM_THREADS": "1"}
    env.pop("CUNUMPY_BACKEND", None)
    # on the fake a skip is a failure: the device_backend fixture must find the emulated device
    env["CUNUMPY_REQUIRE_CUDA"] = "1"
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(DEVICE_TESTS)],
        cwd=TESTS.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    output = result.stdout[-6000:] + result.stderr[-3000:]
    assert result.returncode == 0, output
    assert "test_the_five_porting_steps" not in output  # not listed as failed or skipped
    summary = result.stdout.strip().splitlines()[-1]
    assert " passed" in summary and "skipped" not in summary and "failed" not in summary, output
