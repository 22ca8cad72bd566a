"""Struct layouts and values on the device, DeviceMirror accumulation, reduce.cuh and random.cuh
on the GPU (against NumPy and the host twins)."""

from __future__ import annotations

import numpy as np
import pytest

import cunumpy as xp
from cunumpy.arguments import CudaStruct, CudaStructArguments
from cunumpy.kernels import CudaKernel
from cunumpy.memory import DeviceMirror
from cunumpy.profiling import count_transfers

pytestmark = pytest.mark.gpu

COMPLEX = "template <typename T> struct alignas(2 * sizeof(T)) complex { T re, im; };\n"


@pytest.fixture(scope="module")
def cp():
    import cupy

    return cupy


def struct_set() -> list[CudaStruct]:
    char_double = CudaStruct("CharDouble", [("c", "char"), ("d", "double"), ("s", "short")])
    with_complex = CudaStruct(
        "WithComplex",
        [("n", "int"), ("z", "complex<double>"), ("b", "bool"), ("w", "complex<float>")],
    )
    views = CudaStruct(
        "Views", [("flag", "bool"), ("a", "Array2D<double>"), ("c", "CArray3D<float>")]
    )
    arrays = CudaStruct(
        "Arrays",
        [("c", "char"), ("pos[3]", "float"), ("m", "double[2][3]"), ("p", "void*"),
         ("zs[2]", "complex<double>"), ("last", "signed char")],
    )  # fmt: skip
    nested = CudaStruct(
        "Nested",
        [("c", "char"), ("inner", with_complex), ("cd[2]", char_double), ("v", views),
         ("n", "unsigned short")],
    )  # fmt: skip
    return [char_double, with_complex, views, arrays, nested]


@pytest.mark.parametrize("index", range(5))
def test_verify_layout_on_the_device(cp, index: int) -> None:
    s = struct_set()[index]
    got = s.verify_layout()
    assert got == s.expected_layout()
    if s.name == "WithComplex":
        assert got["z"] == 16 and got["sizeof"] == 48


def test_verify_layout_reports_a_mismatch(cp, tmp_path) -> None:
    s = CudaStruct("M", [("n", "int"), ("z", "complex<double>")])
    # A complex type aligned like NumPy's complex128 (8): the device offset differs.
    header = tmp_path / "m.cuh"
    header.write_text("template <typename T> struct complex { T re, im; };\n" + s.declaration)
    with pytest.raises(ValueError, match="z: computed 16, device 8"):
        s.verify_layout(str(header.name), include_dirs=[tmp_path])


KERNEL = (
    COMPLEX
    + r"""
#include <cunumpy/array_view.cuh>
struct Inner { char tag; complex<double> z; };
struct Bag { int n; Inner inner; Array2D<double> a; CArray1D<double> out; float w[3]; };
__global__ void read_bag(Bag b) {
    b.out(0) = b.n;
    b.out(1) = b.inner.tag;
    b.out(2) = b.inner.z.re;
    b.out(3) = b.inner.z.im;
    b.out(4) = b.a(1, 2);
    b.out(5) = b.a.shape[0] * 10 + b.a.shape[1];
    b.out(6) = b.w[0] + b.w[1] + b.w[2];
}
"""
)


def test_struct_with_views_and_complex_double_by_value(cp) -> None:
    inner = CudaStruct("Inner", [("tag", "char"), ("z", "complex<double>")])
    bag = CudaStruct(
        "Bag",
        [("n", "int"), ("inner", inner), ("a", "Array2D<double>"), ("out", "CArray1D<double>"),
         ("w[3]", "float")],
    )  # fmt: skip
    base = cp.arange(40.0).reshape(5, 8)
    a = base[1:4, ::2]  # strided view
    out = cp.zeros(7)
    value = bag(n=7, inner={"tag": 3, "z": 1.5 - 2.5j}, a=a, out=out, w=[1.0, 2.0, 4.5])
    kernel = CudaKernel(KERNEL, "read_bag", structs=[bag], block_size=1)
    kernel(value, n_threads=1)
    expected = [7, 3, 1.5, -2.5, float(a[1, 2].get()), 34, 7.5]
    np.testing.assert_array_equal(out.get(), expected)

    class BagArgs(CudaStructArguments):
        struct_name = "Bag"
        fields = (
            ("n", "int"), ("inner", inner), ("a", "Array2D<double>"),
            ("out", "CArray1D<double>"), ("w[3]", "float"),
        )  # fmt: skip

    args = BagArgs()
    args.n, args.inner, args.a, args.out, args.w = 1, inner(tag=0, z=0j), a, out, [0.0] * 3
    kernel(args, n_threads=1)
    assert out.get()[0] == 1
    args.n = 9  # repacked automatically
    kernel(args, n_threads=1)
    assert out.get()[0] == 9


DEPOSIT = r"""
#include <cunumpy/atomic.cuh>
__global__ void deposit(const double* x, const double* q, double* rho, int n, int cells) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int c = (int)x[i];
    if (c >= 0 && c < cells) cunumpy_atomic_add(&rho[c], q[i]);
}
"""


def test_device_mirror_accumulation_keeps_the_host_object(cp) -> None:
    with xp.use_backend("cupy"):

        class Owner:
            def __init__(self) -> None:
                self.rho = np.full(16, -1.0)

        owner = Owner()
        rho_object = owner.rho
        mirror = DeviceMirror(owner.rho)
        gen = np.random.default_rng(3)
        x_host = gen.uniform(0, 16, 10_000)
        q_host = gen.uniform(0.5, 1.5, 10_000)
        x, q = cp.asarray(x_host), cp.asarray(q_host)
        kernel = CudaKernel(DEPOSIT, "deposit")
        with count_transfers() as counter:
            mirror.zero()
            kernel(x, q, mirror.device, x.size, 16, n_threads=x.size)
            mirror.to_host()
        assert owner.rho is rho_object
        expected = np.bincount(x_host.astype(int), weights=q_host, minlength=16)
        np.testing.assert_allclose(owner.rho, expected, rtol=1e-12)
        assert counter.count("to_host") == 1
        assert counter.count("to_device") == 0
        with count_transfers() as counter:
            mirror.to_device()
        assert counter.count("to_device") == 1
        owner.rho.resize(32, refcheck=False)
        with pytest.raises(ValueError, match="reallocated"):
            mirror.to_host()


REDUCE = r"""
#include <cunumpy/reduce.cuh>
__global__ void block_reduce(const double* x, double* sums, double* mins, double* maxs,
                             double* total, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    double v = i < n ? x[i] : 0.0;
    double s = cunumpy_block_sum(v);
    double lo = cunumpy_block_min(i < n ? v : 1e300);
    double hi = cunumpy_block_max(i < n ? v : -1e300);
    if (threadIdx.x == 0) { sums[blockIdx.x] = s; mins[blockIdx.x] = lo; maxs[blockIdx.x] = hi; }
    cunumpy_block_sum_to(total, v);
}
__global__ void warp_sums(const int* x, int* full, int* odd) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int s = cunumpy_warp_sum(x[i]);
    if ((threadIdx.x & 31) == 0) full[i / 32] = s;
    if (threadIdx.x & 1) {
        int t = cunumpy_warp_sum(x[i], 0xAAAAAAAAu);
        if ((threadIdx.x & 31) == 1) odd[i / 32] = t;
    }
}
"""


@pytest.mark.parametrize("block", [32, 100, 256, 1024])
def test_block_reductions_against_numpy(cp, block: int) -> None:
    n = 5000
    x_host = np.random.default_rng(block).standard_normal(n)
    x = cp.asarray(x_host)
    blocks = (n + block - 1) // block
    sums, mins, maxs = cp.zeros(blocks), cp.zeros(blocks), cp.zeros(blocks)
    total = cp.zeros(1)
    kernel = CudaKernel(REDUCE, "block_reduce", block_size=block)
    kernel(x, sums, mins, maxs, total, n, n_threads=blocks * block)
    padded = np.concatenate([x_host, np.full(blocks * block - n, np.nan)]).reshape(blocks, block)
    np.testing.assert_allclose(sums.get(), np.nansum(padded, axis=1), rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(mins.get(), np.nanmin(padded, axis=1))
    np.testing.assert_array_equal(maxs.get(), np.nanmax(padded, axis=1))
    np.testing.assert_allclose(total.get()[0], x_host.sum(), rtol=1e-10)


def test_warp_sums_with_full_and_sparse_masks(cp) -> None:
    x_host = np.arange(256, dtype=np.int32)
    full, odd = cp.zeros(8, dtype=np.int32), cp.zeros(8, dtype=np.int32)
    CudaKernel(REDUCE, "warp_sums", block_size=128)(cp.asarray(x_host), full, odd, n_threads=256)
    warps = x_host.reshape(8, 32)
    np.testing.assert_array_equal(full.get(), warps.sum(axis=1))
    np.testing.assert_array_equal(odd.get(), warps[:, 1::2].sum(axis=1))


RANDOM = r"""
#include <cunumpy/random.cuh>
__global__ void draw(double* u, double* u2, unsigned long long seed, long long n) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i >= n) return;
    u[i] = cunumpy_uniform(seed, (unsigned long long)i, 17ull);
    u2[i] = cunumpy_uniform2(seed, (unsigned long long)i, 17ull);
}
"""


def test_random_uniforms_bit_identical_to_the_host(cp) -> None:
    n = 100_000
    u, u2 = cp.zeros(n), cp.zeros(n)
    seed = 0xDEADBEEF12345678
    CudaKernel(RANDOM, "draw")(u, u2, seed, n, n_threads=n)
    streams = np.arange(n, dtype=np.uint64)
    np.testing.assert_array_equal(u.get(), xp.rng.philox_uniform(seed, streams, 17))
    np.testing.assert_array_equal(u2.get(), xp.rng.philox_uniform2(seed, streams, 17)[1])
