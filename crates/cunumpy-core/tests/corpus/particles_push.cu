// Particle pusher kernels, struphy style: one thread per marker.
#include <cunumpy/index.cuh>
#include <cunumpy/array_view.cuh>
#include "constants.cuh"

#define THREADS_PER_BLOCK 256
#define MIN_BLOCKS 4
#define SQR(x) ((x) * (x))
#define DECLARE_KERNEL(name) __global__ void name(double* out)

struct Particles {
    double* x;
    double* v;
    int n;
};

struct FieldParams {
    double b0;
    double e0;
    int order;
};

__device__ inline double lorentz(const double& v, double b) { return v * b; }

extern "C" {

/* Advances positions by one explicit Euler step. */
__global__ void __launch_bounds__(THREADS_PER_BLOCK, MIN_BLOCKS)
push_eta(
    double* __restrict__ markers,      // (n_markers, 3), positions
    const double* __restrict__ velocities, /* (n_markers, 3) */
    const double dt,
    const int n_markers)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n_markers) return;
    for (int d = 0; d < 3; ++d) markers[3 * i + d] += dt * velocities[3 * i + d];
}

__launch_bounds__(THREADS_PER_BLOCK)
__global__ void push_v_with_efield(Particles p,
                                   const FieldParams params,
                                   const double dt)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < p.n) p.v[i] += dt * params.e0;
}

__global__ __launch_bounds__(128) void push_vxb(struct Particles p,
    const double* const b_field, double dt, long long n_steps)
{
    (void)SQR(dt);
}

} // extern "C"
