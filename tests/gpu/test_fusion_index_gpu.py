"""Indexing in fused functions on the GPU: every case of tests/fusion_index_cases.py (stencils,
views, gathers) on CuPy arrays against NumPy, and the one-kernel plans of stencils."""

from __future__ import annotations

import numpy as np
import pytest

from cunumpy.kernels import fuse

pytestmark = pytest.mark.gpu
cupy = pytest.importorskip("cupy")

from fusion_corpus import run_case  # noqa: E402
from fusion_index_cases import INDEX_CASES  # noqa: E402


@pytest.mark.parametrize("case", INDEX_CASES, ids=[c.name for c in INDEX_CASES])
def test_indexing_on_gpu_matches_numpy(case):
    def to_host(x):
        assert isinstance(x, cupy.ndarray), type(x)
        return cupy.asnumpy(x)

    run_case(case, cupy.asarray, to_host, cupy.empty)


def test_laplacian_on_a_large_grid_is_one_kernel_and_exact():
    rng = np.random.default_rng(3)
    g = rng.standard_normal((2049, 4097))
    d = cupy.asarray(g)
    lap = fuse(
        lambda u: u[1:-1, 2:] + u[1:-1, :-2] + u[2:, 1:-1] + u[:-2, 1:-1] - 4 * u[1:-1, 1:-1]
    )
    assert len(lap.plan(d).kernels) == 1
    expected = g[1:-1, 2:] + g[1:-1, :-2] + g[2:, 1:-1] + g[:-2, 1:-1] - 4 * g[1:-1, 1:-1]
    np.testing.assert_array_equal(cupy.asnumpy(lap(d)), expected)


def test_gather_on_gpu():
    rng = np.random.default_rng(4)
    a = rng.standard_normal(1 << 20)
    idx = rng.integers(-(1 << 20), 1 << 20, 1 << 18)
    b = rng.standard_normal(1 << 18)
    f = fuse(lambda a, i, b: a[i] * b)
    got = cupy.asnumpy(f(cupy.asarray(a), cupy.asarray(idx), cupy.asarray(b)))
    np.testing.assert_array_equal(got, a[idx] * b)
