// cunumpy/index.cuh: global thread indices and bounds-guarded thread-index declarations.
//
// The axes follow the launch shape: with `n_threads=(ni, nj, nk)` (and so with
// `n_threads_from="auto"`, the leading axes of the first array), `i` runs along x, `j` along y
// and `k` along z. Everything is computed in `long long`, so arrays past 2**31 elements index
// correctly.
//
//   CUNUMPY_GLOBAL_INDEX_X()   blockIdx.x * blockDim.x + threadIdx.x, as long long (Y, Z alike)
//   CUNUMPY_THREAD_1D(i, n);   declares `long long i`, returns when i >= n
//   CUNUMPY_THREAD_2D(i, j, ni, nj);
//   CUNUMPY_THREAD_3D(i, j, k, ni, nj, nk);
//   CUNUMPY_GRID_STRIDE_1D(i, n) { ... }   grid-stride loop over 0 <= i < n
//
// The THREAD macros `return` from the enclosing function, so use them at the top of a kernel
// (not inside a loop) and do not call __syncthreads() after them. They work with or without a
// trailing semicolon.
// Needs no header: it compiles with NVRTC, nvcc, hipcc and as host C++ (cunumpy's emulator).
#ifndef CUNUMPY_INDEX_CUH
#define CUNUMPY_INDEX_CUH

#define CUNUMPY_GLOBAL_INDEX_X() \
  ((long long)blockIdx.x * (long long)blockDim.x + (long long)threadIdx.x)
#define CUNUMPY_GLOBAL_INDEX_Y() \
  ((long long)blockIdx.y * (long long)blockDim.y + (long long)threadIdx.y)
#define CUNUMPY_GLOBAL_INDEX_Z() \
  ((long long)blockIdx.z * (long long)blockDim.z + (long long)threadIdx.z)

// Total number of threads along x in the grid (the stride of a grid-stride loop).
#define CUNUMPY_GRID_SIZE_X() ((long long)gridDim.x * (long long)blockDim.x)

#define CUNUMPY_THREAD_1D(i, n)                       \
  long long i = CUNUMPY_GLOBAL_INDEX_X();             \
  if (i >= (long long)(n)) return;

#define CUNUMPY_THREAD_2D(i, j, ni, nj)               \
  long long i = CUNUMPY_GLOBAL_INDEX_X();             \
  long long j = CUNUMPY_GLOBAL_INDEX_Y();             \
  if (i >= (long long)(ni) || j >= (long long)(nj)) return;

#define CUNUMPY_THREAD_3D(i, j, k, ni, nj, nk)        \
  long long i = CUNUMPY_GLOBAL_INDEX_X();             \
  long long j = CUNUMPY_GLOBAL_INDEX_Y();             \
  long long k = CUNUMPY_GLOBAL_INDEX_Z();             \
  if (i >= (long long)(ni) || j >= (long long)(nj) || k >= (long long)(nk)) return;

// `n` is evaluated once per iteration of the loop condition; pass a value, not an expensive call.
#define CUNUMPY_GRID_STRIDE_1D(i, n)                                         \
  for (long long i = CUNUMPY_GLOBAL_INDEX_X(); i < (long long)(n);           \
       i += CUNUMPY_GRID_SIZE_X())

#endif  // CUNUMPY_INDEX_CUH
