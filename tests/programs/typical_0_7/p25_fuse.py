"""kernels.fuse: one elementwise function for both backends."""

import numpy as np

import cunumpy as xp
from cunumpy.kernels import fuse


@fuse
def update(x, v, dt):
    return x + dt * v


x = xp.asarray(np.arange(4.0))
v = xp.asarray(np.ones(4))
r = update(x, v, 0.5)
print(xp.get_array_backend(r), xp.to_numpy(r).tolist(), update(1.0, 2.0, 0.5))
