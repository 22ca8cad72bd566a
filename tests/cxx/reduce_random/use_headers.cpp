// Instantiates every template of reduce.cuh and every function of random.cuh.
#include <cunumpy/random.cuh>
#include <cunumpy/reduce.cuh>

__global__ void use_reduce(double* d, float* f, int* i, unsigned long long* u, long long* l) {
  const double x = cunumpy_warp_sum(1.0) + cunumpy_warp_min(2.0, 0x5u) + cunumpy_warp_max(3.0, 1u);
  const float y = cunumpy_block_sum(1.0f) + cunumpy_block_min(2.0f) + cunumpy_block_max(3.0f);
  const int z = cunumpy_block_reduce(4, cunumpy_max_op()) + cunumpy_warp_reduce(1, cunumpy_sum_op());
  cunumpy_block_sum_to(d, x);
  cunumpy_block_sum_to(f, y);
  cunumpy_block_sum_to(i, z);
  cunumpy_block_sum_to(u, 1ull);
  cunumpy_block_sum_to(l, -1ll);
}

__global__ void use_random(double* out, unsigned* bits) {
  const cunumpy_u32x4 r = cunumpy_random_bits(1ull, 2ull, 3ull);
  const cunumpy_u32x4 s = cunumpy_philox4x32_10(r, 5u, 6u);
  bits[0] = s.v[0];
  out[0] = cunumpy_uniform(1ull, 2ull, 3ull) + cunumpy_uniform2(1ull, 2ull, 3ull) +
           cunumpy_normal(1ull, 2ull, 3ull) + cunumpy_normal2(1ull, 2ull, 3ull);
  double u0, u1, z0, z1;  // the two-result forms of cunumpy 0.7
  cunumpy_uniform2(1ull, 2ull, 3ull, &u0, &u1);
  cunumpy_normal2(1ull, 2ull, 3ull, &z0, &z1);
  out[1] = u0 + u1 + z0 + z1 + cunumpy_u64_to_uniform(r.v[0], r.v[1]);
}
