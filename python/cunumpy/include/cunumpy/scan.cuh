// cunumpy/scan.cuh: warp and block prefix sums, for compaction and binning in kernels.
//
//   T cunumpy_warp_inclusive_sum(T v, unsigned mask = 0xffffffff)
//   T cunumpy_warp_exclusive_sum(T v, unsigned mask = 0xffffffff)
//       the sum of v over the lanes of `mask` up to (inclusive) or before (exclusive) the
//       calling lane, in increasing lane order. Every lane of the mask must call with the same
//       mask, which must contain the calling lane. Prefix masks (lanes 0..k-1, the full warp,
//       a partial last warp) take a __shfl_up_sync ladder; any other mask is summed lane by lane.
//   T cunumpy_block_inclusive_sum(T v), T cunumpy_block_exclusive_sum(T v)
//       the same over the whole block in increasing linear thread index (x fastest; 1D, 2D or
//       3D blocks, a partial last warp is fine). Collective: every thread of the block must call
//       (padding threads with 0). Uses 32 shared values of T and three __syncthreads.
//
//     #include <cunumpy/scan.cuh>
//     // keep[i] != 0: slot of i among the kept entries of its block
//     int slot = cunumpy_block_exclusive_sum(keep ? 1 : 0);
//
// Warps are 32 lanes (see cunumpy/reduce.cuh). No standard header: compiles with NVRTC, nvcc
// and as host C++17 (cunumpy's CPU emulator).
#ifndef CUNUMPY_SCAN_CUH
#define CUNUMPY_SCAN_CUH

#include <cunumpy/reduce.cuh>

template <typename T>
CUNUMPY_DEVICE_INLINE T cunumpy_warp_inclusive_sum(T v, unsigned int mask = 0xffffffffu) {
  const unsigned int lane = cunumpy_block_thread() & 31u;
  if ((mask & (mask + 1u)) == 0u) {
    // prefix mask: lanes 0..k-1, each adds the value `offset` lanes below it
    for (unsigned int offset = 1; offset < 32u; offset <<= 1) {
      const T below = __shfl_up_sync(mask, v, offset);
      if (lane >= offset) v += below;
    }
    return v;
  }
  // any other mask: every member reads every member's value, in lane order
  T acc = T(0);
  for (unsigned int other = 0; other < 32u; ++other) {
    if ((mask >> other) & 1u) {
      const T value = __shfl_sync(mask, v, other);
      if (other <= lane) acc += value;
    }
  }
  return acc;
}

template <typename T>
CUNUMPY_DEVICE_INLINE T cunumpy_warp_exclusive_sum(T v, unsigned int mask = 0xffffffffu) {
  return cunumpy_warp_inclusive_sum(v, mask) - v;
}

template <typename T>
CUNUMPY_DEVICE_INLINE T cunumpy_block_inclusive_sum(T v) {
  __shared__ T cunumpy_warp_totals[32];
  const unsigned int thread = cunumpy_block_thread();
  const unsigned int warp = thread / 32u;
  const unsigned int warps = (cunumpy_block_threads() + 31u) / 32u;
  const unsigned int mask = cunumpy_block_warp_mask();
  T inclusive = cunumpy_warp_inclusive_sum(v, mask);
  __syncthreads();  // a previous call's readers are done with cunumpy_warp_totals
  const unsigned int last_lane = 31u - (unsigned int)__clz((int)mask);
  if ((thread & 31u) == last_lane) cunumpy_warp_totals[warp] = inclusive;
  __syncthreads();
  if (warp == 0u) {
    // the first warp scans the warp totals (lanes past `warps` add 0)
    const T total = (thread < warps) ? cunumpy_warp_totals[thread] : T(0);
    const T scanned = cunumpy_warp_inclusive_sum(total, mask);
    __syncwarp(mask);
    if (thread < warps) cunumpy_warp_totals[thread] = scanned - total;
  }
  __syncthreads();
  return inclusive + cunumpy_warp_totals[warp];
}

template <typename T>
CUNUMPY_DEVICE_INLINE T cunumpy_block_exclusive_sum(T v) {
  return cunumpy_block_inclusive_sum(v) - v;
}

#endif  // CUNUMPY_SCAN_CUH
