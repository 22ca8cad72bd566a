"""MLX-style Metal kernels on the emulated Metal device (``CUNUMPY_FAKE_METAL=1``), against
NumPy: elementwise, 2-D with shapes and strides, a threadgroup-memory reduction with barriers,
a ``simd_sum`` reduction, an atomic histogram, a template parameter, a 2-D grid; the copies
``count_transfers`` records; out-of-bounds accesses and races reported as the CUDA emulator
reports them (needs a host C++ compiler, no Mac)."""

import numpy as np
import pytest

import cunumpy as xp
from cunumpy.exceptions import EmulatedOutOfBoundsError
from cunumpy.kernel_testing import emulate_metal_kernel, emulation_compiler
from cunumpy.kernels import MetalKernel, metal_available

pytestmark = [
    pytest.mark.cxx,
    pytest.mark.skipif(emulation_compiler() is None, reason="needs a host C++ compiler"),
]


@pytest.fixture(autouse=True)
def fake_metal(monkeypatch):
    monkeypatch.setenv("CUNUMPY_FAKE_METAL", "1")


RNG = np.random.default_rng(20)


def test_fake_metal_makes_metal_available(monkeypatch):
    assert metal_available()
    monkeypatch.setenv("CUNUMPY_FAKE_METAL", "0")
    try:
        import mlx.core as mx

        assert metal_available() == bool(mx.metal.is_available())
    except ImportError:
        assert not metal_available()


def test_elementwise_with_metal_math_and_python_scalars():
    k = MetalKernel(
        """
        uint i = thread_position_in_grid.x;
        if (i < n[0]) y[i] = a[0] * metal::exp(x[i]) + metal::precise::sqrt(x[i]);
        """,
        inputs=["x", "a", "n"],
        outputs=["y"],
        name="axpexp",
    )
    x = RNG.random(1000, dtype=np.float32)
    y = np.zeros(1000, np.float32)
    with xp.profiling.count_transfers() as c:
        r = k(x, 2.5, 1000, out=y, n_threads=1024)
    assert r is y
    np.testing.assert_allclose(y, 2.5 * np.exp(x) + np.sqrt(x), rtol=2e-6)
    assert c.to_device == 3 and c.to_host == 1


def test_two_d_input_with_shape_and_strides():
    # Each thread sums one row of a 2-D input, reading its shape and strides.
    k = MetalKernel(
        """
        uint r = thread_position_in_grid.x;
        if (r >= (uint)m_shape[0]) return;
        float s = 0.0f;
        for (int c = 0; c < m_shape[1]; c++) s += m[r * m_strides[0] + c * m_strides[1]];
        out[r] = s + (float)m_ndim;
        """,
        inputs=["m"],
        outputs=["out"],
        name="rowsum",
    )
    m = RNG.random((37, 11), dtype=np.float32)
    out = np.empty(37, np.float32)
    # a non-contiguous input: the copy to the device makes it row-contiguous
    k(np.asfortranarray(m), out=out, n_threads=37)
    np.testing.assert_allclose(out, m.sum(axis=1) + 2, rtol=1e-5)


REDUCE = """
    threadgroup float partial[256];
    uint l = thread_position_in_threadgroup.x;
    uint i = thread_position_in_grid.x;
    partial[l] = x[i];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (uint s = threads_per_threadgroup.x / 2; s > 0; s >>= 1) {
        if (l < s && l + s < threads_per_threadgroup.x) partial[l] += partial[l + s];
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    if (l == 0) out[threadgroup_position_in_grid.x] = partial[0];
"""


def test_threadgroup_memory_reduction_with_barriers():
    k = MetalKernel(REDUCE, inputs=["x"], outputs=["out"], threadgroup=256, name="tg_reduce")
    x = RNG.integers(0, 10, 256 * 8).astype(np.float32)
    out = np.empty(8, np.float32)
    k(x, out=out, n_threads=x.size)
    np.testing.assert_array_equal(out, x.reshape(8, 256).sum(axis=1))


def test_simd_sum_reduction_with_a_partial_last_threadgroup():
    k = MetalKernel(
        """
        float v = simd_sum(x[thread_position_in_grid.x]);
        if (simd_is_first()) atomic_fetch_add_explicit(&total[0], v, memory_order_relaxed);
        """,
        inputs=["x"],
        outputs=["total"],
        atomic_outputs=True,
        init_value=0.0,
        threadgroup=128,
        name="simd_total",
    )
    x = RNG.integers(-5, 6, 1000).astype(np.float32)  # exact in float32 in any order
    total = np.empty(1, np.float32)
    k(x, out=total, n_threads=x.size)
    assert total[0] == x.sum()


def test_atomic_histogram_with_atomic_int_outputs():
    k = MetalKernel(
        """
        uint i = thread_position_in_grid.x;
        atomic_fetch_add_explicit(&hist[v[i]], 1, memory_order_relaxed);
        """,
        inputs=["v"],
        outputs=["hist"],
        atomic_outputs=True,
        init_value=0,
        name="histogram",
    )
    v = RNG.integers(0, 16, 5000).astype(np.int32)
    hist = np.empty(16, np.int32)
    k(v, out=hist, n_threads=v.size)
    np.testing.assert_array_equal(hist, np.bincount(v, minlength=16))


def test_template_parameters_type_int_and_bool():
    k = MetalKernel(
        """
        uint i = thread_position_in_grid.x;
        T acc = 0;
        for (int s = 0; s < STEPS; s++) acc += (T)x[i];
        y[i] = NEGATE ? -acc : acc;
        """,
        inputs=["x"],
        outputs=["y"],
        name="repeat_add",
    )
    x = np.arange(64, dtype=np.int32)
    y = np.empty(64, np.int32)
    k(x, out=y, template={"T": np.int32, "STEPS": 3, "NEGATE": True})
    np.testing.assert_array_equal(y, -3 * x)
    k(x, out=y, template={"T": np.int32, "STEPS": 5, "NEGATE": False})
    np.testing.assert_array_equal(y, 5 * x)


def test_two_d_grid_transpose_with_two_outputs_and_float16():
    k = MetalKernel(
        """
        uint2 p = uint2(thread_position_in_grid.x, thread_position_in_grid.y);
        uint rows = a_shape[0], cols = a_shape[1];
        t[p.x * rows + p.y] = a[p.y * cols + p.x];
        h[p.y * cols + p.x] = (half)a[p.y * cols + p.x];
        """,
        inputs=["a"],
        outputs=["t", "h"],
        threadgroup=(8, 8),
        name="transpose2d",
    )
    a = RNG.random((19, 23), dtype=np.float32)
    t = np.empty((23, 19), np.float32)
    h = np.empty((19, 23), np.float16)
    res = k(a, out=(t, h), n_threads=(23, 19))
    assert res == (t, h)
    np.testing.assert_array_equal(t, a.T)
    np.testing.assert_array_equal(h, a.astype(np.float16))


def test_float64_cast_is_counted():
    k = MetalKernel(
        "uint i = thread_position_in_grid.x; y[i] = 2.0f * x[i];",
        inputs=["x"],
        outputs=["y"],
        float64="cast",
        name="double_it",
    )
    x = np.linspace(0, 1, 50)
    y = np.empty(50)
    with xp.profiling.count_transfers() as c:
        k(x, out=y)
    np.testing.assert_allclose(y, 2 * x.astype(np.float32), rtol=1e-7)
    assert c.kernel_conversions == 2 and c.to_device == 1 and c.to_host == 1


def test_out_of_bounds_is_reported_with_kernel_argument_and_index():
    k = MetalKernel(
        "uint i = thread_position_in_grid.x; y[i + 1] = x[i];",
        inputs=["x"],
        outputs=["y"],
        name="shift",
    )
    y = np.zeros(8, np.float32)
    with pytest.raises(EmulatedOutOfBoundsError, match=r"'y'.*index 8"):
        k(np.ones(8, np.float32), out=y)
    assert not y.any()  # a faulted call copies nothing back


def test_race_is_exposed_by_shuffled_thread_order():
    racy = MetalKernel(
        "uint i = thread_position_in_grid.x; y[0] = y[0] + x[i];",
        inputs=["x"],
        outputs=["y"],
        init_value=0.0,
        threadgroup=64,
        name="racy_sum",
    )
    x = np.ones(64, np.float32)
    results = set()
    for seed in range(6):
        y = np.empty(1, np.float32)
        emulate_metal_kernel(racy, x, out=y, n_threads=64, shuffle_seed=seed)
        results.add(float(y[0]))
    assert min(results) < 64.0  # lost updates under some thread orders
    y = np.empty(1, np.float32)
    racy(x, out=y, n_threads=64)  # the plain emulated call runs the threads in order
    assert y[0] == 64.0


PAIR = r"""
import sys
sys.path.insert(0, {tests!r})
import numpy as np
import cunumpy as xp
from cunumpy.kernels import KernelCatalog, set_device_kernel_implementation
from cunumpy.profiling import kernel_profile
from cunumpy.kernel_testing import check_parity

catalog = KernelCatalog.from_package("metal_kernel_pkg")
k = catalog["saxpy"]
assert k.implementations == ("python", "cuda", "metal"), k.implementations
print("SUMMARY", catalog.summary())
host = check_parity(k)  # host against CUDA (emulated device) and Metal (emulated Metal device)
assert host["argument 3"].any()
set_device_kernel_implementation("metal")
xp.set_backend("numpy")  # the Metal version runs for calls on the host side (the NumPy backend)
try:
    x = np.arange(1000, dtype=np.float32)
    out = np.zeros(1000, np.float32)
    with kernel_profile() as prof, xp.profiling.count_transfers() as c:
        k(2.0, x, x, out, 1000, n_threads=1000)
    np.testing.assert_array_equal(out, 3 * x)
    print("PATHS", sorted({{s.path for s in prof.stats()}}), c.to_device, c.to_host)
finally:
    set_device_kernel_implementation(None)
"""


def test_kernel_with_host_cuda_and_metal_versions_passes_parity_for_all_three():
    from pathlib import Path

    from cunumpy.kernel_testing import run_in_fake_cupy_subprocess

    tests = str(Path(__file__).resolve().parents[1])
    done = run_in_fake_cupy_subprocess(
        PAIR.format(tests=tests), env={"CUNUMPY_FAKE_METAL": "1"}, timeout=900
    )
    out = done.stdout
    assert "SUMMARY CUDA kernels: 1 of 1; Metal kernels: 1 of 1" in out, out
    assert "PATHS ['metal'] 4 1" in out, out
