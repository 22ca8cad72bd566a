#include <cunumpy/atomic.cuh>

struct Grid {
    double x0, dx;
    int nx;
};

struct Markers {
    const double* eta;
    const double* w;
    long n;
};

// Device helpers are not kernels, references are fine there.
__device__ __forceinline__ void add(double& acc, double v) { acc += v; }
static __device__ int cell_of(const Grid& g, double x) { return (int)((x - g.x0) / g.dx); }

extern "C" {

__global__ void deposit_charge(const Markers m, const Grid grid, double* __restrict__ rho)
{
    long p = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (p >= m.n) return;
    cunumpy::atomic_add(&rho[cell_of(grid, m.eta[p])], m.w[p]);
}

__global__ void deposit_current(Markers m, Grid grid, double* jx, double* jy, double* jz) {}

// Rejected: a pointer to a struct.
__global__ void deposit_bad(const Markers* m, double* rho) {}

}
