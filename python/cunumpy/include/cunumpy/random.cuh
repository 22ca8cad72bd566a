// cunumpy/random.cuh: counter-based random numbers (Philox4x32-10), stateless and reproducible.
//
//   cunumpy_u32x4 cunumpy_philox4x32_10(cunumpy_u32x4 ctr, unsigned k0, unsigned k1)
//       the Philox-4x32 bijection with 10 rounds (Salmon et al., SC'11) of a 128-bit counter
//       under a 64-bit key.
//   cunumpy_u32x4 cunumpy_random_bits(seed, stream, counter)
//       128 random bits for (seed, stream, counter), all unsigned long long: the key is the
//       seed, the counter words are (counter lo, counter hi, stream lo, stream hi). Any thread
//       can draw number `counter` of stream `stream` without state: use e.g. the particle index
//       as stream and the time step as counter.
//   double cunumpy_uniform(seed, stream, counter), cunumpy_uniform2(...)
//       doubles in [0, 1) with 53 random bits, from words 0-1 (resp. 2-3) of the bits.
//       Bit-identical to cunumpy.rng.philox_uniform / philox_uniform2 on the host.
//   double cunumpy_normal(seed, stream, counter), cunumpy_normal2(...)
//       standard normals by Box-Muller from the two uniforms (cos resp. sin branch); the host
//       twin cunumpy.rng.philox_normal may differ in the last bits (libm vs device math).
//
// Plain integer arithmetic and no standard header: compiles with NVRTC, nvcc and as host C++
// (cunumpy's CPU emulator), where every function is also callable from host code.
#ifndef CUNUMPY_RANDOM_CUH
#define CUNUMPY_RANDOM_CUH

#ifndef CUNUMPY_HOST_DEVICE_INLINE
#if defined(__CUDACC__) || defined(__HIPCC__) || \
    (defined(__host__) && defined(__device__) && defined(__forceinline__))
#define CUNUMPY_HOST_DEVICE_INLINE __host__ __device__ __forceinline__
#else
#define CUNUMPY_HOST_DEVICE_INLINE inline
#endif
#endif

// Device math under CUDA; the compiler builtins elsewhere (no <cmath> needed).
#if defined(__CUDACC__) || defined(__CUDACC_RTC__) || defined(__HIPCC__)
#define CUNUMPY_RNG_SQRT(x) sqrt(x)
#define CUNUMPY_RNG_LOG(x) log(x)
#define CUNUMPY_RNG_COS(x) cos(x)
#define CUNUMPY_RNG_SIN(x) sin(x)
#else
#define CUNUMPY_RNG_SQRT(x) __builtin_sqrt(x)
#define CUNUMPY_RNG_LOG(x) __builtin_log(x)
#define CUNUMPY_RNG_COS(x) __builtin_cos(x)
#define CUNUMPY_RNG_SIN(x) __builtin_sin(x)
#endif

struct cunumpy_u32x4 {
  unsigned int v[4];
};

// The multipliers and Weyl increments of Philox-4x32.
#define CUNUMPY_PHILOX_M0 0xD2511F53u
#define CUNUMPY_PHILOX_M1 0xCD9E8D57u
#define CUNUMPY_PHILOX_W0 0x9E3779B9u
#define CUNUMPY_PHILOX_W1 0xBB67AE85u

CUNUMPY_HOST_DEVICE_INLINE cunumpy_u32x4 cunumpy_philox4x32_10(cunumpy_u32x4 ctr, unsigned int k0,
                                                               unsigned int k1) {
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k0 += CUNUMPY_PHILOX_W0;
      k1 += CUNUMPY_PHILOX_W1;
    }
    const unsigned long long p0 = (unsigned long long)CUNUMPY_PHILOX_M0 * ctr.v[0];
    const unsigned long long p1 = (unsigned long long)CUNUMPY_PHILOX_M1 * ctr.v[2];
    const unsigned int hi0 = (unsigned int)(p0 >> 32), lo0 = (unsigned int)p0;
    const unsigned int hi1 = (unsigned int)(p1 >> 32), lo1 = (unsigned int)p1;
    cunumpy_u32x4 next;
    next.v[0] = hi1 ^ ctr.v[1] ^ k0;
    next.v[1] = lo1;
    next.v[2] = hi0 ^ ctr.v[3] ^ k1;
    next.v[3] = lo0;
    ctr = next;
  }
  return ctr;
}

CUNUMPY_HOST_DEVICE_INLINE cunumpy_u32x4 cunumpy_random_bits(unsigned long long seed,
                                                             unsigned long long stream,
                                                             unsigned long long counter) {
  cunumpy_u32x4 ctr;
  ctr.v[0] = (unsigned int)counter;
  ctr.v[1] = (unsigned int)(counter >> 32);
  ctr.v[2] = (unsigned int)stream;
  ctr.v[3] = (unsigned int)(stream >> 32);
  return cunumpy_philox4x32_10(ctr, (unsigned int)seed, (unsigned int)(seed >> 32));
}

// 27 high bits of a and 26 of b: an exact multiple of 2^-53 in [0, 1).
CUNUMPY_HOST_DEVICE_INLINE double cunumpy_bits_to_uniform(unsigned int a, unsigned int b) {
  const unsigned long long m = ((unsigned long long)(a >> 5) << 26) | (unsigned long long)(b >> 6);
  return (double)m * (1.0 / 9007199254740992.0);
}

CUNUMPY_HOST_DEVICE_INLINE double cunumpy_uniform(unsigned long long seed, unsigned long long stream,
                                                  unsigned long long counter) {
  const cunumpy_u32x4 r = cunumpy_random_bits(seed, stream, counter);
  return cunumpy_bits_to_uniform(r.v[0], r.v[1]);
}

CUNUMPY_HOST_DEVICE_INLINE double cunumpy_uniform2(unsigned long long seed, unsigned long long stream,
                                                   unsigned long long counter) {
  const cunumpy_u32x4 r = cunumpy_random_bits(seed, stream, counter);
  return cunumpy_bits_to_uniform(r.v[2], r.v[3]);
}

// Box-Muller: radius from u1 in (0, 1] (1 - uniform), angle from the second uniform.
CUNUMPY_HOST_DEVICE_INLINE double cunumpy_normal(unsigned long long seed, unsigned long long stream,
                                                 unsigned long long counter) {
  const cunumpy_u32x4 r = cunumpy_random_bits(seed, stream, counter);
  const double u1 = 1.0 - cunumpy_bits_to_uniform(r.v[0], r.v[1]);
  const double u2 = cunumpy_bits_to_uniform(r.v[2], r.v[3]);
  return CUNUMPY_RNG_SQRT(-2.0 * CUNUMPY_RNG_LOG(u1)) *
         CUNUMPY_RNG_COS(6.283185307179586476925286766559 * u2);
}

CUNUMPY_HOST_DEVICE_INLINE double cunumpy_normal2(unsigned long long seed, unsigned long long stream,
                                                  unsigned long long counter) {
  const cunumpy_u32x4 r = cunumpy_random_bits(seed, stream, counter);
  const double u1 = 1.0 - cunumpy_bits_to_uniform(r.v[0], r.v[1]);
  const double u2 = cunumpy_bits_to_uniform(r.v[2], r.v[3]);
  return CUNUMPY_RNG_SQRT(-2.0 * CUNUMPY_RNG_LOG(u1)) *
         CUNUMPY_RNG_SIN(6.283185307179586476925286766559 * u2);
}

#endif  // CUNUMPY_RANDOM_CUH
