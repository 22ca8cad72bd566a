// CUDA port of gather_field: one thread per particle.
#include <cunumpy/array_view.cuh>
#include "../particles.cuh"

extern "C" __global__ void gather_field(Particles p, CArray2D<double> ex_grid,
                                        CArray2D<double> ey_grid, double* ex, double* ey,
                                        double dx, double dy) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i >= p.n) return;
    long long nx = ex_grid.shape[0], ny = ex_grid.shape[1];
    double gx = p.x[i] / dx, gy = p.y[i] / dy;
    long long i0 = (long long)floor(gx), j0 = (long long)floor(gy);
    double fx = gx - i0, fy = gy - j0;
    i0 = ((i0 % nx) + nx) % nx;
    j0 = ((j0 % ny) + ny) % ny;
    long long i1 = (i0 + 1) % nx, j1 = (j0 + 1) % ny;
    double w00 = (1 - fx) * (1 - fy), w10 = fx * (1 - fy);
    double w01 = (1 - fx) * fy, w11 = fx * fy;
    ex[i] = w00 * ex_grid(i0, j0) + w10 * ex_grid(i1, j0) + w01 * ex_grid(i0, j1)
          + w11 * ex_grid(i1, j1);
    ey[i] = w00 * ey_grid(i0, j0) + w10 * ey_grid(i1, j0) + w01 * ey_grid(i0, j1)
          + w11 * ey_grid(i1, j1);
}
