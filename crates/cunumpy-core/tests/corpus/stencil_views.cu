#include <cunumpy/array_view.cuh>

using namespace cunumpy;

// Strided views: shape and strides travel with the pointer.
__global__ void laplace_2d(const Array2D<double> u, Array2D<double> out, double h)
{
    const long i = blockIdx.x * blockDim.x + threadIdx.x;
    const long j = blockIdx.y * blockDim.y + threadIdx.y;
    if (i <= 0 || j <= 0 || i >= u.shape[0] - 1 || j >= u.shape[1] - 1) return;
    out(i, j) = (u(i - 1, j) + u(i + 1, j) + u(i, j - 1) + u(i, j + 1) - 4.0 * u(i, j)) / (h * h);
}

__global__ void copy_1d(cunumpy::CArray1D<float> dst, cunumpy::Array1D<float> src) {}

__global__ void kinetic_5d(Array5D<double> f,   // (x, y, z, vpar, vperp)
                           CArray3D<double> rho,
                           const CArray1D<double> weights) {}

__global__ void high_rank(Array16D<int32_t> a16, CArray15D<uint8_t> c15, Array8D<bool> mask,
                          Array4D<thrust::complex<double>> z4) {}

template <typename T>
__global__ void scale_view(Array3D<T> a, const T factor)
{
    // a(i, j, k) *= factor
}
