"""out[i] = a * x[i] + y[i] for i < n, in float32 (Python; the reference version)."""

from typing import Final


def saxpy(a: float, x: "Final[float32[:]]", y: "Final[float32[:]]", out: "float32[:]", n: int):
    for i in range(n):
        out[i] = a * x[i] + y[i]
