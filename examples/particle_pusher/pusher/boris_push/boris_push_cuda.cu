// CUDA port of boris_push: one thread per particle.
#include "../particles.cuh"

extern "C" __global__ void boris_push(Particles p, const double* ex, const double* ey,
                                      double bz, double qm, double dt, double lx, double ly) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i >= p.n) return;
    double h = 0.5 * qm * dt;
    double tz = h * bz;
    double sz = 2.0 * tz / (1.0 + tz * tz);
    double vx = p.vx[i] + h * ex[i];
    double vy = p.vy[i] + h * ey[i];
    double px = vx + vy * tz;
    double py = vy - vx * tz;
    vx = vx + py * sz;
    vy = vy - px * sz;
    vx = vx + h * ex[i];
    vy = vy + h * ey[i];
    p.vx[i] = vx;
    p.vy[i] = vy;
    double x = p.x[i] + vx * dt;
    double y = p.y[i] + vy * dt;
    p.x[i] = x - lx * floor(x / lx);
    p.y[i] = y - ly * floor(y / ly);
}
