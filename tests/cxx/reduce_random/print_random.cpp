// Reads "seed stream counter" lines and prints the bits, the uniforms (as raw 64-bit patterns)
// and the normals of random.cuh, for comparison with cunumpy.rng.
#include <cstdio>
#include <cstring>
#include <cunumpy/random.cuh>

static unsigned long long bits_of(double x) {
  unsigned long long b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

int main() {
  unsigned long long seed, stream, counter;
  while (std::scanf("%llu %llu %llu", &seed, &stream, &counter) == 3) {
    const cunumpy_u32x4 r = cunumpy_random_bits(seed, stream, counter);
    std::printf("%u %u %u %u %llu %llu %.17g %.17g\n", r.v[0], r.v[1], r.v[2], r.v[3],
                bits_of(cunumpy_uniform(seed, stream, counter)),
                bits_of(cunumpy_uniform2(seed, stream, counter)),
                cunumpy_normal(seed, stream, counter), cunumpy_normal2(seed, stream, counter));
  }
  return 0;
}
