"""Timing a region of a program."""

import cunumpy as xp
from cunumpy.profiling import timed_region

with timed_region("step") as t:
    a = xp.ones(1000) * 2
print(t.name, t.elapsed >= 0.0, float(xp.sum(a)))
