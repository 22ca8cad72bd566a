"""The host twins of random.cuh's Philox functions (values as on the device)."""

import numpy as np

import cunumpy as xp

ids = np.arange(4, dtype=np.uint64)
print(xp.to_numpy(xp.rng.philox_uniform(42, ids, 0)).tolist())
print(xp.to_numpy(xp.rng.philox_normal(42, ids, 1)).tolist())
u0, u1 = xp.rng.philox_uniform2(42, ids, 2)
print(xp.to_numpy(u0).tolist(), xp.to_numpy(u1).tolist())
words = xp.rng.philox4x32_10(np.arange(4, dtype=np.uint32), 1, 2)
print([int(v) for v in xp.to_numpy(words).ravel()])
