"""Arguments of the boris_push parity test."""

import numpy as np

import cunumpy as xp

RTOL = 1e-12
ATOL = 1e-14
OUTPUTS = ("p",)


def make_args(backend, seed):
    import particles

    rng = np.random.default_rng(seed + 1)
    n = 1000
    p = particles.make_particles(n, 1.0, 1.0, seed=seed)
    ex = xp.to_cunumpy(rng.normal(size=n))
    ey = xp.to_cunumpy(rng.normal(size=n))
    return (p, ex, ey, 2.0, -1.0, 0.05, 1.0, 1.0)


def N_THREADS(args):  # noqa: N802
    return args[0].n
