"""Host kernels in struphy's style (Pyccel annotations, a loop over markers or cells, helpers,
small local arrays, ``+=`` into a grid) for the tests of ``xp.kernels.generate_cuda``. Plain
Python: the host versions are the reference the generated CUDA is compared with."""

import math

import numpy as np


def cross(a: "float[:]", b: "float[:]", out: "float[:]"):
    out[0] = a[1] * b[2] - a[2] * b[1]
    out[1] = a[2] * b[0] - a[0] * b[2]
    out[2] = a[0] * b[1] - a[1] * b[0]


def norm3(v: "float[:]") -> float:
    return math.sqrt(v[0] ** 2 + v[1] ** 2 + v[2] ** 2)


def push_v_rotation(markers: "float[:,:]", b0: "float[:]", dt: float, n_markers: int):
    """Rotates the velocity of every live marker about b0 and moves it along x."""
    v = np.empty(3)
    w = np.empty(3)
    for ip in range(n_markers):
        # holes in the marker array are flagged by a negative weight
        if markers[ip, 6] < 0.0:
            continue
        for k in range(3):
            v[k] = markers[ip, 3 + k]
        cross(v, b0, w)
        nb = norm3(b0)
        s = dt / (1.0 + (dt * nb) ** 2)
        for k in range(3):
            markers[ip, 3 + k] = v[k] + s * w[k]
        markers[ip, 0] = markers[ip, 0] + dt * markers[ip, 3]


def deposit_1d(markers: "float[:,:]", n_markers: int, grid: "float[:]", dx: float):
    """Linear (cloud-in-cell) deposit of the marker weights on a periodic 1-D grid."""
    nx = grid.shape[0]
    for ip in range(n_markers):
        x = markers[ip, 0] / dx
        i0 = int(math.floor(x))
        f = x - i0
        grid[i0 % nx] += markers[ip, 6] * (1.0 - f)
        grid[(i0 + 1) % nx] -= -markers[ip, 6] * f


def deposit_2d(
    xs: "float[:]", ys: "float[:]", w: "float[:]", rho: "float[:,:]", dx: float, dy: float
):
    nx, ny = rho.shape
    for ip in range(xs.shape[0]):
        gx = xs[ip] / dx
        gy = ys[ip] / dy
        i0 = int(math.floor(gx))
        j0 = int(math.floor(gy))
        fx = gx - i0
        fy = gy - j0
        i0 %= nx
        j0 %= ny
        i1 = (i0 + 1) % nx
        j1 = (j0 + 1) % ny
        rho[i0, j0] += w[ip] * (1 - fx) * (1 - fy)
        rho[i1, j0] += w[ip] * fx * (1 - fy)
        rho[i0, j1] += w[ip] * (1 - fx) * fy
        rho[i1, j1] += w[ip] * fx * fy


def hat(x: float) -> float:
    ax = abs(x)
    if ax < 1.0:
        return 1.0 - ax
    return 0.0


def eval_field(xs: "float[:]", coef: "float[:]", out: "float[:]", h: float):
    """A field given by hat-function coefficients, evaluated at every point (a while loop)."""
    m = coef.shape[0]
    for i in range(xs.shape[0]):
        acc = 0.0
        j = 0
        while j < m:
            acc += coef[j] * hat(xs[i] / h - j)
            j += 1
        out[i] = acc if acc > 0.0 else 0.0


def cell_update(a: "float[:,:]", b: "float[:,:]", c: float):
    """Per-cell update of a 2-D grid (rows in parallel, columns in a loop)."""
    nx = a.shape[0]
    ny = a.shape[1]
    for i in range(nx):
        for j in range(ny):
            if j % 2 == 0 and a[i, j] > 0.0:
                b[i, j] = c * math.exp(-a[i, j]) + max(a[i, j], 0.5)
            elif j % 3 == 1:
                b[i, j] = min(a[i, j], c) - 2.0 ** a[i, j]
            else:
                b[i, j] = a[i, j] // 0.25 + a[i, j] % 0.3


def python_int_semantics(k: "int[:]", out: "int[:,:]", d: int):
    """% and // of negative integers round toward minus infinity in Python, not in C."""
    for i in range(1, k.shape[0], 2):
        out[i, 0] = k[i] % d
        out[i, 1] = k[i] // d
        out[i, 2] = (-k[i]) % d + abs(k[i]) ** 2


# Kernels the translator must refuse.


def shift_left(a: "float[:]", n: int):
    for i in range(n - 1):
        a[i] = a[i + 1]


def scatter_assign(idx: "int[:]", vals: "float[:]", out: "float[:]", n: int):
    for i in range(n):
        out[idx[i]] = vals[i]


def total_charge(w: "float[:]", out: "float[:]"):
    s = 0.0
    for i in range(w.shape[0]):
        s += w[i]
    out[0] = s


def deposit_then_read(x: "float[:]", grid: "float[:]", out: "float[:]"):
    for i in range(x.shape[0]):
        grid[int(x[i])] += 1.0
        out[i] = grid[int(x[i])]


def stencil_rows(x: "float[:]", out: "float[:]", s: int, e: int, p: int):
    """Rows s..e of a 3-point stencil, written at an offset (struphy's stencil_dot style)."""
    for i1 in range(s, e + 1):
        i1_loc = i1 - s
        val = 0.0
        for d in range(3):
            val += x[i1 + d]
        out[p + i1_loc] = val


def local_offset(out: "float[:]", n: int):
    """Refused: the offset k[0] is a local array element that changes every iteration."""
    k = np.zeros(1, dtype=int)
    for i in range(n):
        k[0] = i % 3
        out[i + k[0]] = 1.0


class GridArguments:
    """A Pyccel argument class in the style of struphy's ``DomainArguments``: the kernel names
    it in an annotation, and the generated kernel takes it as a struct laid out by
    ``CudaStruct.from_pyccel_class`` (a 2-D array field becomes a ``CArray2D`` view)."""

    def __init__(self, coef: "float[:,:]", h: float, nx: int, shift: "int[:]"):
        self.coef = coef
        self.h = h
        self.nx = nx
        self.shift = shift
        self.n_cells = coef.shape[0]  # derived: an extra integer field of the struct


def eval_on_grid(xs: "float[:,:]", args: "GridArguments", out: "float[:]", n: int):
    """Nearest-cell value of a 2-D coefficient array at every marker, scaled by its weight."""
    for ip in range(n):
        i = int(xs[ip, 0] / args.h)
        j = (i + args.shift[0]) % args.nx
        if i >= args.n_cells:
            i = args.n_cells - 1
        out[ip] = args.coef[i, j] * xs[ip, 1]


def deposit_on_grid(xs: "float[:,:]", args: "GridArguments", n: int):
    """``+=`` of marker weights into the 2-D array field of a struct argument (atomic), through
    a local name for the field (``coef = args.coef``, as struphy's pushers do)."""
    coef = args.coef
    for ip in range(n):
        i = int(xs[ip, 0] / args.h)
        if i >= args.nx:
            i = args.nx - 1
        coef[i, ip % 3] += xs[ip, 1]


def stencil_rows_2d(
    mat: "float[:,:,:]", x: "float[:,:]", out: "float[:,:]", s: "int[:]", e: "int[:]", p: "int[:]"
):
    """feectools' stencil_dot_2d style: the local row indices are computed inside the inner
    loop (so the two loops can be collapsed), and the write is offset by the pads."""
    n_d = mat.shape[2]
    for i1 in range(s[0], e[0] + 1):
        for i2 in range(s[1], e[1] + 1):
            i1_loc = i1 - s[0]
            i2_loc = i2 - s[1]
            nd = n_d
            if i2 == e[1]:
                nd = n_d - 1
            val = 0.0
            for d in range(nd):
                val += mat[p[0] + i1_loc, i2_loc, d] * x[i1 + d, i2]
            out[p[0] + i1_loc, p[1] + i2_loc] = val


def conditional_index(c: "float[:]", out: "float[:]", n: int):
    """Refused: where c[i] <= 0, j is the previous iteration's value (a carried scalar)."""
    for i in range(n):
        if c[i] > 0.0:
            j = i
        out[j] = 1.0


def dot_sum(a: "float[:]", b: "float[:]", lo: int, res: "float[:]"):
    """A sum over the parallel loop (feectools' stencil_inner_1d style), added to res[0]."""
    n = np.shape(a)[0]
    s = a[0] - a[0] + 0.5
    for i in range(lo, n):
        s += a[i].conjugate() * b[i]
        if a[i] > 0.5:
            s -= 0.25
    res[0] += s


def running_sum(a: "float[:]", out: "float[:]"):
    """Refused: the sum is read inside the loop (a scan, not a reduction)."""
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i]
        out[i] = s


def sum_then_assign(a: "float[:]", res: "float[:]"):
    """Refused: the sum is assigned (not added) after the loop."""
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i]
    res[0] = s


def sum_into_written(a: "float[:]", res: "float[:]"):
    """Refused: the sum is added into an array the loop also writes."""
    s = 0.0
    for i in range(1, a.shape[0]):
        s += a[i]
        res[i] = a[i]
    res[0] += s


from typing import TypeVar  # noqa: E402 - kept below so the line numbers above stay put

T = TypeVar("T", float, complex)


def axpy_generic(alpha: "T", x: "T[:,:]", y: "T[:,:]"):
    """feectools' generic stencil_axpy_2d: T is instantiated for float."""
    n0, n1 = x.shape
    for i0 in range(n0):
        for i1 in range(n1):
            y[i0, i1] += alpha * x[i0, i1]


def last_columns(m: "float[:,:]", out: "float[:]"):
    """Negative indices, a local numpy import, numpy's shape() kept in a name and size()
    (struphy's kernel_pullpush and eval_spline_mpi_matrix style)."""
    from numpy import size

    shp = np.shape(m)
    for i in range(shp[0]):
        out[i] = m[i, -1] * size(out) + m[i, -2] + shp[-1]


def push_slices(markers: "float[:,:]", alpha: "float[:]", dt: float, n: int):
    """The slice assignments of struphy's pushers (one column per marker): a column into a
    local vector, arithmetic of slices and whole local arrays, np.mod, += into a slice."""
    v = np.empty(3)
    eta = np.zeros(3)
    for ip in range(n):
        v[:] = markers[3:6, ip]
        eta[:] = alpha[:3] * markers[0:3, ip] + (1.0 - alpha[:3]) * v
        eta[:] = np.mod(eta, 1.0)
        markers[0:3, ip] = eta[:]
        markers[3:6, ip] += dt * v


def shift_slice(a: "float[:,:]", n: int):
    """The right-hand side reads other elements of the array it writes (a buffer first)."""
    for i in range(n):
        a[1:4, i] = a[0:3, i]


def scale_blocks(mats: "float[:,:,:]", n: int):
    """2-D slices (kernel_evaluate's ``out[:] = mat_f[i1, i2, i3, :, :]``): a block into a
    local array and back, ``blk[:]`` of a 2-D array meaning all of it, as in NumPy."""
    blk = np.zeros((2, 3))
    for i in range(n):
        blk[:] = mats[i, :, :]
        blk[:, :] = blk * 2.0 + 1.0
        mats[i, :, :] = blk


import port_helpers as ph  # noqa: E402 - kept below so the line numbers above stay put
from port_helpers import cell_of  # noqa: E402


def norms_other_module(xs: "float[:,:]", out: "float[:]", s: float):
    """Helpers of another module, by module alias and by name (and one they call in turn)."""
    for i in range(xs.shape[0]):
        out[i] = ph.scaled_norm(xs[i, 0], xs[i, 1], s) + cell_of(xs[i, 0], 0.25)


def grid_other_module(xs: "float[:,:]", args: "GridArguments", out: "float[:]", n: int):
    """A struct argument, and an array field of it, passed on to another module's helpers."""
    for ip in range(n):
        i = ph.cell_of(xs[ip, 0], args.h) % args.nx
        out[ip] = ph.read_coef(args, i, ip % 3) * xs[ip, 1] + ph.coef_at(args.coef, i, 0)


def bump_other_module(args: "GridArguments", n: int):
    """Refused: the helper writes the struct's array where the kernel cannot see which element."""
    for ip in range(n):
        ph.bump(args, ip % 4)


def window_sums(x: "float[:,:]", out: "float[:]", p: int):
    """A local array sized at run time (struphy's ``zeros(p + 1)`` spline buffers)."""
    for i in range(x.shape[0]):
        buf = np.zeros(p + 1)
        for k in range(p + 1):
            buf[k] = x[i, k] * (k + 1)
        s = 0.0
        for k in range(p + 1):
            s += buf[k]
        out[i] = s


def row_sums(m: "float[:,:,:]", rows: "int[:]", out: "float[:,:]"):
    """A local name for a row of an array (struphy's ``tmp1 = ind1[span1 - p, :]``)."""
    for i in range(out.shape[0]):
        r = rows[i]  # an element, not a view
        for j in range(out.shape[1]):
            row = m[r, j, :]
            s = 0.0
            for k in range(row.shape[0]):
                s += row[k] * (k + 1)
            out[i, j] = s


def write_row(m: "float[:,:]", n: int):
    """Refused: a write through a view of another array."""
    for i in range(n):
        row = m[i, :]
        row[0] = 1.0


def shift_through_view(m: "float[:,:]", n: int):
    """Refused: the right-hand side reads a view of the target's own row."""
    for i in range(n):
        row = m[i, :]
        m[i, 1:3] = row[0:2]


class BasisArguments:
    """A Pyccel argument class with a scratch array its ``__init__`` allocates (struphy's
    ``SplineArguments`` and ``DerhamArguments`` keep the spline values of the current point in
    ``bn1``, ...): ``w`` is no field of the struct; every thread of the generated kernel has
    its own."""

    def __init__(self, coef: "float[:]", p: "int[:]"):
        self.coef = coef
        self.p = p
        self.w = np.empty(int(p[0] + 1), dtype=float)


def fill_weights(t: float, p: int, w: "float[:]"):
    for k in range(p + 1):
        w[k] = (t + 1.0) * (k + 1) - t * t


def fill_basis(x: float, args: "BasisArguments") -> int:
    """Writes the scratch field (passed whole to a helper), returns the first index."""
    i = int(x * 4.0)
    fill_weights(x - 0.25 * i, args.p[0], args.w)
    return i


def combine(i: int, args: "BasisArguments") -> float:
    """Reads the scratch field through a local name, as struphy's ``b1 = args_spline.bn1``."""
    b = args.w
    s = 0.0
    for k in range(args.p[0] + 1):
        s += args.coef[i + k] * b[k]
    return s


def eval_basis(xs: "float[:]", args: "BasisArguments", out: "float[:]", n: int):
    """A struct parameter with a scratch field, passed whole to helpers that write and read it."""
    for ip in range(n):
        i = fill_basis(xs[ip], args)
        out[ip] = combine(i, args)


def eval_basis_copy(xs: "float[:]", args: "BasisArguments", out: "float[:]", n: int):
    """The per-thread copy of struphy's pushers (``thread_derham = DerhamArguments(
    args_derham.pn, ...)``): in the generated kernel, the parameter itself."""
    thread_args = BasisArguments(args.coef, args.p)
    for ip in range(n):
        i = fill_basis(xs[ip], thread_args)
        out[ip] = combine(i, thread_args) * args_scale(ip)


def args_scale(ip: int) -> float:
    return 1.0 + 0.5 * (ip % 3)


def fill_coef(x: float, args: "BasisArguments") -> int:
    """Writes the struct's shared array field through a helper (a race in a parallel loop)."""
    fill_weights(x, args.p[0], args.coef)
    return 0


def eval_basis_writes_coef(xs: "float[:]", args: "BasisArguments", n: int):
    """Refused: a helper writes the array field ``coef`` that every marker shares."""
    for ip in range(n):
        fill_coef(xs[ip], args)


def eval_basis_copy_and_param(xs: "float[:]", args: "BasisArguments", out: "float[:]", n: int):
    """Refused: the copy and the parameter both used (their scratch arrays would be one)."""
    thread_args = BasisArguments(args.coef, args.p)
    for ip in range(n):
        i = fill_basis(xs[ip], thread_args)
        out[ip] = combine(i, thread_args) + combine(i, args)


def cell_and_fraction(x: float, y: float, n: int):
    """Returns a tuple of scalars (struphy's ``span1, span2, span3 = get_spans(...)``)."""
    i = int(x * n)
    j = int(y * n)
    if i >= n:
        return n - 1, j, 0  # an int here, a float below: the third is a double
    return i, j, x - i / n


def gather_at_cells(xs: "float[:,:]", grid: "float[:,:]", out: "float[:]", n: int):
    for ip in range(xs.shape[0]):
        i, j, frac = cell_and_fraction(xs[ip, 0], xs[ip, 1], n)
        out[ip] = grid[i, j] * (1.0 + frac)


def tuple_as_value(xs: "float[:,:]", out: "float[:]", n: int):
    """Refused: the tuple a helper returns used other than unpacked."""
    for ip in range(xs.shape[0]):
        t = cell_and_fraction(xs[ip, 0], xs[ip, 1], n)
        out[ip] = t


class PatchArguments:
    """A Pyccel argument class with a 3-D array field, read through 2-D strided views (struphy's
    ``cx = args.cx[:, :, 0]`` in ``spline_2d_straight``)."""

    def __init__(self, c: "float[:,:,:]", h: float):
        self.c = c
        self.h = h


def eval_2d(i: int, j: int, c2: "float[:,:]") -> float:
    return c2[i, j] + 0.5 * c2[i + 1, j] - c2[0, c2.shape[1] - 1]


def patch_value(x: float, args: "PatchArguments") -> float:
    from numpy import pi

    cz = args.c[:, :, 1]  # the whole leading axes, an index on the last
    cm = args.c[:, 2, :]  # an index on the middle axis
    i = int(x / args.h)
    return eval_2d(i, i % 2, cz) * pi + eval_2d(i, 1, cm)


def eval_patch(xs: "float[:]", args: "PatchArguments", out: "float[:]", n: int):
    for ip in range(n):
        out[ip] = patch_value(xs[ip], args)


def write_patch_view(args: "PatchArguments", n: int):
    """Refused: a write through a strided view."""
    for ip in range(n):
        cz = args.c[:, :, 1]
        cz[ip, 0] = 1.0


def scale_cells(args: "GridArguments", f: float):
    """A loop over a struct's integer field, writing the struct's array field (an output)."""
    for c in range(args.n_cells):
        args.coef[c, 1] = args.coef[c, 0] * args.h * f


def eval_basis_two(xs: "float[:]", a: "BasisArguments", b: "BasisArguments", out: "float[:]"):
    """Two arguments of one struct class with scratch: one struct declaration, each its own
    per-thread scratch."""
    for ip in range(xs.shape[0]):
        i = fill_basis(xs[ip], a)
        j = fill_basis(0.5 * xs[ip], b)
        out[ip] = combine(i, a) - 2.0 * combine(j, b)


def eval_basis_direct(xs: "float[:]", args: "BasisArguments", out: "float[:]", n: int):
    """The kernel itself fills and reads the scratch field."""
    for ip in range(n):
        fill_weights(xs[ip], args.p[0], args.w)
        out[ip] = args.w[0] - args.w[args.p[0]]


def python_int_powers_of_two(k: "int[:]", out: "int[:,:]"):
    """// and % by a constant power of two (a shift and a mask in CUDA) round as Python does
    for negative integers too."""
    for i in range(k.shape[0]):
        out[i, 0] = k[i] // 2
        out[i, 1] = k[i] % 2
        out[i, 2] = (k[i] - 37) // 8 + (k[i] - 37) % 8 * 100
        out[i, 3] = k[i] // 1 + k[i] % 1
