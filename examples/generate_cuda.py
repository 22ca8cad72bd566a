"""Let cunumpy write the first CUDA version of a host kernel.

`generate_cuda` translates the typed host kernel below into a CUDA C kernel with the same name
and arguments: the particle loop becomes one thread per particle and the `+=` into the grid, which
other particles may hit too, an atomic add. A `Kernel` pairs the two: the host version on NumPy,
the generated one on CuPy (or the emulated device: `CUNUMPY_FAKE_CUPY=1 CUNUMPY_BACKEND=cupy`).
"""

import math

import numpy as np

import cunumpy as xp
from cunumpy.kernels import Kernel, generate_cuda


def deposit(x: "float[:]", w: "float[:]", rho: "float[:]", dx: float):
    """Linear deposit of the particle weights w at positions x on a periodic grid."""
    n = rho.shape[0]
    for ip in range(x.shape[0]):
        g = x[ip] / dx
        i0 = int(math.floor(g))
        f = g - i0
        rho[i0 % n] += w[ip] * (1.0 - f)
        rho[(i0 + 1) % n] += w[ip] * f


def main() -> None:
    src = generate_cuda(deposit)
    print(src.describe())
    print(src)
    kernel = Kernel(deposit, src.cuda_kernel())
    rng = np.random.default_rng(0)
    x = xp.asarray(rng.uniform(0.0, 1.0, 1000))
    w = xp.ones(1000)
    rho = xp.zeros(32)
    kernel(x, w, rho, 1.0 / 32)
    print(f"backend {xp.get_backend()}: total charge {float(xp.sum(rho)):.6f}")


if __name__ == "__main__":
    main()
