// Single-thread stand-ins for the warp and block primitives reduce.cuh uses, on top of the
// header shim (tests/cxx/headers/shim.h): enough to type-check the headers as host C++17.
#ifndef CUNUMPY_TEST_SHIM_WARP_H
#define CUNUMPY_TEST_SHIM_WARP_H
#include "../headers/shim.h"
#ifndef __shared__
#define __shared__ static
#endif
template <typename T>
inline T __shfl_down_sync(unsigned, T v, int) { return v; }
template <typename T>
inline T __shfl_sync(unsigned, T v, int) { return v; }
inline void __syncthreads() {}
#endif
