"""Arguments of the ``axpy`` parity test."""

import numpy as np

import cunumpy as xp

OUTPUTS = ("y",)


def make_args(backend, seed):
    rng = np.random.default_rng(seed)
    x, y = rng.standard_normal(500), rng.standard_normal(500)
    return 2.5, xp.asarray(x), xp.asarray(y), 500
