"""Arguments of the ``saxpy`` parity test (host, CUDA and Metal versions)."""

import numpy as np

import cunumpy as xp

OUTPUTS = ("out",)
N_THREADS = 1000
RTOL = 1e-6
# a GPU contracts a * x + y into one fused multiply-add (one rounding, not two): results
# near zero differ from the host's by an ulp of the terms, not of the result
ATOL = 1e-6


def make_args(backend, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(1000).astype(np.float32)
    y = rng.standard_normal(1000).astype(np.float32)
    out = np.zeros(1000, np.float32)
    return 1.5, xp.asarray(x), xp.asarray(y), xp.asarray(out), 1000
