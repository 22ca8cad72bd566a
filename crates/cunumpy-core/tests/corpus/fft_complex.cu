#include <thrust/complex.h>
#include <cuda/std/complex>

typedef thrust::complex<double> zdouble;

extern "C" __global__ void twiddle(thrust::complex<double>* data, const int n, const double sign) {}

extern "C" __global__ void scale_c64(cuda::std::complex<float>* z, cuda::std::complex<float> alpha,
                                     unsigned long n) {}

extern "C" __global__ void mixed(complex<float> a, const complex<double>* __restrict__ b,
                                 ::thrust::complex<float>* c) {}

// Rejected: the typedef hides the type from the checker.
extern "C" __global__ void uses_typedef(zdouble* data, int n) {}
