// Syntax check of the headers with NO standard header available (as under NVRTC):
// check_headers.sh compiles this with -nostdinc -nostdinc++ and the freestanding shim.
#include <cunumpy/index.cuh>
#include <cunumpy/array_view.cuh>
#include <cunumpy/atomic.cuh>
#include <cunumpy/index.cuh>  // include guards: a second inclusion is harmless
#include <cunumpy/array_view.cuh>
#include <cunumpy/atomic.cuh>

#ifdef CUNUMPY_TEST_NO_QUALIFIERS  // the headers fell back to plain `inline`
#define __global__
#endif

__global__ void views(Array1D<double> a, Array2D<float> b, Array5D<const int> c, Array16D<double> d,
                      CArray1D<double> e, CArray2D<long long> f, CArray5D<double> g,
                      CArray16D<const char> h, long long n) {
  CUNUMPY_THREAD_1D(i, n);
  a(i) = b(0, 1) + c(0, 0, 0, 0, 0) + d(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0) + e(i);
  f(0, 1) += a.size() + b.ndim + h(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
  Array5D<double> s = g;
  s(0, 0, 0, 0, 1) = g(0, 0, 0, 0, 0);
  Array16D<const char> t = h;
  (void)t;
}

__global__ void indices(double* out, long long ni, long long nj, long long nk) {
  CUNUMPY_THREAD_3D(i, j, k, ni, nj, nk);
  CUNUMPY_GRID_STRIDE_1D(m, ni) { out[m] = (double)(i + j + k); }
}

__global__ void other(double* out, long long ni, long long nj) {
  CUNUMPY_THREAD_2D(i, j, ni, nj);
  out[i * nj + j] = (double)CUNUMPY_GLOBAL_INDEX_Z();
}

__global__ void atomics(double* d, float* f, int* i, unsigned* u, unsigned long long* ull,
                        long long* ll, long* l, unsigned long* ul) {
  cunumpy_atomic_add(d, 1.0);
  cunumpy_atomic_add(f, 1.0f);
  cunumpy_atomic_add(i, 1);
  cunumpy_atomic_add(u, 1u);
  cunumpy_atomic_add(ull, 1ull);
  cunumpy_atomic_add(ll, 1LL);
  cunumpy_atomic_add(l, 1L);
  cunumpy_atomic_add(ul, 1UL);
  cunumpy_atomic_add_2d(d, 4, 1, 2, 1.0);
  cunumpy_atomic_add_2d(f, 4, 1, 2, 1.0f);
  cunumpy_atomic_add_3d(d, 4, 5, 1, 2, 3, 1);
  cunumpy_atomic_add_3d(i, 4, 5, 1, 2, 3, 1);
  cunumpy_atomic_add_3d(ll, 4, 5, 1, 2, 3, 1);
}
