"""The Numba version of ``scale``."""

import numba


@numba.njit(cache=False)
def scale(x, a, n):
    for i in range(n):
        x[i] = a * x[i]
