"""random.cuh on the emulated device (CUDA C run on the CPU by the host C++ compiler) gives
cunumpy 0.7.1's values bit for bit: tests/data/rng_draw.cu launched here against what the same
kernel gave under 0.7.1's emulator (tests/data/rng_0.7.1.json)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

import cunumpy as xp
from cunumpy.kernel_testing import emulate_cuda_kernel, emulation_compiler
from cunumpy.kernels import CudaKernel

pytestmark = [
    pytest.mark.cxx,
    pytest.mark.skipif(emulation_compiler() is None, reason="needs a host C++ compiler"),
]

DATA = Path(__file__).resolve().parents[1] / "data"
REF = json.loads((DATA / "rng_0.7.1.json").read_text())
COLUMNS = [
    "uniform2_u0",
    "uniform2_u1",
    "normal2_z0",
    "normal2_z1",
    "uniform",
    "normal",
    "u64_to_uniform_w2w3",
    "u64_to_uniform_w1w0",
]


def bits(hexes: list[str]) -> np.ndarray:
    return np.array([int(h, 16) for h in hexes], dtype=np.uint64)


def test_every_device_form_equals_0_7_1_bit_for_bit():
    s, t, c = (
        np.array([int(v) for v in REF[k]], dtype=np.uint64) for k in ("seed", "stream", "counter")
    )
    out = np.zeros((len(s), len(COLUMNS)))
    kernel = CudaKernel((DATA / "rng_draw.cu").read_text(), "draw")
    emulate_cuda_kernel(kernel, s, t, c, out, len(s), n_threads=len(s))
    for j, name in enumerate(COLUMNS):
        np.testing.assert_array_equal(
            out[:, j].view(np.uint64), bits(REF["emulated_device"][name]), err_msg=name
        )
    # the device uniforms are the host ones too (normals: up to the last bit of libm)
    u0, u1 = xp.rng.philox_uniform2(s, t, c)
    np.testing.assert_array_equal(out[:, 0], u0)
    np.testing.assert_array_equal(out[:, 1], u1)
    z0, z1 = xp.rng.philox_normal2(s, t, c)
    np.testing.assert_allclose(out[:, 2], z0, rtol=1e-15, atol=1e-15)
    np.testing.assert_allclose(out[:, 3], z1, rtol=1e-15, atol=1e-15)


ONE_RESULT = r"""
#include <cunumpy/random.cuh>
extern "C" __global__ void second(double* u1, double* z1, unsigned long long seed, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i >= n) return;
  u1[i] = cunumpy_uniform2(seed, (unsigned long long)i, 5ull);
  z1[i] = cunumpy_normal2(seed, (unsigned long long)i, 5ull);
}
"""


def test_the_one_result_forms_are_the_second_values():
    n = 300
    u1, z1 = np.zeros(n), np.zeros(n)
    emulate_cuda_kernel(CudaKernel(ONE_RESULT, "second"), u1, z1, 99, n, n_threads=n)
    want_u1 = xp.rng.philox_uniform2(99, np.arange(n, dtype=np.uint64), 5)[1]
    np.testing.assert_array_equal(u1, want_u1)
    np.testing.assert_allclose(
        z1, xp.rng.philox_normal2(99, np.arange(n), 5)[1], rtol=1e-15, atol=1e-15
    )


def test_the_guide_kernel_draws_the_host_numbers():
    guide = Path(__file__).resolve().parents[2] / "docs" / "random-numbers.md"
    (source,) = re.findall(r"```cuda\n(.*?)```", guide.read_text(), flags=re.S)
    n, seed, step = 500, 1234, 3
    v = np.zeros(n)
    emulate_cuda_kernel(CudaKernel(source, "thermalize"), v, n, seed, step, 2.0, n_threads=n)
    z0, _ = xp.rng.philox_normal2(seed, np.arange(n, dtype=np.uint64), step)
    np.testing.assert_allclose(v, 2.0 * z0, rtol=1e-15, atol=1e-15)
