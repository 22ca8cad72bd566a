#include <cuda_fp16.h>
#include <cuComplex.h>

#define REAL float
#define ARGS double* a, int n

__global__ void vec_float2(float2* xy, int n) {}
__global__ void vec_double4(const double4 q) {}
__global__ void vec_int3(int3 idx) {}
__global__ void half_scale(__half* h, __half alpha) {}
__global__ void half_pair(half2* h) {}
__global__ void cu_complex(cuDoubleComplex* z) {}

__global__ void ref_scalar(double& out) {}
__global__ void ref_array(const double (&coeffs)[3], double* y) {}
__global__ void ref_rvalue(double&& tmp) {}

__global__ void ptr_ptr(double** rows, int n) {}
__global__ void ptr_array(float* rows[], int n) {}

__global__ void macro_type(REAL* x, int n) {}
__global__ void macro_params(ARGS) {}

__global__ void view_pointer(cunumpy::Array2D<double>* v) {}
__global__ void view_of_vector(cunumpy::Array1D<float2> v) {}

__global__ void unnamed(double*, int) {}
__global__ void callback(void (*f)(double), double* x) {}

__global__ int returns_int(int n) { return n; }

template <typename T>
__global__ void needs_args(T* x) {}
