"""Numba version of gather_field (same arguments)."""

import math

from numba import njit


@njit(cache=False)
def _gather(x, y, n, ex_grid, ey_grid, ex, ey, dx, dy):
    nx, ny = ex_grid.shape
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
        w00 = (1 - fx) * (1 - fy)
        w10 = fx * (1 - fy)
        w01 = (1 - fx) * fy
        w11 = fx * fy
        ex[i] = (
            w00 * ex_grid[i0, j0]
            + w10 * ex_grid[i1, j0]
            + w01 * ex_grid[i0, j1]
            + w11 * ex_grid[i1, j1]
        )
        ey[i] = (
            w00 * ey_grid[i0, j0]
            + w10 * ey_grid[i1, j0]
            + w01 * ey_grid[i0, j1]
            + w11 * ey_grid[i1, j1]
        )


def gather_field(p, ex_grid, ey_grid, ex, ey, dx: float, dy: float):
    _gather(p.x, p.y, p.n, ex_grid, ey_grid, ex, ey, dx, dy)
