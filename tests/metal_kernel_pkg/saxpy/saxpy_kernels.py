"""out[i] = a * x[i] + y[i] for i < n, on float32 arrays (Python; the reference version)."""


def saxpy(a, x, y, out, n):
    for i in range(n):
        out[i] = a * x[i] + y[i]
