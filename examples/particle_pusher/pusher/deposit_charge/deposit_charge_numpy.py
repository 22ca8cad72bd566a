"""Vectorised NumPy version of deposit_charge (same arguments)."""

import numpy as np

from ..gather_field.gather_field_numpy import cic_weights


def deposit_charge(p, rho, dx: float, dy: float):
    nx, ny = rho.shape
    corners, weights = cic_weights(p.x, p.y, dx, dy, nx, ny)
    q = p.w / (dx * dy)
    flat = rho.reshape(-1)
    for (i, j), w in zip(corners, weights, strict=True):
        flat += np.bincount(i * ny + j, weights=q * w, minlength=nx * ny)
