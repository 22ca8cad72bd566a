// Every device form of cunumpy/random.cuh for one (seed, stream, counter) per thread: written
// by scripts/rng_reference_0_7_1.py under cunumpy 0.7.1, launched by the tests on the emulated
// device and the GPU. out has 8 doubles per thread, in the order of DEVICE_COLUMNS.
#include <cunumpy/random.cuh>

extern "C" __global__ void draw(const unsigned long long* seed, const unsigned long long* stream,
                                const unsigned long long* counter, double* out, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i >= n) return;
  double u0, u1, z0, z1;
  cunumpy_uniform2(seed[i], stream[i], counter[i], &u0, &u1);
  cunumpy_normal2(seed[i], stream[i], counter[i], &z0, &z1);
  const cunumpy_u32x4 r = cunumpy_random_bits(seed[i], stream[i], counter[i]);
  out[8 * i + 0] = u0;
  out[8 * i + 1] = u1;
  out[8 * i + 2] = z0;
  out[8 * i + 3] = z1;
  out[8 * i + 4] = cunumpy_uniform(seed[i], stream[i], counter[i]);
  out[8 * i + 5] = cunumpy_normal(seed[i], stream[i], counter[i]);
  out[8 * i + 6] = cunumpy_u64_to_uniform(r.v[2], r.v[3]);
  out[8 * i + 7] = cunumpy_u64_to_uniform(r.v[1], r.v[0]);
}
