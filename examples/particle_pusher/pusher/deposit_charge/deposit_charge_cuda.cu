// CUDA port of deposit_charge: one thread per particle, atomic scatter-add into rho.
#include <cunumpy/array_view.cuh>
#include <cunumpy/atomic.cuh>
#include "../particles.cuh"

extern "C" __global__ void deposit_charge(Particles p, CArray2D<double> rho, double dx,
                                          double dy) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i >= p.n) return;
    long long nx = rho.shape[0], ny = rho.shape[1];
    double gx = p.x[i] / dx, gy = p.y[i] / dy;
    long long i0 = (long long)floor(gx), j0 = (long long)floor(gy);
    double fx = gx - i0, fy = gy - j0;
    i0 = ((i0 % nx) + nx) % nx;
    j0 = ((j0 % ny) + ny) % ny;
    long long i1 = (i0 + 1) % nx, j1 = (j0 + 1) % ny;
    double q = p.w[i] / (dx * dy);
    cunumpy_atomic_add(&rho(i0, j0), q * (1 - fx) * (1 - fy));
    cunumpy_atomic_add(&rho(i1, j0), q * fx * (1 - fy));
    cunumpy_atomic_add(&rho(i0, j1), q * (1 - fx) * fy);
    cunumpy_atomic_add(&rho(i1, j1), q * fx * fy);
}
