"""Numba version of deposit_charge (same arguments)."""

import math

from numba import njit


@njit(cache=False)
def _deposit(x, y, w, n, rho, dx, dy):
    nx, ny = rho.shape
    inv_area = 1.0 / (dx * dy)
    for i in range(n):
        gx = x[i] / dx
        gy = y[i] / dy
        i0 = int(math.floor(gx))
        j0 = int(math.floor(gy))
        fx = gx - i0
        fy = gy - j0
        i0 %= nx
        j0 %= ny
        i1 = (i0 + 1) % nx
        j1 = (j0 + 1) % ny
        q = w[i] * inv_area
        rho[i0, j0] += q * (1 - fx) * (1 - fy)
        rho[i1, j0] += q * fx * (1 - fy)
        rho[i0, j1] += q * (1 - fx) * fy
        rho[i1, j1] += q * fx * fy


def deposit_charge(p, rho, dx: float, dy: float):
    _deposit(p.x, p.y, p.w, p.n, rho, dx, dy)
