"""The shipped headers on the GPU: views of 1, 2 and 5 dimensions, atomics, index macros,
and debug mode turning an out-of-bounds view index into a clear error."""

import subprocess
import sys
import textwrap

import numpy as np
import pytest

from cunumpy.kernels import CudaKernel

pytestmark = pytest.mark.gpu

VIEWS = r"""
#include <cunumpy/index.cuh>
#include <cunumpy/array_view.cuh>
extern "C" __global__ void fill_linear(Array1D<double> a, Array2D<double> b, Array5D<double> c,
                                       CArray2D<float> d) {
  CUNUMPY_GRID_STRIDE_1D(t, a.size()) { a(t) = (double)t; }
  CUNUMPY_GRID_STRIDE_1D(t, b.size()) { b(t / b.shape[1], t % b.shape[1]) = (double)t; }
  CUNUMPY_GRID_STRIDE_1D(t, c.size()) {
    long long r = t, ix[5];
    for (int q = 4; q >= 0; --q) { ix[q] = r % c.shape[q]; r /= c.shape[q]; }
    c(ix[0], ix[1], ix[2], ix[3], ix[4]) = (double)t;
  }
  Array2D<float> v = d;
  CUNUMPY_GRID_STRIDE_1D(t, d.size()) { v(t / d.shape[1], t % d.shape[1]) = (float)t; }
}
"""


def test_views_of_1_2_and_5_dimensions_with_strides(cp):
    kernel = CudaKernel(VIEWS, "fill_linear", block_size=32)
    a = cp.zeros(9)[::-1]
    b = cp.zeros((6, 4)).T
    c = cp.zeros((3, 4, 2, 10, 6))[:, ::-1, :, ::2, :]
    d = cp.zeros((5, 7), cp.float32)
    kernel(a, b, c, d, n_threads=64)
    for x in (a, b, c, d):
        np.testing.assert_array_equal(x.get(), np.arange(x.size).reshape(x.shape))


HIST = r"""
#include <cunumpy/index.cuh>
#include <cunumpy/atomic.cuh>
extern "C" __global__ void histogram(const int* bins, long long n, double* hd, int* hi,
                                     unsigned long long* hu, long long* hll, double* h2) {
  CUNUMPY_GRID_STRIDE_1D(t, n) {
    int b = bins[t];
    cunumpy_atomic_add(hd + b, 1.0);
    cunumpy_atomic_add(hi + b, 1);
    cunumpy_atomic_add(hu + b, 1ull);
    cunumpy_atomic_add(hll + b, -1LL);
    cunumpy_atomic_add_2d(h2, 2, b, t & 1, 1.0);
  }
}
"""


def test_atomic_histogram(cp):
    kernel = CudaKernel(HIST, "histogram")
    bins = cp.random.randint(0, 16, 100_000, dtype=cp.int32)
    hd, hi = cp.zeros(16), cp.zeros(16, cp.int32)
    hu, hll = cp.zeros(16, cp.uint64), cp.zeros(16, cp.int64)
    h2 = cp.zeros((16, 2))
    kernel(bins, bins.size, hd, hi, hu, hll, h2, n_threads=4096)
    counts = np.bincount(bins.get(), minlength=16)
    for h in (hd, hi, hu):
        np.testing.assert_array_equal(h.get(), counts)
    np.testing.assert_array_equal(hll.get(), -counts)
    expected = np.zeros((16, 2))
    np.add.at(expected, (bins.get(), np.arange(bins.size) & 1), 1.0)
    np.testing.assert_array_equal(h2.get(), expected)


INDEX = r"""
#include <cunumpy/index.cuh>
extern "C" __global__ void idx2(long long* out, long long ni, long long nj) {
  CUNUMPY_THREAD_2D(i, j, ni, nj);
  out[i * nj + j] = i * 1000 + j;
}
"""


def test_index_macros_stop_out_of_range_threads(cp):
    kernel = CudaKernel(INDEX, "idx2", block_size=(8, 8))
    out = cp.full(13 * 7 + 64, -1, dtype=cp.int64)
    kernel(out, 13, 7, n_threads=(13, 7))
    i, j = np.meshgrid(np.arange(13), np.arange(7), indexing="ij")
    np.testing.assert_array_equal(out.get()[: 13 * 7], (i * 1000 + j).ravel())
    assert (out.get()[13 * 7 :] == -1).all()


OOB_SCRIPT = textwrap.dedent(
    r"""
    import cupy
    from cunumpy.kernels import CudaKernel
    src = '''#include <cunumpy/array_view.cuh>
    extern "C" __global__ void oob(Array2D<double> a) { a(0, a.shape[1]) = 1.0; }'''
    k = CudaKernel(src, "oob", debug=True)
    k(cupy.zeros((4, 4)), n_threads=1)
    """
)


def test_debug_mode_turns_an_out_of_bounds_view_index_into_an_error():
    # A trap leaves the CUDA context unusable, so it runs in its own process.
    result = subprocess.run(
        [sys.executable, "-c", OOB_SCRIPT], capture_output=True, text=True, timeout=300
    )
    assert result.returncode != 0
    assert "cunumpy: index 4 is out of bounds for axis 1 with size 4" in result.stdout
    assert "CUDA error after launching kernel 'oob'" in result.stderr
    assert "grid [1, 1, 1] and block [128, 1, 1]" in result.stderr


@pytest.fixture(scope="module")
def cp():
    import cupy

    return cupy
