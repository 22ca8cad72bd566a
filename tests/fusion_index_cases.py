"""Indexing in fused functions (basic slices, integers, ``None``, ``...``, stencils, gathers):
cases every backend runs with ``fusion_corpus.run_case``, against the same function run eagerly
by NumPy: the CPU executor (tests/cpu/test_fusion_index_cpu.py), the emulated device
(tests/cxx/test_fusion_index_emulated_cxx.py) and the GPU (tests/gpu/test_fusion_index_gpu.py).
"""

from __future__ import annotations

import numpy as np
from fusion_corpus import Case

rng = np.random.default_rng(22)
U = rng.standard_normal(1000)
U_BIG = rng.standard_normal(200_003)  # past one block: the compiled CPU loop's size
G = rng.standard_normal((37, 53))
SQ = rng.standard_normal((9, 9))
T3 = rng.standard_normal((4, 5, 6))
X = rng.standard_normal(40)
MASK = rng.random(37) > 0.5
F32 = rng.standard_normal(500).astype(np.float32)
IDX = rng.integers(-1000, 1000, 777)
IDX32 = rng.integers(0, 37, (5, 7)).astype(np.int32)
IDXU8 = rng.integers(0, 53, 19).astype(np.uint8)
B777 = rng.standard_normal(777)
I64 = rng.integers(-(10**6), 10**6, 300)


def _stencil(u):
    return u[2:] - 2 * u[1:-1] + u[:-2]


def _laplacian(u):
    return u[1:-1, 2:] + u[1:-1, :-2] + u[2:, 1:-1] + u[:-2, 1:-1] - 4 * u[1:-1, 1:-1]


def _heat_step(u, alpha):
    # a whole explicit step: the interior updated, the result one shorter at each end
    return u[1:-1] + alpha * (u[2:] - 2 * u[1:-1] + u[:-2])


INDEX_CASES: list[Case] = [
    # ---- stencils: shifted views of one array read by one kernel ---------------------------
    Case("stencil_1d", _stencil, (U,)),
    Case("stencil_1d_large", _stencil, (U_BIG,)),
    Case("stencil_1d_f32", _stencil, (F32,)),
    Case("stencil_int", _stencil, (I64,)),
    Case("heat_step", _heat_step, (U, 0.25)),
    Case("laplacian_2d", _laplacian, (G,)),
    Case("outer_difference", lambda x: x[None, :] - x[:, None], (X,)),
    Case("mask_column", lambda m, a: np.where(m[:, None], a, 0.0), (MASK, G)),
    Case("mask_times", lambda m, a: m[:, np.newaxis] * a, (MASK, G)),
    # ---- basic indices --------------------------------------------------------------------
    Case("reversed", lambda a: a[::-1] * 2.0, (U,)),
    Case("strided_negative", lambda a: a[::-3, 1::2] + a[-1::-3, :-1:2], (G,)),
    Case("steps_out_of_range", lambda a: a[-100:2000:7] + a[2000:-1015:-70], (U,)),
    Case("integer_drops_axis", lambda a: a[3][:37] + a[:, -2], (G,)),
    Case("ellipsis", lambda t: t[..., 1] * t[1, ..., 0][None, :], (T3,)),
    Case("ellipsis_middle", lambda t: t[1, ..., ::-1] - t[..., 0, :][2], (T3,)),
    Case("square_transpose_free", lambda a: a[..., 1] - a[2], (SQ,)),
    Case("none_everywhere", lambda a: a[None, 1:, None, ::2, None] * 1.5, (G,)),
    Case("empty_slice", lambda a: a[5:2] + 1.0, (U,)),
    Case("scalar_item", lambda a, b: b * a[-1, 0], (G, G)),
    # ---- intermediates, reductions ---------------------------------------------------------
    Case("view_of_intermediate", lambda a: (a * 2.0 + 1.0)[1:, ::-1], (G,)),
    Case("sum_of_view", lambda a: (a * 2.0 + 1.0)[1:, ::-1].sum(axis=1) + a[0, 1], (G,)),
    Case("sum_of_stencil", lambda u: np.sum((u[1:] - u[:-1]) ** 2), (U,)),
    Case(
        "max_minus_min",
        lambda a: a[:, 1:].max(axis=1) - a[:, :-1].min(axis=1),
        (G,),
    ),
    Case("row_range", lambda a: a.max(axis=1) - a.min(axis=1), (G,)),
    Case("center_rows", lambda a: a - a.mean(axis=1)[:, None], (G,)),
    Case("diff_of_sums", lambda a: a.sum(axis=1)[1:] - a.sum(axis=1)[:-1], (G,)),
    Case("reversed_mean", lambda a: a.mean(axis=0)[::-1] * a[0], (G,)),
    # ---- gathers ---------------------------------------------------------------------------
    Case("gather_times", lambda a, i, b: a[i] * b, (U, IDX, B777)),
    Case("gather_rows", lambda a, i: a[i] * 2.0, (G, IDX32)),
    Case("gather_columns", lambda a, i: a[:, i] + 1.0, (G, IDXU8)),
    Case("gather_after_int", lambda t, i: t[1, i[:3] % 5, :], (T3, IDX32)),
    Case("gather_of_intermediate", lambda a, i: (a * a)[i], (U, IDX)),
    Case("gather_of_view", lambda a, i: a[::-1][i], (U, IDX)),
    Case("gather_twice", lambda a, i: a[i][::2][i[:100] % 389], (U, IDX)),
    Case("gather_sum", lambda a, i: a[i].sum(), (U, IDX)),
    Case("gather_computed_index", lambda a, i: a[(i * 3) % 1000], (U, IDX)),
    Case("gather_python_int", lambda a, i: a[i] + a[i - 1], (G, 5)),
]
