"""Field at each particle: bilinear (cloud-in-cell) interpolation on a periodic grid."""

import math


def gather_field(p, ex_grid, ey_grid, ex, ey, dx: float, dy: float):
    """ex[i], ey[i] = the grid fields interpolated at particle i (reference: plain loops)."""
    nx, ny = ex_grid.shape
    for i in range(p.n):
        gx = p.x[i] / dx
        gy = p.y[i] / dy
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
