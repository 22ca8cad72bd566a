"""Boris push in a uniform magnetic field bz along z and a per-particle electric field."""

import math


def boris_push(p, ex, ey, bz: float, qm: float, dt: float, lx: float, ly: float):
    """Advances velocities (Boris rotation) and positions (periodic box lx x ly) by dt."""
    h = 0.5 * qm * dt
    tz = h * bz
    sz = 2.0 * tz / (1.0 + tz * tz)
    for i in range(p.n):
        vx = p.vx[i] + h * ex[i]
        vy = p.vy[i] + h * ey[i]
        px = vx + vy * tz
        py = vy - vx * tz
        vx = vx + py * sz
        vy = vy - px * sz
        vx = vx + h * ex[i]
        vy = vy + h * ey[i]
        p.vx[i] = vx
        p.vy[i] = vy
        x = p.x[i] + vx * dt
        y = p.y[i] + vy * dt
        p.x[i] = x - lx * math.floor(x / lx)
        p.y[i] = y - ly * math.floor(y / ly)
