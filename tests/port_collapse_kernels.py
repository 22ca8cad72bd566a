"""Grid kernels in struphy's and feectools' style (a nest of loops over the points of a grid)
for the loop collapsing of ``xp.kernels.generate_cuda``: the perfect nest of independent loops
under the parallel one runs as one flat thread index, as deep as every write stays owned by
one iteration of the nest. Plain Python: the host versions are the reference the generated
CUDA is compared with."""

import numpy as np


def scale_2d(a: "float[:,:]", b: "float[:,:]", c: float):
    """Collapsed: (i, j), one thread per element of ``b``."""
    n1 = a.shape[0]
    n2 = a.shape[1]
    for i in range(n1):
        for j in range(n2):
            b[i, j] = c * a[i, j] + i - 2 * j


def shifted_3d(x: "float[:,:,:]", out: "float[:,:,:]", s: "int[:]", e: "int[:]", p: "int[:]"):
    """Collapsed: (i1, i2, i3), a local row index between the levels, a range with a start
    and one with a step; the element of each axis is its variable plus an invariant offset."""
    for i1 in range(s[0], e[0] + 1):
        i1_loc = i1 - s[0]
        for i2 in range(s[1], e[1] + 1):
            for i3 in range(s[2], e[2] + 1, 2):
                v = x[p[0] + i1_loc, p[1] + i2 - s[1], p[2] + i3 - s[2]]
                out[p[0] + i1_loc, p[1] + i2 - s[1], p[2] + i3 - s[2]] = 2.0 * v + i1_loc


def row_dot(m: "float[:,:,:]", v: "float[:]", out: "float[:,:]"):
    """Collapsed down to the sum: (i, j); the loop over k adds into the local ``s``."""
    for i in range(m.shape[0]):
        for j in range(m.shape[1]):
            s = 0.0
            for k in range(m.shape[2]):
                s += m[i, j, k] * v[k]
            out[i, j] = s


def tensor_fixed(b1s: "float[:,:]", b2s: "float[:,:]", c: "float[:,:]", out: "float[:,:]"):
    """Collapsed: (i, j); a local array filled between the levels (each thread its own)."""
    b1 = np.empty(b1s.shape[1], dtype=float)
    for i in range(b1s.shape[0]):
        b1[:] = b1s[i, :]
        for j in range(b2s.shape[0]):
            val = 0.0
            for a in range(b1s.shape[1]):
                for b in range(b2s.shape[1]):
                    val += b1[a] * b2s[j, b] * c[a, b]
            out[i, j] = val


def histogram_2d(cell: "int[:,:]", w: "float[:,:]", hist: "float[:]"):
    """Collapsed: (i, j); the += into ``hist`` is an atomic add either way."""
    for i in range(cell.shape[0]):
        for j in range(cell.shape[1]):
            hist[cell[i, j]] += w[i, j]


def last_in_row(m: "float[:,:]", last: "float[:]", twice: "float[:,:]"):
    """Not collapsed: ``last[i]`` is written by every j of row i (in order: the last wins)."""
    for i in range(m.shape[0]):
        for j in range(m.shape[1]):
            twice[i, j] = 2.0 * m[i, j]
            last[i] = m[i, j]


def row_totals(m: "float[:,:]", tot: "float[:]"):
    """Not collapsed: ``tot[i] +=`` is owned by row i; collapsed it would be an atomic add."""
    for i in range(m.shape[0]):
        for j in range(m.shape[1]):
            tot[i] += m[i, j]


def lower_triangle(m: "float[:,:]"):
    """Not collapsed: the inner bound depends on the outer variable."""
    for i in range(m.shape[0]):
        for j in range(i + 1):
            m[i, j] = 2.0 * m[i, j] + 1.0


def diag_rows_3d(x: "float[:,:,:]", out: "float[:,:,:]", e: "int[:]"):
    """Collapsed: (i1, i2, i3); a level sets its locals, with an ``if`` for the last row
    (feectools' stencil_dot_3d style), before the next loop."""
    for i1 in range(x.shape[0]):
        for i2 in range(x.shape[1]):
            w2 = 1.0
            if i2 == e[1]:
                w2 = 0.5
            for i3 in range(x.shape[2]):
                w3 = w2
                if i3 == e[2]:
                    w3 = 2.0 * w2
                out[i1, i2, i3] = w3 * x[i1, i2, i3] + i1


def carried_level(x: "float[:,:]", out: "float[:,:]"):
    """Not collapsed: the inner loop changes ``w``, set by the outer level, for its next
    iteration."""
    for i in range(x.shape[0]):
        w = 1.0
        for j in range(x.shape[1]):
            out[i, j] = w * x[i, j]
            w = 2.0 * w


def masked_3d(a: "float[:,:,:]", m1: "float[:]", m3: "float[:]", out: "float[:,:,:]"):
    """Collapsed: (i, j, k); a ``continue`` at a level skips the points below it, in the flat
    index the thread's point (struphy's eval_spline_mpi_sparse_meshgrid style)."""
    for i in range(a.shape[0]):
        if m1[i] < 0.0:
            continue
        for j in range(a.shape[1]):
            for k in range(a.shape[2]):
                if m3[k] < 0.0:
                    continue
                out[i, j, k] = a[i, j, k] * m1[i] + m3[k]


def weighted_row(b: "float[:]", c: "float[:,:]", j: int) -> float:
    s = 0.0
    for a in range(b.shape[0]):
        s += b[a] * c[a, j]
    return s


def tensor_helper(b1s: "float[:,:]", c: "float[:,:]", out: "float[:,:]"):
    """Collapsed: (i, j); the local array a level fills is passed below to a helper that only
    reads it."""
    b1 = np.empty(b1s.shape[1], dtype=float)
    for i in range(b1s.shape[0]):
        b1[:] = b1s[i, :]
        for j in range(c.shape[1]):
            out[i, j] = weighted_row(b1, c, j)
