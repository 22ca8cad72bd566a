"""Counting host-device transfers of a block."""

import numpy as np

import cunumpy as xp
from cunumpy.profiling import assert_no_transfers, count_transfers

with count_transfers() as c:
    d = xp.asarray(np.ones(8))
    s = xp.to_numpy(d * 2)
print(c.to_device, c.to_host, c.bytes_to_device, c.bytes_to_host, s.tolist())
with assert_no_transfers():
    e = d + 1
print(xp.get_array_backend(e))
if xp.get_backend() == "cupy":
    try:
        with assert_no_transfers():
            xp.to_numpy(e)
    except AssertionError:
        print("AssertionError")
