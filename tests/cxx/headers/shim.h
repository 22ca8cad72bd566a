// Host stand-ins for the CUDA built-ins the shipped headers use, so that tests can compile them as
// plain C++17 with g++. With CUNUMPY_TEST_FREESTANDING no standard header is included at all (the
// situation under NVRTC); otherwise the stand-ins are real and count their calls.
#ifndef CUNUMPY_TEST_SHIM_H
#define CUNUMPY_TEST_SHIM_H

#ifndef CUNUMPY_TEST_NO_QUALIFIERS  // without them the headers fall back to plain `inline`
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#endif

#ifdef CUNUMPY_TEST_FREESTANDING
extern "C" int printf(const char* fmt, ...);
[[noreturn]] void __trap();
#else
#include <cstdio>
#include <cstdlib>
// A kernel trap: flush what printf wrote, then exit with a code the script recognises.
[[noreturn]] inline void __trap() {
  std::fflush(stdout);
  std::_Exit(42);
}
#endif

struct uint3 { unsigned x, y, z; };
struct dim3 { unsigned x, y, z; };
inline uint3 threadIdx = {0, 0, 0};
inline uint3 blockIdx = {0, 0, 0};
inline dim3 blockDim = {1, 1, 1};
inline dim3 gridDim = {1, 1, 1};

// Which stand-in ran last, and how many times each ran.
enum { SHIM_ADD_INT, SHIM_ADD_UINT, SHIM_ADD_ULL, SHIM_ADD_FLOAT, SHIM_ADD_DOUBLE, SHIM_CAS_ULL, SHIM_N };
inline int shim_calls[SHIM_N] = {};

// Exactly the overloads CUDA has (no signed 64-bit atomicAdd, no `long` one); single-threaded.
#define SHIM_ADD(T, K) \
  inline T atomicAdd(T* p, T v) { ++shim_calls[K]; T old = *p; *p = (T)(old + v); return old; }
SHIM_ADD(int, SHIM_ADD_INT)
SHIM_ADD(unsigned int, SHIM_ADD_UINT)
SHIM_ADD(unsigned long long, SHIM_ADD_ULL)
SHIM_ADD(float, SHIM_ADD_FLOAT)
SHIM_ADD(double, SHIM_ADD_DOUBLE)
#undef SHIM_ADD
// Set by a test to simulate another thread writing *p just before the next compare-and-swap.
inline void (*shim_cas_interference)(unsigned long long*) = nullptr;
inline unsigned long long atomicCAS(unsigned long long* p, unsigned long long cmp, unsigned long long v) {
  ++shim_calls[SHIM_CAS_ULL];
  if (shim_cas_interference) {
    void (*hook)(unsigned long long*) = shim_cas_interference;
    shim_cas_interference = nullptr;
    hook(p);
  }
  unsigned long long old = *p;
  if (old == cmp) *p = v;
  return old;
}
inline long long __double_as_longlong(double x) { long long r; __builtin_memcpy(&r, &x, 8); return r; }
inline double __longlong_as_double(long long x) { double r; __builtin_memcpy(&r, &x, 8); return r; }

#endif  // CUNUMPY_TEST_SHIM_H
