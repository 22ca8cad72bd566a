"""Arguments of the deposit_charge parity test (atomics: order varies, so a tolerance)."""

import cunumpy as xp

RTOL = 1e-12
ATOL = 1e-9
OUTPUTS = ("rho",)


def make_args(backend, seed):
    import particles

    p = particles.make_particles(2000, 1.0, 1.0, seed=seed)
    return (p, xp.zeros((16, 12)), 1.0 / 16, 1.0 / 12)


def N_THREADS(args):  # noqa: N802
    return args[0].n
