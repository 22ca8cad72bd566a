"""The particle code's data: particles, the host library that owns the charge grid, and the
device argument struct that mirrors the host argument class."""

from __future__ import annotations

import numpy as np

import cunumpy as xp
from cunumpy.arguments import CudaStructArguments


class ParticleArrays:
    """What the host kernels read: one array per particle quantity (the host argument class)."""

    def __init__(self, x, y, vx, vy, vz, w):
        self.x, self.y, self.vx, self.vy, self.vz, self.w = x, y, vx, vy, vz, w
        self.n = int(x.shape[0])


class DeviceParticles(CudaStructArguments):
    """The same particles as one `Particles` struct passed by value to the CUDA kernels
    (`pusher/particles.cuh`); same constructor as the host class."""

    struct_name = "Particles"
    fields = [
        ("x", "double*"),
        ("y", "double*"),
        ("vx", "double*"),
        ("vy", "double*"),
        ("vz", "double*"),
        ("w", "double*"),
        ("n", "long long"),
    ]

    def __init__(self, x, y, vx, vy, vz, w):
        self.x, self.y, self.vx, self.vy, self.vz, self.w = x, y, vx, vy, vz, w
        self.n = int(x.shape[0])


class GridLibrary:
    """Stands for a host library (a field solver) that owns its charge-density buffer: kernels
    must write into *this* NumPy array, not into a copy."""

    def __init__(self, nx: int, ny: int, lx: float, ly: float):
        self.nx, self.ny, self.lx, self.ly = nx, ny, lx, ly
        self.dx, self.dy = lx / nx, ly / ny
        self.rho = np.zeros((nx, ny))
        self.samples = 0
        self.rho_mean = np.zeros((nx, ny))

    def accumulate(self) -> None:
        """The library's own host work on the deposited density."""
        self.samples += 1
        self.rho_mean += (self.rho - self.rho_mean) / self.samples

    def electric_field(self, e0: float):
        """A static standing-wave field on the grid nodes (as arrays of the active backend)."""
        gx = np.arange(self.nx) * self.dx
        gy = np.arange(self.ny) * self.dy
        kx, ky = 2 * np.pi / self.lx, 2 * np.pi / self.ly
        ex = e0 * np.sin(kx * gx)[:, None] * np.cos(ky * gy)[None, :]
        ey = -e0 * np.cos(kx * gx)[:, None] * np.sin(ky * gy)[None, :]
        return xp.to_cunumpy(np.ascontiguousarray(ex)), xp.to_cunumpy(np.ascontiguousarray(ey))


def make_particles(n: int, lx: float, ly: float, seed: int = 0):
    """Uniformly placed particles with thermal velocities, on the active backend."""
    rng = np.random.default_rng(seed)
    host = [
        rng.uniform(0, lx, n),
        rng.uniform(0, ly, n),
        rng.normal(0, 0.05, n),
        rng.normal(0, 0.05, n),
        rng.normal(0, 0.05, n),
        np.full(n, 1.0 / n),
    ]
    arrays = [xp.to_cunumpy(a) for a in host]
    cls = DeviceParticles if xp.get_backend() == "cupy" else ParticleArrays
    return cls(*arrays)
