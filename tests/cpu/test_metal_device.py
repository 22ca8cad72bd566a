"""``MetalKernel`` on a real Metal device through MLX: runs on an Apple silicon Mac with MLX,
skipped everywhere else (no Apple hardware was available to this project's CI). The same
kernels run on the emulated Metal device in tests/cxx/test_metal_kernel_cxx.py."""

import numpy as np
import pytest

import cunumpy as xp
from cunumpy.kernels import MetalKernel


def _metal():
    try:
        import mlx.core as mx
    except ImportError:
        return False
    return bool(mx.metal.is_available())


pytestmark = pytest.mark.skipif(not _metal(), reason="needs MLX and a Metal GPU (Apple silicon)")


@pytest.fixture(autouse=True)
def real_metal(monkeypatch):
    monkeypatch.delenv("CUNUMPY_FAKE_METAL", raising=False)


def test_elementwise_on_the_metal_gpu_counts_one_copy_per_array():
    k = MetalKernel(
        "uint i = thread_position_in_grid.x; y[i] = a[0] * metal::exp(x[i]);",
        inputs=["x", "a"],
        outputs=["y"],
        name="metal_scale_exp",
    )
    x = np.linspace(0, 1, 1000, dtype=np.float32)
    y = np.empty_like(x)
    with xp.profiling.count_transfers() as c:
        k(x, 3.0, out=y)
    np.testing.assert_allclose(y, 3 * np.exp(x), rtol=1e-5)
    assert c.to_device == 2 and c.to_host == 1


def test_threadgroup_reduction_and_atomic_histogram_on_the_metal_gpu():
    reduce = MetalKernel(
        """
        threadgroup float partial[256];
        uint l = thread_position_in_threadgroup.x;
        partial[l] = x[thread_position_in_grid.x];
        threadgroup_barrier(mem_flags::mem_threadgroup);
        for (uint s = 128; s > 0; s >>= 1) {
            if (l < s) partial[l] += partial[l + s];
            threadgroup_barrier(mem_flags::mem_threadgroup);
        }
        if (l == 0) out[threadgroup_position_in_grid.x] = partial[0];
        """,
        inputs=["x"],
        outputs=["out"],
        name="metal_tg_reduce",
    )
    x = np.arange(256 * 4, dtype=np.float32) % 5
    out = np.empty(4, np.float32)
    reduce(x, out=out, n_threads=x.size)
    np.testing.assert_array_equal(out, x.reshape(4, 256).sum(axis=1))
    hist = MetalKernel(
        "atomic_fetch_add_explicit(&h[v[thread_position_in_grid.x]], 1, memory_order_relaxed);",
        inputs=["v"],
        outputs=["h"],
        atomic_outputs=True,
        init_value=0,
        name="metal_hist",
    )
    v = (np.arange(3000) * 7919 % 16).astype(np.int32)
    h = np.empty(16, np.int32)
    hist(v, out=h, n_threads=v.size)
    np.testing.assert_array_equal(h, np.bincount(v, minlength=16))
