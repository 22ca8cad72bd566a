// Host C++17 checks of the shipped headers index.cuh, array_view.cuh and atomic.cuh, compiled
// with the stand-ins of shim.h. Run by check_headers.sh; prints each failure, exits 1 if any.
#include "shim.h"
#include <cunumpy/index.cuh>
#include <cunumpy/array_view.cuh>
#include <cunumpy/atomic.cuh>

#include <climits>
#include <cstddef>
#include <cstdio>
#include <cstring>

static int failures = 0;
#define CHECK(cond)                                                   \
  do {                                                                \
    if (!(cond)) {                                                    \
      std::printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);     \
      ++failures;                                                     \
    }                                                                 \
  } while (0)

// ------------------------------------------------------------------ layout
static_assert(Array1D<double>::ndim == 1 && Array16D<char>::ndim == 16, "ndim");
static_assert(CArray5D<int>::ndim == 5, "ndim");

template <int N>
static void check_layout() {
  using A = cunumpy_detail::ArrayView<float, N>;
  using C = cunumpy_detail::CArrayView<const char, N>;
  CHECK(sizeof(A) == 8 * (1 + 2 * N) && alignof(A) == 8);
  CHECK(sizeof(C) == 8 * (1 + N) && alignof(C) == 8);
  CHECK(offsetof(A, data) == 0 && offsetof(A, shape) == 8 && offsetof(A, strides) == 8 + 8 * N);
  CHECK(offsetof(C, data) == 0 && offsetof(C, shape) == 8);
}

// What the Rust packer does: write the pointer, then the shape, then the strides (in elements),
// as consecutive 8-byte words, and hand the bytes to the kernel.
template <class View>
static View packed(void* data, const long long* shape, const long long* strides, int n) {
  unsigned char bytes[8 * 33];
  long long words[33];
  words[0] = (long long)(std::ptrdiff_t)data;
  for (int d = 0; d < n; ++d) words[1 + d] = shape[d];
  if (strides)
    for (int d = 0; d < n; ++d) words[1 + n + d] = strides[d];
  std::memcpy(bytes, words, sizeof(View));
  View v;
  std::memcpy(&v, bytes, sizeof(View));
  return v;
}

static double buf[4096];
static double* const mid = buf + 2048;  // room on both sides for negative strides

static long long at(const double* p) { return (long long)(p - mid); }

static void check_array_indexing() {
  // 1-D, reversed (numpy a[::-1] of 7 elements: data points at the last one, stride -1).
  {
    long long shape[] = {7}, strides[] = {-1};
    Array1D<double> a = packed<Array1D<double>>(mid + 6, shape, strides, 1);
    for (int i = 0; i < 7; ++i) CHECK(at(&a(i)) == 6 - i);
    CHECK(a.size() == 7);
  }
  // 2-D: a transposed, column-reversed C array of shape (5, 3): strides (1, -5) in elements.
  {
    long long shape[] = {5, 3}, strides[] = {1, -5};
    Array2D<double> a = packed<Array2D<double>>(mid + 10, shape, strides, 2);
    for (int i = 0; i < 5; ++i)
      for (int j = 0; j < 3; ++j) CHECK(at(&a(i, j)) == 10 + i - 5 * j);
    CHECK(a.size() == 15);
    // writes land where they should; a const view still writes (shallow, like a pointer)
    const Array2D<double> c = a;
    c(4, 2) = 42.0;
    CHECK(mid[10 + 4 - 10] == 42.0);
    CHECK(a(4, 2) == 42.0);
    // index types: int, unsigned, long long, size_t, char all work
    CHECK(&a(2u, (long long)1) == &a((std::size_t)2, (char)1));
  }
  // 5-D with a broadcast (stride 0) axis and negative strides.
  {
    long long shape[] = {2, 3, 4, 1, 5}, strides[] = {-60, 20, 0, 7, -1};
    Array5D<double> a = packed<Array5D<double>>(mid + 100, shape, strides, 5);
    int bad = 0;
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 3; ++j)
        for (int k = 0; k < 4; ++k)
          for (int m = 0; m < 5; ++m)
            bad += at(&a(i, j, k, 0, m)) != 100 - 60 * i + 20 * j - m;
    CHECK(bad == 0);
    CHECK(a.size() == 120);
  }
  // 16-D: every axis of size 2, strides +-2^(d/2), some negative.
  {
    char* const base = (char*)mid;
    long long shape[16], strides[16];
    for (int d = 0; d < 16; ++d) {
      shape[d] = 2;
      strides[d] = (d % 3 == 1 ? -1 : 1) * (1LL << (d / 2));  // some negative, some repeated
    }
    Array16D<char> a = packed<Array16D<char>>(base, shape, strides, 16);
    CHECK(a.size() == 65536);
    CHECK((long long)(&a(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0) - base) == 0);
    long long expect = 0;
    for (int d = 0; d < 16; d += 2) expect += strides[d];
    CHECK((long long)(&a(1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0) - base) == expect);
    CHECK((long long)(&a(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1) - base) == strides[15]);
    CHECK((long long)(&a(0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0) - base) == -1);
  }
}

// A function taking a strided view, to check that a C view converts implicitly.
static long long offset_of_last(Array5D<double> a) {
  return at(&a(a.shape[0] - 1, a.shape[1] - 1, a.shape[2] - 1, a.shape[3] - 1, a.shape[4] - 1));
}

static void check_carray_indexing() {
  {
    long long shape[] = {9};
    CArray1D<double> c = packed<CArray1D<double>>(mid, shape, nullptr, 1);
    for (int i = 0; i < 9; ++i) CHECK(at(&c(i)) == i);
    Array1D<double> a = c;
    CHECK(a.shape[0] == 9 && a.strides[0] == 1 && a.data == mid);
  }
  {
    long long shape[] = {4, 6};
    CArray2D<double> c = packed<CArray2D<double>>(mid, shape, nullptr, 2);
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 6; ++j) CHECK(at(&c(i, j)) == 6 * i + j);
    CHECK(c.size() == 24);
    Array2D<double> a = c;
    CHECK(a.strides[0] == 6 && a.strides[1] == 1 && a.shape[0] == 4 && a.shape[1] == 6);
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 6; ++j) CHECK(&a(i, j) == &c(i, j));
  }
  {
    long long shape[] = {2, 3, 4, 5, 6};
    CArray5D<double> c = packed<CArray5D<double>>(mid, shape, nullptr, 5);
    CHECK(c.size() == 720);
    CHECK(at(&c(1, 2, 3, 4, 5)) == 719);
    CHECK(at(&c(1, 0, 2, 0, 3)) == 360 + 2 * 30 + 3);
    Array5D<double> a = c;
    const long long want[] = {360, 120, 30, 6, 1};
    for (int d = 0; d < 5; ++d) CHECK(a.strides[d] == want[d] && a.shape[d] == shape[d]);
    CHECK(offset_of_last(c) == 719);  // implicit conversion at a call
  }
  {
    long long shape[16];
    for (int d = 0; d < 16; ++d) shape[d] = d % 4 == 0 ? 2 : 1;  // 2 at axes 0, 4, 8, 12
    CArray16D<const char> c = packed<CArray16D<const char>>(buf, shape, nullptr, 16);
    CHECK(c.size() == 16);
    CHECK(&c(1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0) - (const char*)buf == 8);
    CHECK(&c(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0) - (const char*)buf == 1);
    CHECK(&c(1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0) - (const char*)buf == 15);
    Array16D<const char> a = c;
    CHECK(a.strides[0] == 8 && a.strides[4] == 4 && a.strides[8] == 2 && a.strides[12] == 1);
    CHECK(&a(0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0) == &c(0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0));
  }
}

// ------------------------------------------------------------------ index.cuh
static long long got_i, got_j, got_k;
static int visited[64], n_visited;

static void kernel_1d(long long n) {
  got_i = -1;
  CUNUMPY_THREAD_1D(i, n);
  got_i = i;
}
static void kernel_2d(int ni, int nj) {
  got_i = got_j = -1;
  CUNUMPY_THREAD_2D(i, j, ni, nj)  // no semicolon: allowed
  got_i = i;
  got_j = j;
}
static void kernel_3d(unsigned ni, long long nj, std::size_t nk) {
  got_i = got_j = got_k = -1;
  CUNUMPY_THREAD_3D(i, j, k, ni, nj, nk);
  got_i = i;
  got_j = j;
  got_k = k;
}
static void kernel_stride(long long n) {
  CUNUMPY_GRID_STRIDE_1D(i, n) { visited[n_visited++] = (int)i; }
}

static void set_thread(unsigned tx, unsigned ty, unsigned tz, unsigned bx, unsigned by, unsigned bz) {
  threadIdx = {tx, ty, tz};
  blockIdx = {bx, by, bz};
}

static void check_index_macros() {
  blockDim = {256, 4, 2};
  gridDim = {10, 10, 10};
  set_thread(5, 1, 1, 3, 2, 7);
  CHECK(CUNUMPY_GLOBAL_INDEX_X() == 3 * 256 + 5);
  CHECK(CUNUMPY_GLOBAL_INDEX_Y() == 2 * 4 + 1);
  CHECK(CUNUMPY_GLOBAL_INDEX_Z() == 7 * 2 + 1);
  kernel_1d(774);
  CHECK(got_i == 773);
  kernel_1d(773);
  CHECK(got_i == -1);
  kernel_1d(0);
  CHECK(got_i == -1);
  kernel_2d(774, 10);
  CHECK(got_i == 773 && got_j == 9);
  kernel_2d(774, 9);
  CHECK(got_i == -1 && got_j == -1);
  kernel_2d(773, 10);
  CHECK(got_i == -1 && got_j == -1);
  kernel_3d(774u, 10, 16);
  CHECK(got_i == 773 && got_j == 9 && got_k == 15);
  kernel_3d(774u, 10, 15);
  CHECK(got_k == -1);
  kernel_3d(773u, 10, 16);
  CHECK(got_i == -1);
  // no 32-bit overflow: block 2^31 - 1 of 1024 threads
  blockDim = {1024, 1, 1};
  set_thread(1023, 0, 0, 2147483647u, 0, 0);
  CHECK(CUNUMPY_GLOBAL_INDEX_X() == 2147483647LL * 1024 + 1023);
  kernel_1d(1LL << 42);
  CHECK(got_i == 2147483647LL * 1024 + 1023);
  // grid-stride: 2 blocks of 4 threads over 20 elements; thread 1 of block 0 does 1, 9, 17
  blockDim = {4, 1, 1};
  gridDim = {2, 1, 1};
  set_thread(1, 0, 0, 0, 0, 0);
  n_visited = 0;
  kernel_stride(20);
  CHECK(n_visited == 3 && visited[0] == 1 && visited[1] == 9 && visited[2] == 17);
  // every element visited exactly once over the whole grid
  int count[20] = {};
  for (unsigned b = 0; b < 2; ++b)
    for (unsigned t = 0; t < 4; ++t) {
      set_thread(t, 0, 0, b, 0, 0);
      n_visited = 0;
      kernel_stride(20);
      for (int v = 0; v < n_visited; ++v) ++count[visited[v]];
    }
  int ok = 1;
  for (int e = 0; e < 20; ++e) ok &= count[e] == 1;
  CHECK(ok);
  n_visited = 0;
  kernel_stride(0);
  CHECK(n_visited == 0);
}

// ------------------------------------------------------------------ atomic.cuh
struct Fixed { int raw; };  // a user type with its own atomic add, reached by the templates
inline Fixed cunumpy_atomic_add(Fixed* p, Fixed v) {
  Fixed old = *p;
  p->raw += v.raw;
  return old;
}

static void reset_calls() {
  for (int k = 0; k < SHIM_N; ++k) shim_calls[k] = 0;
}

static void check_atomics() {
  reset_calls();
  double d = 1.5;
  CHECK(cunumpy_atomic_add(&d, 2.25) == 1.5 && d == 3.75);
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 600
  CHECK(shim_calls[SHIM_ADD_DOUBLE] == 0 && shim_calls[SHIM_CAS_ULL] == 1);  // the CAS loop
  // another thread adds 10 between our read and our CAS: the loop retries on the new value
  shim_cas_interference = [](unsigned long long* p) {
    double x;
    std::memcpy(&x, p, 8);
    x += 10.0;
    std::memcpy(p, &x, 8);
  };
  reset_calls();
  CHECK(cunumpy_atomic_add(&d, 0.25) == 13.75 && d == 14.0);
  CHECK(shim_calls[SHIM_CAS_ULL] == 2 && shim_cas_interference == nullptr);
  d = 3.75;
#else
  CHECK(shim_calls[SHIM_ADD_DOUBLE] == 1 && shim_calls[SHIM_CAS_ULL] == 0);
#endif
  CHECK(cunumpy_atomic_add(&d, 1) == 3.75 && d == 4.75);  // an int value into a double
  float f = 0.5f;
  CHECK(cunumpy_atomic_add(&f, 0.25f) == 0.5f && f == 0.75f);
  int i = -3;
  CHECK(cunumpy_atomic_add(&i, 5) == -3 && i == 2);
  unsigned u = 4000000000u;
  CHECK(cunumpy_atomic_add(&u, 500000000u) == 4000000000u && u == 205032704u);  // wraps mod 2^32
  unsigned long long ull = 7;
  CHECK(cunumpy_atomic_add(&ull, 8ull) == 7 && ull == 15);

  reset_calls();
  long long ll = LLONG_MAX;
  CHECK(cunumpy_atomic_add(&ll, 1LL) == LLONG_MAX && ll == LLONG_MIN);  // wrap-around
  CHECK(cunumpy_atomic_add(&ll, -1) == LLONG_MIN && ll == LLONG_MAX);
  ll = -10;
  CHECK(cunumpy_atomic_add(&ll, -5) == -10 && ll == -15);
  CHECK(shim_calls[SHIM_ADD_ULL] == 3);  // through the unsigned 64-bit atomic

  long l = -2;
  CHECK(cunumpy_atomic_add(&l, 7L) == -2 && l == 5);
  unsigned long ul = 1;
  CHECK(cunumpy_atomic_add(&ul, 2ul) == 1 && ul == 3);

  // 2-D and 3-D, C-contiguous: shape (3, 4) and (2, 3, 5)
  double h2[12] = {};
  CHECK(cunumpy_atomic_add_2d(h2, 4, 2, 1, 1.0) == 0.0);
  CHECK(cunumpy_atomic_add_2d(h2, 4, 2, 1, 1) == 1.0);  // int value into a double array
  CHECK(h2[9] == 2.0);
  float h2f[12] = {};
  cunumpy_atomic_add_2d(h2f, 4LL, 1LL, 3LL, 0.5f);
  CHECK(h2f[7] == 0.5f);
  int h3[30] = {};
  cunumpy_atomic_add_3d(h3, 3, 5, 1, 2, 4, 9);
  CHECK(h3[29] == 9);
  cunumpy_atomic_add_3d(h3, 3, 5, 0, 1, 2, 3);
  CHECK(h3[7] == 3);
  double h3d[30] = {};
  CHECK(cunumpy_atomic_add_3d(h3d, 3, 5, 1, 0, 0, 2.5) == 0.0 && h3d[15] == 2.5);
  long long h3ll[30] = {};
  cunumpy_atomic_add_3d(h3ll, 3, 5, 1, 1, 1, -4);
  CHECK(h3ll[21] == -4);
  unsigned long long h2u[12] = {};
  cunumpy_atomic_add_2d(h2u, 4, 1, 1, 5);
  CHECK(h2u[5] == 5);
  // the templates forward to a user's overload
  Fixed fx[6] = {};
  CHECK(cunumpy_atomic_add_2d(fx, 3, 1, 2, Fixed{4}).raw == 0 && fx[5].raw == 4);
  Fixed fy[24] = {};
  cunumpy_atomic_add_3d(fy, 3, 4, 1, 2, 3, Fixed{6});
  CHECK(fy[23].raw == 6);
}

int main() {
  check_layout<1>();
  check_layout<2>();
  check_layout<5>();
  check_layout<16>();
  check_array_indexing();
  check_carray_indexing();
  check_index_macros();
  check_atomics();
  if (failures) {
    std::printf("%d check(s) failed\n", failures);
    return 1;
  }
  std::printf("all header checks passed\n");
  return 0;
}
