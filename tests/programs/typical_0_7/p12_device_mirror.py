"""DeviceMirror: a host array with a device copy kept in step."""

import numpy as np

import cunumpy as xp
from cunumpy.memory import DeviceMirror

host = np.arange(4.0)
m = DeviceMirror(host)
print(m.shape, m.dtype, m.host is host)
m.to_device()
m.device[...] = m.device * 10
m.to_host()
print(host.tolist(), xp.get_array_backend(m.device))
m.zero()
print(host.tolist(), xp.to_numpy(m.device).tolist())
