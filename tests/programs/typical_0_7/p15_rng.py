"""Seeded random numbers: get_rng and random_streams (values must match 0.7 bit for bit)."""

import cunumpy as xp

rng = xp.rng.get_rng(1234)
print(xp.to_numpy(rng.random(3)).tolist())
xp.rng.random_streams.seed(7)
print(xp.to_numpy(xp.rng.random_streams.uniform(size=3)).tolist())
print(xp.to_numpy(xp.rng.random_streams.standard_normal(size=2)).tolist())
print(sorted(xp.rng.BIT_GENERATORS))
