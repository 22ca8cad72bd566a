// cunumpy/atomic.cuh: one atomic-add name for every dtype a kernel accumulates into.
//
//   T cunumpy_atomic_add(T* p, T v)      atomically *p += v; returns the old value, for
//       double (atomicAdd; a compare-and-swap loop before sm_60), float, int, unsigned int,
//       unsigned long long, long long (through the unsigned 64-bit atomic: two's-complement
//       wrap-around, never undefined behaviour), and long / unsigned long (the 64-bit or 32-bit
//       atomic, whichever matches sizeof(long)).
//   T cunumpy_atomic_add_2d(T* data, n1, i, j, v)          data[i * n1 + j] += v
//   T cunumpy_atomic_add_3d(T* data, n1, n2, i, j, k, v)   data[(i * n1 + j) * n2 + k] += v
//       for C-contiguous arrays given as a bare pointer plus the trailing extents (n1 = shape[1],
//       n2 = shape[2]); indices and extents are long long. Overloads for each type above and a
//       template that forwards to any cunumpy_atomic_add overload (yours too, e.g. for __half).
//
// No standard header is needed: the file compiles with NVRTC, nvcc, hipcc and as host C++17
// (cunumpy's CPU emulator, whose prelude provides atomicAdd and atomicCAS).
#ifndef CUNUMPY_ATOMIC_CUH
#define CUNUMPY_ATOMIC_CUH

// __device__ __forceinline__ where those qualifiers exist, plain inline elsewhere.
#ifndef CUNUMPY_DEVICE_INLINE
#if defined(__CUDACC__) || defined(__HIPCC__) || (defined(__device__) && defined(__forceinline__))
#define CUNUMPY_DEVICE_INLINE __device__ __forceinline__
#else
#define CUNUMPY_DEVICE_INLINE inline
#endif
#endif

CUNUMPY_DEVICE_INLINE double cunumpy_atomic_add(double* p, double v) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 600
  // No native double atomicAdd before sm_60. Compare the bit patterns (not the values), so a NaN
  // in memory cannot make the loop spin forever.
  unsigned long long* bits = reinterpret_cast<unsigned long long*>(p);
  unsigned long long seen = *bits;
  unsigned long long expected;
  do {
    expected = seen;
    const double updated = __longlong_as_double(static_cast<long long>(expected)) + v;
    seen = atomicCAS(bits, expected, static_cast<unsigned long long>(__double_as_longlong(updated)));
  } while (seen != expected);
  return __longlong_as_double(static_cast<long long>(seen));
#else
  return atomicAdd(p, v);
#endif
}

CUNUMPY_DEVICE_INLINE float cunumpy_atomic_add(float* p, float v) { return atomicAdd(p, v); }

CUNUMPY_DEVICE_INLINE int cunumpy_atomic_add(int* p, int v) { return atomicAdd(p, v); }

CUNUMPY_DEVICE_INLINE unsigned int cunumpy_atomic_add(unsigned int* p, unsigned int v) {
  return atomicAdd(p, v);
}

CUNUMPY_DEVICE_INLINE unsigned long long cunumpy_atomic_add(unsigned long long* p,
                                                            unsigned long long v) {
  return atomicAdd(p, v);
}

// Signed 64-bit: CUDA has no signed 64-bit atomicAdd; two's-complement addition is the same bit
// operation as unsigned addition, so go through the unsigned one.
CUNUMPY_DEVICE_INLINE long long cunumpy_atomic_add(long long* p, long long v) {
  return static_cast<long long>(atomicAdd(reinterpret_cast<unsigned long long*>(p),
                                          static_cast<unsigned long long>(v)));
}

namespace cunumpy_detail {
// `long` is 64 bits on Linux (LP64) and 32 bits on Windows (LLP64): pick the atomic by size.
template <int Bytes>
struct long_atomic;
template <>
struct long_atomic<8> {
  static CUNUMPY_DEVICE_INLINE unsigned long long add(void* p, unsigned long long v) {
    return atomicAdd(static_cast<unsigned long long*>(p), v);
  }
};
template <>
struct long_atomic<4> {
  static CUNUMPY_DEVICE_INLINE unsigned int add(void* p, unsigned int v) {
    return atomicAdd(static_cast<unsigned int*>(p), v);
  }
};

template <class T>
struct identity {
  typedef T type;
};
}  // namespace cunumpy_detail

CUNUMPY_DEVICE_INLINE unsigned long cunumpy_atomic_add(unsigned long* p, unsigned long v) {
  return static_cast<unsigned long>(cunumpy_detail::long_atomic<sizeof(long)>::add(p, v));
}

CUNUMPY_DEVICE_INLINE long cunumpy_atomic_add(long* p, long v) {
  return static_cast<long>(
      cunumpy_detail::long_atomic<sizeof(long)>::add(p, static_cast<unsigned long>(v)));
}

// Row-major 2-D and 3-D arrays given as a bare pointer plus the trailing extents. The template
// takes the value type from the pointer only, so `cunumpy_atomic_add_2d(hist, n1, i, j, 1)` works
// on a double array.
template <class T>
CUNUMPY_DEVICE_INLINE T cunumpy_atomic_add_2d(T* data, long long n1, long long i, long long j,
                                              typename cunumpy_detail::identity<T>::type v) {
  return cunumpy_atomic_add(data + (i * n1 + j), v);
}

template <class T>
CUNUMPY_DEVICE_INLINE T cunumpy_atomic_add_3d(T* data, long long n1, long long n2, long long i,
                                              long long j, long long k,
                                              typename cunumpy_detail::identity<T>::type v) {
  return cunumpy_atomic_add(data + ((i * n1 + j) * n2 + k), v);
}

// Plain overloads for the built-in types: preferred over the template, and they also accept any
// argument that converts implicitly to T* (such as a checked pointer in cunumpy's emulator).
#define CUNUMPY_DETAIL_ATOMIC_ND(T)                                                                \
  CUNUMPY_DEVICE_INLINE T cunumpy_atomic_add_2d(T* data, long long n1, long long i, long long j,  \
                                                T v) {                                             \
    return cunumpy_atomic_add(data + (i * n1 + j), v);                                             \
  }                                                                                                \
  CUNUMPY_DEVICE_INLINE T cunumpy_atomic_add_3d(T* data, long long n1, long long n2, long long i, \
                                                long long j, long long k, T v) {                   \
    return cunumpy_atomic_add(data + ((i * n1 + j) * n2 + k), v);                                  \
  }
CUNUMPY_DETAIL_ATOMIC_ND(double)
CUNUMPY_DETAIL_ATOMIC_ND(float)
CUNUMPY_DETAIL_ATOMIC_ND(int)
CUNUMPY_DETAIL_ATOMIC_ND(unsigned int)
CUNUMPY_DETAIL_ATOMIC_ND(unsigned long long)
CUNUMPY_DETAIL_ATOMIC_ND(long long)
CUNUMPY_DETAIL_ATOMIC_ND(unsigned long)
CUNUMPY_DETAIL_ATOMIC_ND(long)
#undef CUNUMPY_DETAIL_ATOMIC_ND

#endif  // CUNUMPY_ATOMIC_CUH
