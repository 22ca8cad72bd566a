"""Arguments of the gather_field parity test (host and device builds of the same inputs)."""

import numpy as np

import cunumpy as xp

RTOL = 1e-12
ATOL = 1e-14
OUTPUTS = ("ex", "ey")


def make_args(backend, seed):
    import particles

    rng = np.random.default_rng(seed)
    n, nx, ny = 1000, 16, 12
    p = particles.make_particles(n, 1.0, 1.0, seed=seed)
    ex_grid = xp.to_cunumpy(rng.normal(size=(nx, ny)))
    ey_grid = xp.to_cunumpy(rng.normal(size=(nx, ny)))
    return (p, ex_grid, ey_grid, xp.zeros(n), xp.zeros(n), 1.0 / nx, 1.0 / ny)


def N_THREADS(args):  # noqa: N802 - the settings are module constants by convention
    return args[0].n
