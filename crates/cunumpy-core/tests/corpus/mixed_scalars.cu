#include <cstdint>
#include <cstddef>

// Prototypes first (unnamed parameters are fine in a prototype), definitions later.
__global__ void all_ints(int8_t, uint8_t, int16_t, uint16_t, int32_t, uint32_t, int64_t, uint64_t);
__global__ void all_ints(int8_t a, uint8_t b, int16_t c, uint16_t d,
                         int32_t e, uint32_t f, int64_t g, uint64_t h)
{
}

__global__ void c_spellings(char a, signed char b, unsigned char c, short d, short int e,
                            unsigned short f, unsigned short int g, signed h, signed int i,
                            unsigned j, unsigned int k, long l, long int m, long long n,
                            long long int o, unsigned long p, unsigned long long q,
                            long unsigned int r, bool s) {}

__global__ void sizes(size_t n, ptrdiff_t d, ssize_t s, std::size_t m) {}

__global__ void floats(float a, double b, const float c, volatile double* d) {}

__global__ void untyped_buffers(void* raw, const void* __restrict__ craw, size_t nbytes) {}

__global__ void with_defaults(double* x, int n = 128, double alpha = 1.0) {}

// Only a prototype: its names are used.
__global__ void prototype_only(const float* in, float* out, int n);
