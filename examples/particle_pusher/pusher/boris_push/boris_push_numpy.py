"""Vectorised NumPy version of boris_push (same arguments)."""

import numpy as np


def boris_push(p, ex, ey, bz: float, qm: float, dt: float, lx: float, ly: float):
    h = 0.5 * qm * dt
    tz = h * bz
    sz = 2.0 * tz / (1.0 + tz * tz)
    vx = p.vx + h * ex
    vy = p.vy + h * ey
    px = vx + vy * tz
    py = vy - vx * tz
    vx = vx + py * sz
    vy = vy - px * sz
    p.vx[:] = vx + h * ex
    p.vy[:] = vy + h * ey
    x = p.x + p.vx * dt
    y = p.y + p.vy * dt
    p.x[:] = x - lx * np.floor(x / lx)
    p.y[:] = y - ly * np.floor(y / ly)
