"""Host kernels with local ``zeros`` arrays, for the tests of the translator's dead-fill proof
(``crates/cunumpy-port/src/dead_fill.rs``): in ``bspline_values`` the recurrence writes
``left[j]`` and ``right[j]`` at the top of iteration ``j`` and reads only ``[0, j]``, and in
``rows_via_helper`` the zeros go to a helper that overwrites them whole (``dst[:] = ...``), so no
read can see the zeros and the generated CUDA leaves the fills out; in the other kernels a read
can see them (a zero read in the first iteration, an element read after the loop, an element the
loop skips, the array handed to a helper that reads it, or writes only part of it, a write under
a condition), so the fills stay.
``CASES``: label -> (kernel, arguments for its parity test)."""

import numpy as np
from numpy import zeros

import cunumpy as xp


def bspline_values(knots: "float[:]", degree: int, x: "float[:]", out: "float[:,:]"):
    """The degree + 1 non-zero B-splines at each x (Cox-de Boor), as struphy's
    ``b_d_splines_slim``, with a fixed knot span."""
    for i in range(x.shape[0]):
        span = degree + 2
        left = zeros(degree, dtype=float)
        right = np.zeros(degree, dtype=float)
        out[i, 0] = 1.0
        for j in range(degree):
            left[j] = x[i] - knots[span - j]
            right[j] = knots[span + 1 + j] - x[i]
            saved = 0.0
            for r in range(j + 1):
                temp = out[i, r] / (right[r] + left[j - r])
                out[i, r] = saved + right[r] * temp
                saved = left[j - r] * temp
            out[i, j + 1] = saved


def reads_ahead(x: "float[:]", out: "float[:]", n: int):
    """Reads acc[j + 1] before iteration j + 1 writes it: the zero is seen."""
    for i in range(x.shape[0]):
        acc = zeros(n + 1)
        total = 0.0
        for j in range(n):
            acc[j] = x[i] * (j + 1)
            total += acc[j + 1]
        out[i] = total + acc[0]


def read_after_loop(x: "float[:]", out: "float[:]", n: int):
    """Reads acc[n], which the loop never writes, after the loop."""
    for i in range(x.shape[0]):
        acc = zeros(n + 1)
        for j in range(n):
            acc[j] = x[i] + j
        out[i] = acc[n] + acc[0]


def conditional_write(x: "float[:]", out: "float[:]", n: int):
    """Writes acc[j] only for even j, then reads acc[j - r] for every r <= j."""
    for i in range(x.shape[0]):
        acc = zeros(n)
        total = 0.0
        for j in range(n):
            if j % 2 == 0:
                acc[j] = x[i] + j
            for r in range(j + 1):
                total += acc[j - r]
        out[i] = total


def branch_zeros(v: float, n: int) -> float:
    """Fills acc inside an if and reads it after the if: outside the zeros' block."""
    if n > 0:
        acc = zeros(n)
    acc[0] = v
    return acc[n - 1]


def zeros_in_a_branch(x: "float[:]", out: "float[:]", n: int):
    for i in range(x.shape[0]):
        out[i] = x[i] + branch_zeros(x[i], n)


def sum_of(a: "float[:]", n: int) -> float:
    s = 0.0
    for k in range(n):
        s += a[k]
    return s


def handed_to_helper(x: "float[:]", out: "float[:]", n: int):
    """Hands the zeros to a helper that reads them all."""
    for i in range(x.shape[0]):
        acc = zeros(n)
        acc[0] = x[i]
        out[i] = sum_of(acc, n)


def copy_row(values: "float[:,:]", i: int, dst: "float[:]"):
    """Overwrites all of dst (as struphy's b_der_splines_slim does with `bn[:] = values[pn, :]`)."""
    dst[:] = values[i, :]


def copy_tail(values: "float[:,:]", i: int, dst: "float[:]"):
    """Overwrites all of dst but dst[0]."""
    dst[1:] = values[i, 1:]


def add_row(values: "float[:,:]", i: int, dst: "float[:]"):
    """Reads dst before overwriting it."""
    first = dst[0]
    dst[:] = values[i, :]
    dst[0] = dst[0] + first


def rows_via_helper(values: "float[:,:]", out: "float[:]"):
    """The zeros handed to a helper that overwrites them whole: no read sees them."""
    for i in range(values.shape[0]):
        row = zeros(values.shape[1])
        copy_row(values, i, row)
        total = 0.0
        for k in range(values.shape[1]):
            total += row[k] * (k + 1)
        out[i] = total


def rows_via_tail_helper(values: "float[:,:]", out: "float[:]"):
    """The helper leaves row[0]: its zero is read."""
    for i in range(values.shape[0]):
        row = zeros(values.shape[1])
        copy_tail(values, i, row)
        out[i] = row[0] + row[1]


def rows_via_reading_helper(values: "float[:,:]", out: "float[:]"):
    """The helper reads row[0] before overwriting it: the zero is seen."""
    for i in range(values.shape[0]):
        row = zeros(values.shape[1])
        add_row(values, i, row)
        out[i] = row[0]


def splines_into(knots: "float[:]", degree: int, x: float, bn: "float[:]", bd: "float[:]"):
    """As struphy's ``b_d_splines_slim``: fills its outputs, then writes bn[0] and bn[j + 1]
    in iteration j, reading only bn[0..j] (bn[pd - il] under ``if j == degree - 1``, with
    pd = degree - 1); bd is written only under that ``if``. Only bn[degree + 1:] needs bn's
    fill, and bd keeps all of its."""
    span = degree + 2
    pd = degree - 1
    bn[:] = 0.0
    bd[:] = 0.0
    left = zeros(degree, dtype=float)
    right = zeros(degree, dtype=float)
    bn[0] = 1.0
    for j in range(degree):
        left[j] = x - knots[span - j]
        right[j] = knots[span + 1 + j] - x
        saved = 0.0
        if j == degree - 1:
            for il in range(pd + 1):
                bd[pd - il] = degree / (knots[span - il + degree] - knots[span - il]) * bn[pd - il]
        for r in range(j + 1):
            temp = bn[r] / (right[r] + left[j - r])
            bn[r] = saved + right[r] * temp
            saved = left[j - r] * temp
        bn[j + 1] = saved


def splines_reading_ahead(knots: "float[:]", degree: int, x: float, bn: "float[:]", bd: "float[:]"):
    """Reads bn[j + 1] before iteration j writes it: the zero is seen."""
    bn[:] = 0.0
    bd[:] = 0.0
    bn[0] = 1.0
    for j in range(degree):
        bd[j] = bn[j + 1] + x
        bn[j + 1] = bn[j] * x + knots[j]


def splines_other_condition(
    knots: "float[:]", degree: int, x: float, bn: "float[:]", bd: "float[:]"
):
    """Reads bn[pd - il] under ``if j == degree - 2``, where pd = degree - 1 is j + 1: the
    element not yet written, whose zero is seen."""
    pd = degree - 1
    bn[:] = 0.0
    bd[:] = 0.0
    bn[0] = 1.0
    for j in range(degree):
        if j == degree - 2:
            for il in range(pd + 1):
                bd[il] = bn[pd - il] + x
        bn[j + 1] = bn[j] * x + knots[j]


def splines_without_first(knots: "float[:]", degree: int, x: float, bn: "float[:]", bd: "float[:]"):
    """No bn[0] before the loop: iteration 0 reads the zero of bn[0]."""
    bn[:] = 0.0
    bd[:] = 0.0
    for j in range(degree):
        bd[j] = bn[j] + x
        bn[j + 1] = bn[j] * x + knots[j]


def each_splines(
    knots: "float[:]",
    degree: int,
    x: "float[:]",
    bn_out: "float[:,:]",
    bd_out: "float[:,:]",
    which: int,
):
    """One of the ``splines_*`` helpers at each x (``which``: 0 ``splines_into``, 1
    ``splines_reading_ahead``, 2 ``splines_other_condition``, 3 ``splines_without_first``), on
    rows that start as the outputs' rows."""
    for i in range(x.shape[0]):
        bn = zeros(bn_out.shape[1])
        bd = zeros(bd_out.shape[1])
        for k in range(bn_out.shape[1]):
            bn[k] = bn_out[i, k]
        for k in range(bd_out.shape[1]):
            bd[k] = bd_out[i, k]
        if which == 0:
            splines_into(knots, degree, x[i], bn, bd)
        elif which == 1:
            splines_reading_ahead(knots, degree, x[i], bn, bd)
        elif which == 2:
            splines_other_condition(knots, degree, x[i], bn, bd)
        else:
            splines_without_first(knots, degree, x[i], bn, bd)
        for k in range(bn_out.shape[1]):
            bn_out[i, k] = bn[k]
        for k in range(bd_out.shape[1]):
            bd_out[i, k] = bd[k]


def derivs_into(p: int, x: float, der: "float[:]"):
    """As struphy's ``b_der_splines_slim`` writes ``der``: der[0], der[j] for j in 1..p - 1,
    der[p]; no read of it."""
    saved = x
    der[0] = -saved
    for j in range(1, p):
        temp = saved
        saved = saved * x + j
        der[j] = temp - saved
    der[p] = saved


def derivs_skipping_one(p: int, x: float, der: "float[:]"):
    """Leaves der[1] (the loop starts at 2): its zero is read by the caller."""
    saved = x
    der[0] = -saved
    for j in range(2, p):
        der[j] = saved * j
    der[p] = saved


def weighted_sum(a: "float[:]") -> float:
    total = 0.0
    for k in range(a.shape[0]):
        total += a[k] * (k + 1)
    return total


def each_derivs(x: "float[:]", out: "float[:]", p: int):
    """Zeros two longer than the p + 1 derivatives the helper writes: only their tail needs
    the fill, just before the call."""
    for i in range(x.shape[0]):
        der = zeros(p + 3)
        derivs_into(p, x[i], der)
        out[i] = weighted_sum(der)


def each_derivs_skipping_one(x: "float[:]", out: "float[:]", p: int):
    for i in range(x.shape[0]):
        der = zeros(p + 3)
        derivs_skipping_one(p, x[i], der)
        out[i] = weighted_sum(der)


def der_table(knots: "float[:]", p: int, x: float, bn: "float[:]", der: "float[:]"):
    """As struphy's ``b_der_splines_slim``: the Cox-de Boor table ``values`` filled up to its
    diagonal row by row and read only there, ``diff`` written by each inner iteration before
    it reads it; neither fill can be seen."""
    span = p + 2
    left = zeros(p, dtype=float)
    right = zeros(p, dtype=float)
    diff = zeros(p, dtype=float)
    values = zeros((p + 1, p + 1), dtype=float)
    values[0, 0] = 1.0
    for j in range(p):
        left[j] = x - knots[span - j]
        right[j] = knots[span + 1 + j] - x
        saved = 0.0
        for r in range(j + 1):
            diff[r] = 1.0 / (right[r] + left[j - r])
            temp = values[j, r] * diff[r]
            values[j + 1, r] = saved + right[r] * temp
            saved = left[j - r] * temp
        values[j + 1, j + 1] = saved
    diff[:] = diff * p
    saved = values[p - 1, 0] * diff[0]
    der[0] = -saved
    for j in range(1, p):
        temp = saved
        saved = values[p - 1, j] * diff[j]
        der[j] = temp - saved
    bn[:] = values[p, :]
    der[p] = saved


def table_reading_above(p: int, x: float) -> float:
    """Reads values[j, j + 1], above the diagonal of row j: its zero is seen."""
    values = zeros((p + 1, p + 1))
    values[0, 0] = 1.0
    for j in range(p):
        for r in range(j + 1):
            values[j + 1, r] = values[j, r] * x + values[j, j + 1]
        values[j + 1, j + 1] = x
    return values[p, 0]


def diff_read_first(p: int, x: float) -> float:
    """Reads diff[r] before the inner iteration writes it: the zero of diff[j] is seen."""
    diff = zeros(p)
    total = 0.0
    for j in range(p):
        for r in range(j + 1):
            total += diff[r]
            diff[r] = x * (r + 1)
    return total


def each_table(knots: "float[:]", x: "float[:]", out: "float[:,:]", p: int, which: int):
    """``der_table`` (``which`` 0: its bn and der in out[i]), ``table_reading_above`` (1) or
    ``diff_read_first`` (2) at each x."""
    for i in range(x.shape[0]):
        bn = zeros(p + 1)
        der = zeros(p + 1)
        if which == 0:
            der_table(knots, p, x[i], bn, der)
        elif which == 1:
            bn[0] = table_reading_above(p, x[i])
        else:
            bn[0] = diff_read_first(p, x[i])
        for k in range(p + 1):
            out[i, k] = bn[k]
            out[i, p + 1 + k] = der[k]


def _table_case(which):
    def make(backend, seed):
        rng = np.random.default_rng(seed)
        knots = np.linspace(0.0, 1.0, 12)
        x = rng.uniform(knots[5], knots[6], 97)
        return xp.asarray(knots), xp.asarray(x), xp.asarray(np.zeros((97, 8))), 3, which

    return make


def _splines_case(which):
    """Outputs two elements longer than the splines written, holding sevens: their fill
    shows."""

    def make(backend, seed):
        rng = np.random.default_rng(seed)
        degree = 3
        knots = np.linspace(0.0, 1.0, 12)
        x = rng.uniform(knots[5], knots[6], 129)
        return (
            xp.asarray(knots),
            degree,
            xp.asarray(x),
            xp.asarray(np.full((129, degree + 3), 7.0)),
            xp.asarray(np.full((129, degree + 2), 7.0)),
            which,
        )

    return make


def _bspline(backend, seed):
    rng = np.random.default_rng(seed)
    degree = 3
    knots = np.linspace(0.0, 1.0, 12)
    # x in the knot span [knots[5], knots[6]) that span = degree + 2 names
    x = rng.uniform(knots[5], knots[6], 257)
    return xp.asarray(knots), degree, xp.asarray(x), xp.asarray(np.zeros((257, degree + 1)))


def _rows_case(backend, seed):
    rng = np.random.default_rng(seed)
    return xp.asarray(rng.standard_normal((151, 4))), xp.asarray(np.zeros(151))


def _scalar_case(backend, seed):
    rng = np.random.default_rng(seed)
    return xp.asarray(rng.standard_normal(193)), xp.asarray(np.zeros(193)), 5


CASES = {
    "bspline_values": (bspline_values, _bspline),
    "reads_ahead": (reads_ahead, _scalar_case),
    "read_after_loop": (read_after_loop, _scalar_case),
    "conditional_write": (conditional_write, _scalar_case),
    "handed_to_helper": (handed_to_helper, _scalar_case),
    "zeros_in_a_branch": (zeros_in_a_branch, _scalar_case),
    "rows_via_helper": (rows_via_helper, _rows_case),
    "rows_via_tail_helper": (rows_via_tail_helper, _rows_case),
    "rows_via_reading_helper": (rows_via_reading_helper, _rows_case),
    "each_splines (into)": (each_splines, _splines_case(0)),
    "each_splines (reading ahead)": (each_splines, _splines_case(1)),
    "each_splines (other condition)": (each_splines, _splines_case(2)),
    "each_splines (without first)": (each_splines, _splines_case(3)),
    "each_table (der_table)": (each_table, _table_case(0)),
    "each_table (reading above)": (each_table, _table_case(1)),
    "each_table (diff read first)": (each_table, _table_case(2)),
    "each_derivs": (each_derivs, _scalar_case),
    "each_derivs_skipping_one": (each_derivs_skipping_one, _scalar_case),
}
