// Syntax check of the headers together with cunumpy's CPU-emulator prelude (which check_headers.sh
// force-includes when crates/cunumpy-emu/prelude/cunumpy_emu.h exists): no clash with its
// built-ins, and the atomics accept the emulator's checked pointers (cunumpy_emu::ptr<T>).
#include <cunumpy/index.cuh>
#include <cunumpy/array_view.cuh>
#include <cunumpy/atomic.cuh>

__global__ void views(Array2D<double> a, CArray5D<float> c, Array16D<const int> d, long long n) {
  CUNUMPY_THREAD_1D(i, n);
  Array5D<float> s = c;
  a(i, 0) = s(0, 0, 0, 0, i) + c(0, 0, 0, 0, 0) + d(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
  CUNUMPY_GRID_STRIDE_1D(m, n) { a(0, m) = (double)a.size(); }
}

void checked_pointers(cunumpy_emu::ptr<double> d, cunumpy_emu::ptr<float> f, cunumpy_emu::ptr<int> i,
                      cunumpy_emu::ptr<unsigned> u, cunumpy_emu::ptr<unsigned long long> ull,
                      cunumpy_emu::ptr<long long> ll) {
  cunumpy_atomic_add(d, 1.0);
  cunumpy_atomic_add(f, 1.0f);
  cunumpy_atomic_add(i, 1);
  cunumpy_atomic_add(u, 1u);
  cunumpy_atomic_add(ull, 1ull);
  cunumpy_atomic_add(ll, -1LL);
  cunumpy_atomic_add_2d(d, 4, 1, 2, 1.0);
  cunumpy_atomic_add_2d(f, 4, 1, 2, 1.0f);
  cunumpy_atomic_add_3d(d, 4, 5, 1, 2, 3, 1);
  cunumpy_atomic_add_3d(ll, 4, 5, 1, 2, 3, 1);
}
