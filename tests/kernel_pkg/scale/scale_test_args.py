"""Arguments of the ``scale`` parity test."""

import cunumpy as xp

RTOL = 0.0


def make_args(backend, seed):
    x = xp.asarray(xp.linspace(0.0, 1.0, 1000) + seed)
    return x, 3.0, 1000
