"""The struct, DeviceMirror, reduce.cuh and random.cuh device tests (tests/gpu/
test_structs_gpu.py) on the emulated device backend, so CI runs them without a GPU: block and
warp reductions against NumPy and Philox uniforms bit-identical to xp.rng, run by the emulator."""

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


def test_struct_and_header_device_tests_pass_on_the_emulated_device():
    env = {**os.environ, "CUNUMPY_FAKE_CUPY": "1", "CUNUMPY_REQUIRE_CUDA": "1"}
    env.pop("CUNUMPY_BACKEND", None)
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         str(TESTS / "gpu" / "test_structs_gpu.py")],
        cwd=TESTS.parent, env=env, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    output = result.stdout[-6000:] + result.stderr[-3000:]
    assert result.returncode == 0, output
    assert "14 passed" in output
