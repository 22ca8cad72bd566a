"""Let cunumpy write the first CUDA version of a host kernel.

`generate_cuda` translates the typed host kernel below into a CUDA C kernel with the same name
and arguments: the particle loop becomes one thread per particle and the `+=` into the grid, which
other particles may hit too, an atomic add; over a grid, the nest of loops `smooth` runs is
collapsed into one thread per grid point. A `Kernel` pairs the two: the host version on NumPy,
the generated one on CuPy (or the emulated device: `CUNUMPY_FAKE_CUPY=1 CUNUMPY_BACKEND=cupy`).
On a device, `tuned_kernel` times the generated source's candidate builds on the call's data, and
`Kernel.tune` keeps the fastest as a `Kernel`'s generated CUDA version.
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


def smooth(a: "float[:,:]", out: "float[:,:]"):
    """The mean of each interior point and its four neighbours."""
    for i in range(1, a.shape[0] - 1):
        for j in range(1, a.shape[1] - 1):
            s = a[i, j] + a[i - 1, j] + a[i + 1, j] + a[i, j - 1] + a[i, j + 1]
            out[i, j] = 0.2 * s


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
    if xp.get_backend() == "cupy":  # the candidate builds run where CUDA kernels run
        src.tuned_kernel(x, w, rho, 1.0 / 32, repeats=3)
        print(f"fastest build here: {src.tuning['chosen']}")
        # each try added into rho; what the kernel writes is put back after every one
        print(f"after tuning: total charge {float(xp.sum(rho)):.6f}")
        # the same through a Kernel that generates its CUDA version: tune before its first
        # device call, and every later call runs the chosen build
        tuned = Kernel(deposit, missing_cuda="generate")
        tuned.tune(x, w, rho, 1.0 / 32, repeats=3)
        rho[...] = 0.0
        tuned(x, w, rho, 1.0 / 32)
        print(
            f"Kernel.tune kept {tuned.generated_cuda.tuning['chosen']!r}: "
            f"total charge {float(xp.sum(rho)):.6f}"
        )
    grid = generate_cuda(smooth)
    print(grid.describe())  # loops (i, j) collapsed: one thread per interior point
    a = xp.ones((64, 48))
    out = xp.zeros((64, 48))
    Kernel(smooth, grid.cuda_kernel())(a, out)
    print(f"smooth: {grid.n_threads_of((a, out))} threads, sum {float(xp.sum(out)):.1f}")


if __name__ == "__main__":
    main()
