"""to_numpy / to_cunumpy / as_device_array, with keyword arguments as documented."""

import numpy as np

import cunumpy as xp

h = np.arange(6.0).reshape(2, 3)
d = xp.to_cunumpy(h)
print(xp.get_array_backend(d), xp.to_numpy(array=d).tolist())
print(xp.to_numpy(h) is h)
print(xp.get_array_module(d).__name__.split(".")[-1])
print(xp.is_gpu(array=d), xp.is_cpu(array=h))
if xp.get_backend() == "numpy":
    try:
        xp.as_device_array(h, name="h")
    except RuntimeError as error:
        print("RuntimeError", "never copied to the device" in str(error))
else:
    same = xp.as_device_array(d)
    print("same object", same is d)
    copied = xp.as_device_array([1, 2, 3], dtype=np.float64, ndim=1, name="v")
    print(xp.to_numpy(copied).tolist())
    try:
        xp.as_device_array(d, ndim=1, name="d")
    except ValueError as error:
        print("ValueError", "must have 1 dimension" in str(error))
