"""x[i] *= a for i < n (Python; Pyccel-compilable)."""


def scale(x: "float[:]", a: float, n: int):
    for i in range(n):
        x[i] = a * x[i]
