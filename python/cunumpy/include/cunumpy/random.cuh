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
//   void cunumpy_uniform2(seed, stream, counter, double* u0, double* u1)
//   double cunumpy_uniform(seed, stream, counter)
//       doubles in [0, 1) with 53 random bits (cunumpy_u64_to_uniform of words 0-1 resp. 2-3);
//       cunumpy_uniform is u0. Bit-identical to cunumpy.rng.philox_uniform2 / philox_uniform on
//       the host and to cunumpy 0.7.
//   void cunumpy_normal2(seed, stream, counter, double* z0, double* z1)
//   double cunumpy_normal(seed, stream, counter)
//       standard normals by Box-Muller from u0 and u1 (cos resp. sin branch); cunumpy_normal is
//       z0. The host twins (cunumpy.rng.philox_normal2 / philox_normal) may differ in the last
//       bit (the host's libm or NumPy's vector math against the device's).
//   double cunumpy_uniform2(seed, stream, counter), double cunumpy_normal2(seed, stream, counter)
//       the one-result forms: the second value (u1 resp. z1) alone.
//   double cunumpy_u64_to_uniform(unsigned hi, unsigned lo)
//       the mapping: the top 53 bits of hi:lo times 2^-53.
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

// A double in [0, 1) with 53 random bits: the top 53 bits of the 64-bit word hi:lo, times 2^-53.
CUNUMPY_HOST_DEVICE_INLINE double cunumpy_u64_to_uniform(unsigned int hi, unsigned int lo) {
  const unsigned long long word = ((unsigned long long)hi << 32) | (unsigned long long)lo;
  return (double)(word >> 11) * (1.0 / 9007199254740992.0);
}

// The same mapping under the name cunumpy 0.8.0 used (it then took 27 + 26 bits).
CUNUMPY_HOST_DEVICE_INLINE double cunumpy_bits_to_uniform(unsigned int hi, unsigned int lo) {
  return cunumpy_u64_to_uniform(hi, lo);
}

// Two uniform doubles in [0, 1): *u0 from words 0-1, *u1 from words 2-3 of the random bits.
CUNUMPY_HOST_DEVICE_INLINE void cunumpy_uniform2(unsigned long long seed, unsigned long long stream,
                                                 unsigned long long counter, double* u0,
                                                 double* u1) {
  const cunumpy_u32x4 r = cunumpy_random_bits(seed, stream, counter);
  *u0 = cunumpy_u64_to_uniform(r.v[0], r.v[1]);
  *u1 = cunumpy_u64_to_uniform(r.v[2], r.v[3]);
}

// One uniform double: the first of cunumpy_uniform2.
CUNUMPY_HOST_DEVICE_INLINE double cunumpy_uniform(unsigned long long seed, unsigned long long stream,
                                                  unsigned long long counter) {
  const cunumpy_u32x4 r = cunumpy_random_bits(seed, stream, counter);
  return cunumpy_u64_to_uniform(r.v[0], r.v[1]);
}

// The second uniform alone (the one-result form): what cunumpy_uniform2 stores in *u1.
CUNUMPY_HOST_DEVICE_INLINE double cunumpy_uniform2(unsigned long long seed, unsigned long long stream,
                                                   unsigned long long counter) {
  const cunumpy_u32x4 r = cunumpy_random_bits(seed, stream, counter);
  return cunumpy_u64_to_uniform(r.v[2], r.v[3]);
}

// Box-Muller: the radius from 1 - u0, in (0, 1] so that log is finite; the angle from u1.
CUNUMPY_HOST_DEVICE_INLINE void cunumpy_normal2(unsigned long long seed, unsigned long long stream,
                                                unsigned long long counter, double* z0,
                                                double* z1) {
  double u0, u1;
  cunumpy_uniform2(seed, stream, counter, &u0, &u1);
  const double radius = CUNUMPY_RNG_SQRT(-2.0 * CUNUMPY_RNG_LOG(1.0 - u0));
  const double angle = 6.283185307179586 * u1;
  *z0 = radius * CUNUMPY_RNG_COS(angle);
  *z1 = radius * CUNUMPY_RNG_SIN(angle);
}

// One normal double: the first of cunumpy_normal2.
CUNUMPY_HOST_DEVICE_INLINE double cunumpy_normal(unsigned long long seed, unsigned long long stream,
                                                 unsigned long long counter) {
  double z0, z1;
  cunumpy_normal2(seed, stream, counter, &z0, &z1);
  return z0;
}

// The second normal alone (the one-result form): what cunumpy_normal2 stores in *z1.
CUNUMPY_HOST_DEVICE_INLINE double cunumpy_normal2(unsigned long long seed, unsigned long long stream,
                                                  unsigned long long counter) {
  double z0, z1;
  cunumpy_normal2(seed, stream, counter, &z0, &z1);
  return z1;
}

#endif  // CUNUMPY_RANDOM_CUH
