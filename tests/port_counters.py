"""Host kernels with a counter in the parallel loop, in the style of struphy's
``kernel_evaluate_pic`` and ``kernel_pullpush_pic`` (markers compacted into the rows of the
output through ``counter += 1``), for the tests of ``xp.kernels.generate_cuda``, and the
arguments of their parity cases (``CASES``). The last kernels must be refused: a true
loop-carried scalar, and counters the translator cannot recount or own."""

import numpy as np


def compact_positive(values: "float[:]", out: "float[:]", scale: float) -> int:
    """The positive values, scaled, packed at the front of out."""
    n = values.shape[0]
    counter = 0
    for i in range(n):
        if values[i] > 0.0:
            out[counter] = scale * values[i]
            counter += 1
    return counter


def evaluate_markers(
    markers: "float[:,:]", mat: "float[:,:]", remove_outside: bool, fill: float
) -> int:
    """One row of mat per marker (holes and markers outside [0, 1]^2 get `fill`, or no row
    when remove_outside), as struphy's kernel_evaluate_pic."""
    tmp = np.zeros(2)
    np_ = markers.shape[1]
    counter = 0
    for i in range(np_):
        e1 = markers[0, i]
        e2 = markers[1, i]
        if e1 < 0.0 or e1 > 1.0 or e2 < 0.0 or e2 > 1.0:
            if remove_outside:
                continue
            else:
                mat[counter, :] = fill
                counter += 1
        else:
            tmp[0] = e1 * e2
            tmp[1] = e1 + mat[counter, 1]
            mat[counter, :] = tmp
            counter += 1
    return counter


def pull_markers(a: "float[:,:]", markers: "float[:,:]", out: "float[:,:]"):
    """Two counters, as struphy's kernel_pullpush_pic: rows of a (one per marker when it has
    holes, else one per inside marker) into rows of out, every second marker from 1."""
    np_ = markers.shape[1]
    a_has_holes = a.shape[0] == np_
    counter_a = 0
    counter_o = 0
    for i in range(1, np_, 2):
        e1 = markers[0, i]
        if e1 < 0.0 or e1 > 1.0:
            if a_has_holes:
                counter_a += 1
            out[counter_o, :] = -1.0
            counter_o += 1
        else:
            out[counter_o, 0] = 2.0 * a[counter_a, 0] + e1
            out[counter_o, 1] = a[counter_a, 1] - e1
            counter_a += 1
            counter_o += 1


# ---------------------------------------------------------------- refused


def running_sum(values: "float[:]", out: "float[:]"):
    """A prefix sum: `total` carries the previous iteration's value (refused, line 74)."""
    total = 0.0
    for i in range(values.shape[0]):
        total += values[i]
        out[i] = total


def counter_read_without_increment(values: "float[:]", out: "float[:]"):
    """Writes out[counter] in every iteration, raises counter only in some: two iterations
    write the same element (refused, line 83)."""
    counter = 0
    for i in range(values.shape[0]):
        out[counter] = values[i]
        if values[i] > 0.0:
            counter += 1


def counter_of_written_flags(flags: "float[:]", out: "float[:]"):
    """The increments depend on flags, which the loop writes: no thread can recount them
    (refused, line 93)."""
    counter = 0
    for i in range(flags.shape[0]):
        if flags[i] > 0.0:
            out[counter] = flags[i]
            counter += 1
        flags[i] = 0.0


def _positions(rng, n):
    """Positions in [0, 1]^2 (2 rows, n columns) but for a fifth: holes (-1) and outside (> 1)."""
    m = rng.uniform(0.02, 0.98, size=(2, n))
    bad = rng.choice(n, size=n // 5, replace=False)
    m[:, bad[::2]] = -1.0
    m[1, bad[1::2]] = 1.3
    return m, n - bad.size


def _args_compact(backend, seed):
    import cunumpy as xp

    rng = np.random.default_rng(seed)
    return xp.asarray(rng.normal(size=200)), xp.asarray(np.zeros(200)), 1.5


def _args_evaluate(remove_outside):
    def make(backend, seed):
        import cunumpy as xp

        rng = np.random.default_rng(seed)
        m, _ = _positions(rng, 150)
        return xp.asarray(m), xp.asarray(rng.normal(size=(150, 2))), remove_outside, -2.0

    return make


def _args_pull(holes):
    def make(backend, seed):
        import cunumpy as xp

        rng = np.random.default_rng(seed)
        m, inside = _positions(rng, 120)
        rows = 120 if holes else inside
        return (
            xp.asarray(rng.normal(size=(rows, 2))),
            xp.asarray(m),
            xp.asarray(np.zeros((120, 2))),
        )

    return make


# label -> (host kernel, arguments)
CASES = {
    "compact_positive": (compact_positive, _args_compact),
    "evaluate_markers": (evaluate_markers, _args_evaluate(False)),
    "evaluate_markers (remove outside)": (evaluate_markers, _args_evaluate(True)),
    "pull_markers": (pull_markers, _args_pull(True)),
    "pull_markers (no holes in a)": (pull_markers, _args_pull(False)),
}


def count_positive(values: "float[:]", out: "float[:]"):
    """A count added into out[0] after the loop: a sum (a reduction), not a counter."""
    count = 0
    for i in range(values.shape[0]):
        if values[i] > 0.0:
            count += 1
    out[0] += count
