"""Vectorised NumPy version of gather_field (same arguments)."""

import numpy as np


def cic_weights(x, y, dx, dy, nx, ny):
    """Cell-in-cloud corner indices and weights of every particle (periodic grid)."""
    gx = x / dx
    gy = y / dy
    i0 = np.floor(gx)
    j0 = np.floor(gy)
    fx = gx - i0
    fy = gy - j0
    i0 = i0.astype(np.int64) % nx
    j0 = j0.astype(np.int64) % ny
    i1 = (i0 + 1) % nx
    j1 = (j0 + 1) % ny
    corners = ((i0, j0), (i1, j0), (i0, j1), (i1, j1))
    weights = ((1 - fx) * (1 - fy), fx * (1 - fy), (1 - fx) * fy, fx * fy)
    return corners, weights


def gather_field(p, ex_grid, ey_grid, ex, ey, dx: float, dy: float):
    nx, ny = ex_grid.shape
    corners, weights = cic_weights(p.x, p.y, dx, dy, nx, ny)
    ex[:] = sum(w * ex_grid[i, j] for (i, j), w in zip(corners, weights, strict=True))
    ey[:] = sum(w * ey_grid[i, j] for (i, j), w in zip(corners, weights, strict=True))
