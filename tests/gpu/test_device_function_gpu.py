"""``device_function_kernel`` on the GPU: wrapped ``__device__`` functions against NumPy (the
same functions run on the emulated device in tests/cxx/test_device_function_cxx.py)."""

from __future__ import annotations

import numpy as np
import pytest
from kernel_fixtures import VEC2_HEADER

from cunumpy.arguments import CudaStruct
from cunumpy.kernel_testing import device_function_kernel

pytestmark = pytest.mark.gpu

SMOOTHSTEP = r"""
__device__ double smoothstep(double lo, double hi, double x) {
    double t = (x - lo) / (hi - lo);
    t = t < 0.0 ? 0.0 : (t > 1.0 ? 1.0 : t);
    return t * t * (3.0 - 2.0 * t);
}
"""
VEC = CudaStruct("Vec2", [("x", "double"), ("y", "double")])


def test_scalar_function_matches_numpy_elementwise():
    import cupy

    k = device_function_kernel(SMOOTHSTEP, "double smoothstep(double lo, double hi, double x)")
    rng = np.random.default_rng(0)
    n = 100_003  # several blocks and a partial one
    lo, hi = rng.uniform(-1, 0, n), rng.uniform(1, 2, n)
    x = rng.uniform(-2, 3, n)
    out = cupy.full(n + 1, -7.0)
    k(cupy.asarray(lo), cupy.asarray(hi), cupy.asarray(x), out, n, n_threads=n)
    t = np.clip((x - lo) / (hi - lo), 0.0, 1.0)
    host = out.get()
    np.testing.assert_allclose(host[:n], t * t * (3 - 2 * t), rtol=1e-13, atol=1e-15)
    assert host[n] == -7.0
    partial = cupy.zeros(n)
    k(cupy.asarray(lo), cupy.asarray(hi), cupy.asarray(x), partial, 1000, n_threads=n)
    np.testing.assert_array_equal(partial.get()[1000:], 0.0)


def test_struct_pointer_and_void_function_from_an_included_header(tmp_path):
    (tmp_path / "vec2.cuh").write_text(VEC2_HEADER)
    import cupy

    inc = {"includes": ["vec2.cuh"], "include_dirs": [str(tmp_path)], "structs": [VEC]}
    add = device_function_kernel("", "void add_scaled(const Vec2& v, double* acc, int k)", **inc)
    acc = cupy.ones(2 * 500)
    ks = np.arange(500, dtype=np.int32)
    add(VEC(x=0.5, y=-2.0), acc, cupy.asarray(ks), 500, n_threads=500)
    expected = np.ones((500, 2)) + np.outer(ks, [0.5, -2.0])
    np.testing.assert_array_equal(acc.get().reshape(500, 2), expected)

    sign = device_function_kernel(
        "", "int dot_sign(Vec2 v, float wx, float wy)", name="signs", out_param="s", **inc
    )
    rng = np.random.default_rng(1)
    wx = rng.normal(size=640).astype(np.float32)
    wy = rng.normal(size=640).astype(np.float32)
    s = cupy.zeros(640, dtype=np.int32)
    sign(VEC(x=1.5, y=-0.25), cupy.asarray(wx), cupy.asarray(wy), s, 640)
    want = np.where(1.5 * wx.astype(np.float64) - 0.25 * wy >= 0.0, 1, -1)
    np.testing.assert_array_equal(s.get(), want)
