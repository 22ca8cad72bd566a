"""A Kernel without a CUDA version: the host kernel on NumPy, the fallback on the device."""

import warnings

import numpy as np

import cunumpy as xp
from cunumpy.kernels import Kernel


def add_one(x: "float[:]", n: int):
    for i in range(n):
        x[i] += 1.0


k = Kernel(add_one, missing_cuda="fallback", host_options={"outputs": (0,)})
print(k.name, k.has_cuda, k.implementations, k.missing_cuda, k.dispatch)
x = xp.asarray(np.zeros(3))
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    k(x, 3)
    k(x, 3)
print(xp.to_numpy(x).tolist(), sorted({w.category.__name__ for w in caught}))
print(k.selected(), k.selected(device=True))
strict = Kernel(add_one)
if xp.get_backend() == "cupy":
    try:
        strict(x, 3)
    except NotImplementedError as error:
        print("NotImplementedError", "No CUDA version" in str(error))
else:
    strict(x, 3)
    print(xp.to_numpy(x).tolist())
