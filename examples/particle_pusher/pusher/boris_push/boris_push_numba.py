"""Numba version of boris_push (same arguments)."""

import math

from numba import njit


@njit(cache=False)
def _push(x, y, vxs, vys, n, ex, ey, bz, qm, dt, lx, ly):
    h = 0.5 * qm * dt
    tz = h * bz
    sz = 2.0 * tz / (1.0 + tz * tz)
    for i in range(n):
        vx = vxs[i] + h * ex[i]
        vy = vys[i] + h * ey[i]
        px = vx + vy * tz
        py = vy - vx * tz
        vx = vx + py * sz
        vy = vy - px * sz
        vx = vx + h * ex[i]
        vy = vy + h * ey[i]
        vxs[i] = vx
        vys[i] = vy
        xn = x[i] + vx * dt
        yn = y[i] + vy * dt
        x[i] = xn - lx * math.floor(xn / lx)
        y[i] = yn - ly * math.floor(yn / ly)


def boris_push(p, ex, ey, bz: float, qm: float, dt: float, lx: float, ly: float):
    _push(p.x, p.y, p.vx, p.vy, p.n, ex, ey, bz, qm, dt, lx, ly)
