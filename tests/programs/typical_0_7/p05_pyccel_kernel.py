"""A host kernel wrapped in PyccelKernel, called with backend arrays."""

import numpy as np

import cunumpy as xp
from cunumpy.kernels import PyccelKernel


def scale(x: "float[:]", factor: float, n: int):
    for i in range(n):
        x[i] *= factor


k = PyccelKernel(scale, outputs=(0,))
print(repr(k).split(",")[0], k.name, k.outputs)
x = xp.asarray(np.arange(4.0))
k(x, 3.0, 4)
print(xp.get_array_backend(x), xp.to_numpy(x).tolist())


def norm(x: "float[:]") -> float:
    return float(np.sqrt((x * x).sum()))


print(PyccelKernel(norm, outputs=())(xp.asarray(np.array([3.0, 4.0]))))
