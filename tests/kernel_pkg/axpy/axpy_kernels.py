"""y[i] += a * x[i] for i < n (Python; Pyccel-compilable). ``x`` is read only
(``Final``)."""

from typing import Final


def axpy(a: float, x: "Final[float[:]]", y: "float[:]", n: int):
    for i in range(n):
        y[i] = y[i] + a * x[i]
