"""x[i] += 1 for i < n (plain Python). No CUDA version yet."""


def shift(x: "float[:]", n: int):
    for i in range(n):
        x[i] += 1.0
