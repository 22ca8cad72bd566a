// cunumpy/array_view.cuh: N-dimensional array views passed BY VALUE to CUDA kernels.
//
// The layout is exactly what cunumpy's argument packer writes for a view parameter:
//
//   ArrayND<T>   { T* data; long long shape[N]; long long strides[N]; }   8 * (1 + 2N) bytes
//   CArrayND<T>  { T* data; long long shape[N]; }                         8 * (1 + N) bytes
//
// for N = 1..16 (Array1D..Array16D, CArray1D..CArray16D, in the global namespace; all are aliases
// of cunumpy_detail::ArrayView<T, N> and cunumpy_detail::CArrayView<T, N>). ArrayND strides are
// counted in ELEMENTS, not bytes, and may be negative or zero (reversed or broadcast arrays).
// CArrayND is C-contiguous (row-major) and converts implicitly to ArrayND.
//
//   __global__ void k(Array2D<double> a, CArray1D<const float> b) { ... a(i, j) = b(j); }
//
// `v(i, j, ...)` takes exactly N integer indices and returns T&. The view is a shallow handle, like
// a pointer: a const view still gives write access to the data (use ArrayND<const T> for
// read-only data). `v.size()` is the number of elements, `v.ndim` is N.
//
// Compile with -DCUNUMPY_BOUNDS_CHECK (cunumpy's debug mode does) to check every index: an index
// outside [0, shape[d]) prints
//   cunumpy: index <i> is out of bounds for axis <d> with size <n>
// and traps (__trap(); __builtin_trap() on HIP).
//
// No standard header is needed: the file compiles with NVRTC, nvcc, hipcc and as host C++17
// (cunumpy's CPU emulator, whose prelude provides __host__/__device__/__forceinline__, __trap and
// printf).
#ifndef CUNUMPY_ARRAY_VIEW_CUH
#define CUNUMPY_ARRAY_VIEW_CUH

#if defined(CUNUMPY_BOUNDS_CHECK) && !defined(__CUDACC_RTC__) && !defined(__HIPCC_RTC__) && \
    (defined(__CUDACC__) || defined(__HIPCC__))
#include <stdio.h>  // printf for the host pass of nvcc / hipcc; NVRTC has it built in
#endif

// __host__ __device__ __forceinline__ where those qualifiers exist, plain inline elsewhere.
#ifndef CUNUMPY_HD_INLINE
#if defined(__CUDACC__) || defined(__HIPCC__) || \
    (defined(__host__) && defined(__device__) && defined(__forceinline__))
#define CUNUMPY_HD_INLINE __host__ __device__ __forceinline__
#else
#define CUNUMPY_HD_INLINE inline
#endif
#endif

// Stops the kernel after a failed check. In device code this is the hardware trap; in the host
// pass of nvcc/hipcc (never run for kernels) the compiler's trap; in plain host C++ the __trap()
// that cunumpy's emulator prelude defines.
#ifndef CUNUMPY_DETAIL_TRAP
#if defined(__CUDA_ARCH__)
#define CUNUMPY_DETAIL_TRAP() __trap()
#elif defined(__HIP_DEVICE_COMPILE__) || defined(__HIPCC__) || defined(__CUDACC__)
#define CUNUMPY_DETAIL_TRAP() __builtin_trap()
#else
#define CUNUMPY_DETAIL_TRAP() __trap()
#endif
#endif

#if defined(__CUDACC__) || defined(__HIPCC__)
#define CUNUMPY_DETAIL_UNROLL _Pragma("unroll")
#else
#define CUNUMPY_DETAIL_UNROLL
#endif

namespace cunumpy_detail {

#ifdef CUNUMPY_BOUNDS_CHECK
// One unsigned comparison covers both i < 0 and i >= size.
CUNUMPY_HD_INLINE void check_index(long long i, int axis, long long size) {
  if ((unsigned long long)i >= (unsigned long long)size) {
    printf("cunumpy: index %lld is out of bounds for axis %d with size %lld\n", i, axis, size);
    CUNUMPY_DETAIL_TRAP();
  }
}
#define CUNUMPY_DETAIL_CHECK_INDEX(i, axis, size) ::cunumpy_detail::check_index((i), (axis), (size))
#else
#define CUNUMPY_DETAIL_CHECK_INDEX(i, axis, size) ((void)0)
#endif

// Strided view: element (i0, ..., iN-1) is data[i0 * strides[0] + ... + iN-1 * strides[N-1]].
template <class T, int N>
struct ArrayView {
  static_assert(N >= 1 && N <= 16, "cunumpy array views have 1 to 16 dimensions");

  T* data;
  long long shape[N];
  long long strides[N];  // in elements; may be negative or zero

  typedef T value_type;
  static constexpr int ndim = N;

  // Offset, in elements, of the element at the given indices (checked under CUNUMPY_BOUNDS_CHECK).
  template <class... I>
  CUNUMPY_HD_INLINE long long offset(I... idx) const {
    static_assert(sizeof...(I) == N, "an ArrayND<T> view takes exactly N indices");
    const long long ix[N] = {static_cast<long long>(idx)...};
    long long off = 0;
    CUNUMPY_DETAIL_UNROLL
    for (int d = 0; d < N; ++d) {
      CUNUMPY_DETAIL_CHECK_INDEX(ix[d], d, shape[d]);
      off += ix[d] * strides[d];
    }
    return off;
  }

  template <class... I>
  CUNUMPY_HD_INLINE T& operator()(I... idx) { return data[offset(idx...)]; }
  template <class... I>
  CUNUMPY_HD_INLINE T& operator()(I... idx) const { return data[offset(idx...)]; }

  // Number of elements (the product of the shape).
  CUNUMPY_HD_INLINE long long size() const {
    long long n = 1;
    CUNUMPY_DETAIL_UNROLL
    for (int d = 0; d < N; ++d) n *= shape[d];
    return n;
  }
};

// C-contiguous (row-major) view: the last index varies fastest.
template <class T, int N>
struct CArrayView {
  static_assert(N >= 1 && N <= 16, "cunumpy array views have 1 to 16 dimensions");

  T* data;
  long long shape[N];

  typedef T value_type;
  static constexpr int ndim = N;

  template <class... I>
  CUNUMPY_HD_INLINE long long offset(I... idx) const {
    static_assert(sizeof...(I) == N, "a CArrayND<T> view takes exactly N indices");
    const long long ix[N] = {static_cast<long long>(idx)...};
    long long off = 0;
    CUNUMPY_DETAIL_UNROLL
    for (int d = 0; d < N; ++d) {
      CUNUMPY_DETAIL_CHECK_INDEX(ix[d], d, shape[d]);
      off = off * shape[d] + ix[d];
    }
    return off;
  }

  template <class... I>
  CUNUMPY_HD_INLINE T& operator()(I... idx) { return data[offset(idx...)]; }
  template <class... I>
  CUNUMPY_HD_INLINE T& operator()(I... idx) const { return data[offset(idx...)]; }

  CUNUMPY_HD_INLINE long long size() const {
    long long n = 1;
    CUNUMPY_DETAIL_UNROLL
    for (int d = 0; d < N; ++d) n *= shape[d];
    return n;
  }

  // The same elements as a strided view (row-major strides, in elements).
  CUNUMPY_HD_INLINE operator ArrayView<T, N>() const {
    ArrayView<T, N> v;
    v.data = data;
    long long s = 1;
    CUNUMPY_DETAIL_UNROLL
    for (int d = N - 1; d >= 0; --d) {
      v.shape[d] = shape[d];
      v.strides[d] = s;
      s *= shape[d];
    }
    return v;
  }
};

}  // namespace cunumpy_detail

// The names kernels use.
template <class T> using Array1D = cunumpy_detail::ArrayView<T, 1>;
template <class T> using Array2D = cunumpy_detail::ArrayView<T, 2>;
template <class T> using Array3D = cunumpy_detail::ArrayView<T, 3>;
template <class T> using Array4D = cunumpy_detail::ArrayView<T, 4>;
template <class T> using Array5D = cunumpy_detail::ArrayView<T, 5>;
template <class T> using Array6D = cunumpy_detail::ArrayView<T, 6>;
template <class T> using Array7D = cunumpy_detail::ArrayView<T, 7>;
template <class T> using Array8D = cunumpy_detail::ArrayView<T, 8>;
template <class T> using Array9D = cunumpy_detail::ArrayView<T, 9>;
template <class T> using Array10D = cunumpy_detail::ArrayView<T, 10>;
template <class T> using Array11D = cunumpy_detail::ArrayView<T, 11>;
template <class T> using Array12D = cunumpy_detail::ArrayView<T, 12>;
template <class T> using Array13D = cunumpy_detail::ArrayView<T, 13>;
template <class T> using Array14D = cunumpy_detail::ArrayView<T, 14>;
template <class T> using Array15D = cunumpy_detail::ArrayView<T, 15>;
template <class T> using Array16D = cunumpy_detail::ArrayView<T, 16>;

template <class T> using CArray1D = cunumpy_detail::CArrayView<T, 1>;
template <class T> using CArray2D = cunumpy_detail::CArrayView<T, 2>;
template <class T> using CArray3D = cunumpy_detail::CArrayView<T, 3>;
template <class T> using CArray4D = cunumpy_detail::CArrayView<T, 4>;
template <class T> using CArray5D = cunumpy_detail::CArrayView<T, 5>;
template <class T> using CArray6D = cunumpy_detail::CArrayView<T, 6>;
template <class T> using CArray7D = cunumpy_detail::CArrayView<T, 7>;
template <class T> using CArray8D = cunumpy_detail::CArrayView<T, 8>;
template <class T> using CArray9D = cunumpy_detail::CArrayView<T, 9>;
template <class T> using CArray10D = cunumpy_detail::CArrayView<T, 10>;
template <class T> using CArray11D = cunumpy_detail::CArrayView<T, 11>;
template <class T> using CArray12D = cunumpy_detail::CArrayView<T, 12>;
template <class T> using CArray13D = cunumpy_detail::CArrayView<T, 13>;
template <class T> using CArray14D = cunumpy_detail::CArrayView<T, 14>;
template <class T> using CArray15D = cunumpy_detail::CArrayView<T, 15>;
template <class T> using CArray16D = cunumpy_detail::CArrayView<T, 16>;

// The packer writes these layouts; any change here breaks every kernel that takes a view.
#define CUNUMPY_DETAIL_CHECK_LAYOUT(N)                                                         \
  static_assert(sizeof(Array##N##D<double>) == 8 * (1 + 2 * N),                                \
                "Array" #N "D<T> must be {T* data; long long shape[" #N "]; long long strides[" #N "];}"); \
  static_assert(alignof(Array##N##D<double>) == 8, "Array" #N "D<T> must be 8-byte aligned");  \
  static_assert(sizeof(CArray##N##D<double>) == 8 * (1 + N),                                   \
                "CArray" #N "D<T> must be {T* data; long long shape[" #N "];}");               \
  static_assert(alignof(CArray##N##D<double>) == 8, "CArray" #N "D<T> must be 8-byte aligned")
CUNUMPY_DETAIL_CHECK_LAYOUT(1);
CUNUMPY_DETAIL_CHECK_LAYOUT(2);
CUNUMPY_DETAIL_CHECK_LAYOUT(3);
CUNUMPY_DETAIL_CHECK_LAYOUT(4);
CUNUMPY_DETAIL_CHECK_LAYOUT(5);
CUNUMPY_DETAIL_CHECK_LAYOUT(6);
CUNUMPY_DETAIL_CHECK_LAYOUT(7);
CUNUMPY_DETAIL_CHECK_LAYOUT(8);
CUNUMPY_DETAIL_CHECK_LAYOUT(9);
CUNUMPY_DETAIL_CHECK_LAYOUT(10);
CUNUMPY_DETAIL_CHECK_LAYOUT(11);
CUNUMPY_DETAIL_CHECK_LAYOUT(12);
CUNUMPY_DETAIL_CHECK_LAYOUT(13);
CUNUMPY_DETAIL_CHECK_LAYOUT(14);
CUNUMPY_DETAIL_CHECK_LAYOUT(15);
CUNUMPY_DETAIL_CHECK_LAYOUT(16);
#undef CUNUMPY_DETAIL_CHECK_LAYOUT

#endif  // CUNUMPY_ARRAY_VIEW_CUH
