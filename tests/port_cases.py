"""Arguments of the ``generate_cuda`` parity cases (tests/port_kernels.py), shared by the CPU
tests (emulated device) and the GPU tests and benchmark."""

import numpy as np
import port_kernels as pk

import cunumpy as xp


def _markers(rng, n):
    m = rng.uniform(0.0, 1.0, size=(n, 8))
    m[:, 3:6] = rng.normal(size=(n, 3))
    m[::7, 6] = -1.0  # holes
    return m


def args_push(backend, seed):
    rng = np.random.default_rng(seed)
    return (xp.asarray(_markers(rng, 300)), xp.asarray(rng.normal(size=3)), 0.05, 300)


def args_deposit_1d(backend, seed):
    rng = np.random.default_rng(seed)
    m = _markers(rng, 500)
    m[:, 0] *= 3.0
    return (xp.asarray(m), 500, xp.zeros(16), 3.0 / 16)


def args_deposit_2d(backend, seed):
    rng = np.random.default_rng(seed)
    n = 400
    return (
        xp.asarray(rng.uniform(-1.0, 2.0, n)),
        xp.asarray(rng.uniform(0.0, 1.0, n)),
        xp.asarray(rng.uniform(0.5, 1.5, n)),
        xp.zeros((8, 6)),
        1.0 / 8,
        1.0 / 6,
    )


def args_eval_field(backend, seed):
    rng = np.random.default_rng(seed)
    return (
        xp.asarray(rng.uniform(0.0, 1.0, 200)),
        xp.asarray(rng.normal(size=12)),
        xp.zeros(200),
        1.0 / 11,
    )


def args_cell_update(backend, seed):
    rng = np.random.default_rng(seed)
    return (xp.asarray(rng.normal(size=(9, 13))), xp.zeros((9, 13)), 0.7)


def args_int(backend, seed):
    rng = np.random.default_rng(seed)
    return (xp.asarray(rng.integers(-50, 50, 41)), xp.zeros((41, 3), dtype=np.int64), 7)


def args_int_powers_of_two(backend, seed):
    rng = np.random.default_rng(seed)
    return (xp.asarray(rng.integers(-50, 50, 41)), xp.zeros((41, 4), dtype=np.int64))


def args_stencil_rows(backend, seed):
    rng = np.random.default_rng(seed)
    return (xp.asarray(rng.normal(size=40)), xp.zeros(35), 3, 30, 2)


def args_stencil_rows_2d(backend, seed):
    rng = np.random.default_rng(seed)
    # rows 2..9 x 1..6 of a grid with 3 diagonals; the output is offset by the pads p
    s, e, p = np.array([2, 1]), np.array([9, 6]), np.array([1, 2])
    return (
        xp.asarray(rng.normal(size=(12, 9, 3))),
        xp.asarray(rng.normal(size=(12, 9))),
        xp.zeros((11, 9)),
        xp.asarray(s),
        xp.asarray(e),
        xp.asarray(p),
    )


def args_dot_sum(backend, seed):
    rng = np.random.default_rng(seed)
    n = 257
    # positive terms: the sum has no cancellation, so another order changes it only by rounding
    return (
        xp.asarray(rng.uniform(0.0, 1.0, n)),
        xp.asarray(rng.uniform(0.0, 1.0, n)),
        3,
        xp.asarray(np.array([1.5, 0.0])),
    )


def args_axpy_generic(backend, seed):
    rng = np.random.default_rng(seed)
    return (0.75, xp.asarray(rng.normal(size=(7, 11))), xp.asarray(rng.normal(size=(7, 11))))


def args_last_columns(backend, seed):
    rng = np.random.default_rng(seed)
    return (xp.asarray(rng.normal(size=(23, 5))), xp.zeros(23))


def args_push_slices(backend, seed):
    rng = np.random.default_rng(seed)
    n = 150
    m = rng.normal(size=(7, n))
    m[0:3] = rng.uniform(-0.5, 1.5, size=(3, n))
    return (xp.asarray(m), xp.asarray(rng.uniform(0.0, 1.0, 4)), 0.1, n)


def args_scale_blocks(backend, seed):
    rng = np.random.default_rng(seed)
    return (xp.asarray(rng.normal(size=(40, 2, 3))), 40)


def args_norms_other_module(backend, seed):
    rng = np.random.default_rng(seed)
    return (xp.asarray(rng.uniform(0.0, 2.0, size=(60, 2))), xp.zeros(60), 1.5)


def args_window_sums(backend, seed):
    rng = np.random.default_rng(seed)
    return (xp.asarray(rng.normal(size=(30, 6))), xp.zeros(30), 4)


def args_row_sums(backend, seed):
    rng = np.random.default_rng(seed)
    rows = rng.integers(0, 6, size=9)
    return (xp.asarray(rng.normal(size=(6, 4, 5))), xp.asarray(rows), xp.zeros((9, 4)))


def args_gather_at_cells(backend, seed):
    rng = np.random.default_rng(seed)
    xs = rng.uniform(0.0, 0.999, size=(80, 2))
    xs[::9, 0] = 1.0  # on the right edge: the helper's other return
    return (xp.asarray(xs), xp.asarray(rng.normal(size=(6, 6))), xp.zeros(80), 6)


CASES = {
    "push_v_rotation": (pk.push_v_rotation, args_push, "owned"),
    "deposit_1d": (pk.deposit_1d, args_deposit_1d, "atomic"),
    "deposit_2d": (pk.deposit_2d, args_deposit_2d, "atomic"),
    "eval_field": (pk.eval_field, args_eval_field, "owned"),
    "cell_update": (pk.cell_update, args_cell_update, "owned"),
    "python_int_semantics": (pk.python_int_semantics, args_int, "owned"),
    "python_int_powers_of_two": (pk.python_int_powers_of_two, args_int_powers_of_two, "owned"),
    "stencil_rows": (pk.stencil_rows, args_stencil_rows, "owned"),
    "stencil_rows_2d": (pk.stencil_rows_2d, args_stencil_rows_2d, "owned"),
    "dot_sum": (pk.dot_sum, args_dot_sum, "reduction"),
    "axpy_generic": (pk.axpy_generic, args_axpy_generic, "owned"),
    "last_columns": (pk.last_columns, args_last_columns, "owned"),
    "push_slices": (pk.push_slices, args_push_slices, "owned"),
    "scale_blocks": (pk.scale_blocks, args_scale_blocks, "owned"),
    "norms_other_module": (pk.norms_other_module, args_norms_other_module, "owned"),
    "window_sums": (pk.window_sums, args_window_sums, "owned"),
    "row_sums": (pk.row_sums, args_row_sums, "owned"),
    "gather_at_cells": (pk.gather_at_cells, args_gather_at_cells, "owned"),
}


def grid_args_maker(struct, n=200):
    """Arguments of ``eval_on_grid``: the host kernel gets the Pyccel class
    ``GridArguments``, the generated one the struct ``struct`` laid out from it."""

    def make(backend, seed):
        rng = np.random.default_rng(seed)
        xs = rng.uniform(0.0, 1.0, size=(n, 2))
        coef = rng.normal(size=(8, 8))
        shift = np.array([3], dtype=np.int64)
        if backend == "numpy":
            args = pk.GridArguments(coef, 1.0 / 8, 8, shift)
        else:
            args = struct(
                coef=xp.asarray(coef), h=1.0 / 8, nx=8, shift=xp.asarray(shift), n_cells=8
            )
        return (xp.asarray(xs), args, xp.zeros(n), n)

    return make


def basis_args_maker(struct, n=300, p=2):
    """Arguments of ``eval_basis``: the host kernel gets ``BasisArguments`` (its scratch array
    allocated by its ``__init__``), the generated one the struct laid out from it (no scratch
    field: each thread has its own)."""

    def make(backend, seed):
        rng = np.random.default_rng(seed)
        xs = rng.uniform(0.0, 2.0, size=n)
        coef = rng.normal(size=8 + p + 1)
        degree = np.array([p], dtype=np.int64)
        if backend == "numpy":
            args = pk.BasisArguments(coef, degree)
        else:
            args = struct(coef=xp.asarray(coef), p=xp.asarray(degree))
        return (xp.asarray(xs), args, xp.zeros(n), n)

    return make


def patch_args_maker(struct, n=200):
    """Arguments of ``eval_patch``: ``PatchArguments`` on the host, its struct on the device."""

    def make(backend, seed):
        rng = np.random.default_rng(seed)
        xs = rng.uniform(0.0, 0.999, size=n)
        c = rng.normal(size=(6, 4, 3))
        if backend == "numpy":
            args = pk.PatchArguments(c, 0.25)
        else:
            args = struct(c=xp.asarray(c), h=0.25)
        return (xp.asarray(xs), args, xp.zeros(n), n)

    return make
