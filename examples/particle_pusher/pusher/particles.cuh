// The particle arrays as one struct passed by value (see particles.py: DeviceParticles).
#ifndef PUSHER_PARTICLES_CUH
#define PUSHER_PARTICLES_CUH

struct Particles {
    double* x;
    double* y;
    double* vx;
    double* vy;
    double* vz;
    double* w;
    long long n;
};

#endif  // PUSHER_PARTICLES_CUH
