"""out[0] = sum of x[i]**2 for i < n (Python; Pyccel-compilable). No CUDA version yet."""

from typing import Final


def square_sum(x: "Final[float[:]]", out: "float[:]", n: int):
    total = 0.0
    for i in range(n):
        total += x[i] * x[i]
    out[0] = total
