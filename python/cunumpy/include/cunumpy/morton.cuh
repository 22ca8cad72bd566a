// cunumpy/morton.cuh: Morton (Z-order) keys in kernels, equal to xp.algorithms.morton_keys.
//
//   unsigned long long cunumpy_morton_spread2(unsigned long long v)   low 32 bits -> even bits
//   unsigned long long cunumpy_morton_compact2(unsigned long long v)  even bits -> low 32 bits
//   unsigned long long cunumpy_morton_spread3(unsigned long long v)   low 21 bits -> every 3rd
//   unsigned long long cunumpy_morton_compact3(unsigned long long v)  every 3rd bit -> low 21
//   unsigned long long cunumpy_morton_encode2(ix, iy), cunumpy_morton_encode3(ix, iy, iz)
//       interleave integer cell coordinates: bit ndim*b + a of the key is bit b of axis a.
//   unsigned long long cunumpy_morton_cell(double x, double lower, double scale, int levels)
//       floor((x - lower) * scale) clipped to [0, 2^levels - 1].
//   unsigned long long cunumpy_morton_key2(x, y, lower_x, lower_y, scale_x, scale_y, levels)
//   unsigned long long cunumpy_morton_key3(x, y, z, lower_x, lower_y, lower_z,
//                                          scale_x, scale_y, scale_z, levels)
//       the key of a point: pass lower and xp.algorithms.morton_scales(lower, upper, levels)
//       and the key is bit-identical to xp.algorithms.morton_keys (same double operations in
//       the same order; a subtraction then a product, so no FMA contraction can change it).
//       Positions must be finite; levels is 1..32 (2D) or 1..21 (3D).
//
//     #include <cunumpy/morton.cuh>
//     extern "C" __global__ void keys2d(const double* pos, unsigned long long* key, long long n,
//                                       double x0, double y0, double sx, double sy, int levels) {
//       long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
//       if (i < n) key[i] = cunumpy_morton_key2(pos[2 * i], pos[2 * i + 1], x0, y0, sx, sy,
//                                               levels);
//     }
//
// Integer and double arithmetic only: compiles with NVRTC, nvcc and as host C++ (emulator).
#ifndef CUNUMPY_MORTON_CUH
#define CUNUMPY_MORTON_CUH

#ifndef CUNUMPY_HOST_DEVICE_INLINE
#if defined(__CUDACC__) || defined(__HIPCC__) || \
    (defined(__host__) && defined(__device__) && defined(__forceinline__))
#define CUNUMPY_HOST_DEVICE_INLINE __host__ __device__ __forceinline__
#else
#define CUNUMPY_HOST_DEVICE_INLINE inline
#endif
#endif

CUNUMPY_HOST_DEVICE_INLINE unsigned long long cunumpy_morton_spread2(unsigned long long v) {
  v &= 0xffffffffull;
  v = (v | (v << 16)) & 0x0000ffff0000ffffull;
  v = (v | (v << 8)) & 0x00ff00ff00ff00ffull;
  v = (v | (v << 4)) & 0x0f0f0f0f0f0f0f0full;
  v = (v | (v << 2)) & 0x3333333333333333ull;
  v = (v | (v << 1)) & 0x5555555555555555ull;
  return v;
}

CUNUMPY_HOST_DEVICE_INLINE unsigned long long cunumpy_morton_compact2(unsigned long long v) {
  v &= 0x5555555555555555ull;
  v = (v | (v >> 1)) & 0x3333333333333333ull;
  v = (v | (v >> 2)) & 0x0f0f0f0f0f0f0f0full;
  v = (v | (v >> 4)) & 0x00ff00ff00ff00ffull;
  v = (v | (v >> 8)) & 0x0000ffff0000ffffull;
  v = (v | (v >> 16)) & 0x00000000ffffffffull;
  return v;
}

CUNUMPY_HOST_DEVICE_INLINE unsigned long long cunumpy_morton_spread3(unsigned long long v) {
  v &= 0x1fffffull;
  v = (v | (v << 32)) & 0x001f00000000ffffull;
  v = (v | (v << 16)) & 0x001f0000ff0000ffull;
  v = (v | (v << 8)) & 0x100f00f00f00f00full;
  v = (v | (v << 4)) & 0x10c30c30c30c30c3ull;
  v = (v | (v << 2)) & 0x1249249249249249ull;
  return v;
}

CUNUMPY_HOST_DEVICE_INLINE unsigned long long cunumpy_morton_compact3(unsigned long long v) {
  v &= 0x1249249249249249ull;
  v = (v | (v >> 2)) & 0x10c30c30c30c30c3ull;
  v = (v | (v >> 4)) & 0x100f00f00f00f00full;
  v = (v | (v >> 8)) & 0x001f0000ff0000ffull;
  v = (v | (v >> 16)) & 0x001f00000000ffffull;
  v = (v | (v >> 32)) & 0x1fffffull;
  return v;
}

CUNUMPY_HOST_DEVICE_INLINE unsigned long long cunumpy_morton_encode2(unsigned long long ix,
                                                                     unsigned long long iy) {
  return cunumpy_morton_spread2(ix) | (cunumpy_morton_spread2(iy) << 1);
}

CUNUMPY_HOST_DEVICE_INLINE unsigned long long cunumpy_morton_encode3(unsigned long long ix,
                                                                     unsigned long long iy,
                                                                     unsigned long long iz) {
  return cunumpy_morton_spread3(ix) | (cunumpy_morton_spread3(iy) << 1) |
         (cunumpy_morton_spread3(iz) << 2);
}

CUNUMPY_HOST_DEVICE_INLINE unsigned long long cunumpy_morton_cell(double x, double lower,
                                                                  double scale, int levels) {
  const double top = (double)((1ull << levels) - 1ull);  // exact for levels <= 32
  double t = (x - lower) * scale;
  // floor without <cmath>: truncation is floor for t >= 0, and t < 0 clips to 0 anyway
  if (!(t > 0.0)) return 0ull;
  if (t >= top) return (unsigned long long)top;
  return (unsigned long long)t;
}

CUNUMPY_HOST_DEVICE_INLINE unsigned long long cunumpy_morton_key2(double x, double y,
                                                                  double lower_x, double lower_y,
                                                                  double scale_x, double scale_y,
                                                                  int levels) {
  return cunumpy_morton_encode2(cunumpy_morton_cell(x, lower_x, scale_x, levels),
                                cunumpy_morton_cell(y, lower_y, scale_y, levels));
}

CUNUMPY_HOST_DEVICE_INLINE unsigned long long cunumpy_morton_key3(
    double x, double y, double z, double lower_x, double lower_y, double lower_z, double scale_x,
    double scale_y, double scale_z, int levels) {
  return cunumpy_morton_encode3(cunumpy_morton_cell(x, lower_x, scale_x, levels),
                                cunumpy_morton_cell(y, lower_y, scale_y, levels),
                                cunumpy_morton_cell(z, lower_z, scale_z, levels));
}

#endif  // CUNUMPY_MORTON_CUH
