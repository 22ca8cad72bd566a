// cunumpy/reduce.cuh: warp and block reductions (sum, min, max) for arithmetic types.
//
//   T cunumpy_warp_reduce(T v, Op op, unsigned mask = 0xffffffff)
//   T cunumpy_warp_sum / cunumpy_warp_min / cunumpy_warp_max(T v, unsigned mask = 0xffffffff)
//       reduce v over the lanes of `mask` (which must contain the calling lane; every lane of
//       the mask must call). Every lane of the mask gets the result. The full mask takes a
//       __shfl_down_sync tree; any other non-empty mask is reduced over its set lanes in lane
//       order. Warps are 32 lanes.
//   T cunumpy_block_reduce(T v, Op op)
//   T cunumpy_block_sum / cunumpy_block_min / cunumpy_block_max(T v)
//       reduce v over the whole block (1D, 2D or 3D; a partial last warp is fine). Collective:
//       every thread of the block must call, and every thread gets the result. Uses 32 shared
//       values of T and two __syncthreads.
//   void cunumpy_block_sum_to(T* out, T v)
//       the block sum added to *out with one cunumpy_atomic_add per block (cunumpy/atomic.cuh).
//   unsigned cunumpy_block_thread(), cunumpy_block_threads(), cunumpy_block_warp_mask()
//       the linear thread index in the block, the block size, and the mask of the lanes of
//       the calling thread's warp that exist (all 32 except in a partial last warp).
//   cunumpy_sum_op, cunumpy_min_op, cunumpy_max_op: the operators (any callable works).
//
// No standard header: compiles with NVRTC, nvcc and as host C++17 (cunumpy's CPU emulator).
#ifndef CUNUMPY_REDUCE_CUH
#define CUNUMPY_REDUCE_CUH

#include <cunumpy/atomic.cuh>

struct cunumpy_sum_op {
  template <typename T>
  CUNUMPY_DEVICE_INLINE T operator()(T a, T b) const {
    return a + b;
  }
};

struct cunumpy_min_op {
  template <typename T>
  CUNUMPY_DEVICE_INLINE T operator()(T a, T b) const {
    return b < a ? b : a;
  }
};

struct cunumpy_max_op {
  template <typename T>
  CUNUMPY_DEVICE_INLINE T operator()(T a, T b) const {
    return a < b ? b : a;
  }
};

CUNUMPY_DEVICE_INLINE unsigned int cunumpy_block_thread() {
  return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}

CUNUMPY_DEVICE_INLINE unsigned int cunumpy_block_threads() {
  return blockDim.x * blockDim.y * blockDim.z;
}

CUNUMPY_DEVICE_INLINE unsigned int cunumpy_block_warp_mask() {
  const unsigned int first = cunumpy_block_thread() & ~31u;
  const unsigned int lanes = cunumpy_block_threads() - first;
  return lanes >= 32u ? 0xffffffffu : ((1u << lanes) - 1u);
}

template <typename T, typename Op>
CUNUMPY_DEVICE_INLINE T cunumpy_warp_reduce(T v, Op op, unsigned int mask = 0xffffffffu) {
  if (mask == 0xffffffffu) {
    for (int offset = 16; offset > 0; offset >>= 1) {
      v = op(v, __shfl_down_sync(mask, v, offset));
    }
    return __shfl_sync(mask, v, 0);
  }
  // Any other mask: combine the set lanes in lane order (each lane reads every member).
  T acc = v;
  bool first = true;
  for (int lane = 0; lane < 32; ++lane) {
    if ((mask >> lane) & 1u) {
      const T other = __shfl_sync(mask, v, lane);
      acc = first ? other : op(acc, other);
      first = false;
    }
  }
  return acc;
}

template <typename T>
CUNUMPY_DEVICE_INLINE T cunumpy_warp_sum(T v, unsigned int mask = 0xffffffffu) {
  return cunumpy_warp_reduce(v, cunumpy_sum_op(), mask);
}

template <typename T>
CUNUMPY_DEVICE_INLINE T cunumpy_warp_min(T v, unsigned int mask = 0xffffffffu) {
  return cunumpy_warp_reduce(v, cunumpy_min_op(), mask);
}

template <typename T>
CUNUMPY_DEVICE_INLINE T cunumpy_warp_max(T v, unsigned int mask = 0xffffffffu) {
  return cunumpy_warp_reduce(v, cunumpy_max_op(), mask);
}

template <typename T, typename Op>
CUNUMPY_DEVICE_INLINE T cunumpy_block_reduce(T v, Op op) {
  __shared__ T cunumpy_partial[32];
  const unsigned int thread = cunumpy_block_thread();
  const unsigned int warps = (cunumpy_block_threads() + 31u) / 32u;
  v = cunumpy_warp_reduce(v, op, cunumpy_block_warp_mask());
  __syncthreads();  // a previous call's readers are done with cunumpy_partial
  if ((thread & 31u) == 0u) {
    cunumpy_partial[thread / 32u] = v;
  }
  __syncthreads();
  T r = cunumpy_partial[0];
  for (unsigned int w = 1; w < warps; ++w) {
    r = op(r, cunumpy_partial[w]);
  }
  return r;
}

template <typename T>
CUNUMPY_DEVICE_INLINE T cunumpy_block_sum(T v) {
  return cunumpy_block_reduce(v, cunumpy_sum_op());
}

template <typename T>
CUNUMPY_DEVICE_INLINE T cunumpy_block_min(T v) {
  return cunumpy_block_reduce(v, cunumpy_min_op());
}

template <typename T>
CUNUMPY_DEVICE_INLINE T cunumpy_block_max(T v) {
  return cunumpy_block_reduce(v, cunumpy_max_op());
}

template <typename T>
CUNUMPY_DEVICE_INLINE void cunumpy_block_sum_to(T* out, T v) {
  const T s = cunumpy_block_sum(v);
  if (cunumpy_block_thread() == 0u) {
    cunumpy_atomic_add(out, s);
  }
}

#endif  // CUNUMPY_REDUCE_CUH
