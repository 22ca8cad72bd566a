"""Streams, events, staging and asynchronous copies to the host."""

import numpy as np

import cunumpy as xp
from cunumpy.memory import HostStaging

s = xp.cuda.create_stream()
ev = xp.cuda.record_event(stream=s)
xp.cuda.wait_event(ev)
a = xp.asarray(np.arange(6.0))
staging = HostStaging((6,), np.float64)
copies = [staging.copy(a * k) for k in (1, 2)]
print([c.result().tolist() for c in copies])
h = xp.to_host_async(a + 1)
print(type(h.result()).__name__, h.result().tolist())
with xp.cuda.stream() as st:
    b = a * 3
xp.synchronize()
print(xp.to_numpy(b).tolist())
