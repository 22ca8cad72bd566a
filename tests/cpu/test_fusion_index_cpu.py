"""Indexing traced values in ``fuse`` on the CPU executor: every case of
tests/fusion_index_cases.py against NumPy, stencils planned as one kernel that reads its one
array (no temporaries), gathers bounds-checked with NumPy's IndexError, the errors of indices
NumPy refuses, and ``out=`` views."""

from __future__ import annotations

import re

import numpy as np
import pytest
from fusion_corpus import run_case
from fusion_index_cases import INDEX_CASES

from cunumpy.exceptions import FusionIndexError, FusionUnsupportedError, FusionValueError
from cunumpy.kernels import fuse


@pytest.mark.parametrize("case", INDEX_CASES, ids=[c.name for c in INDEX_CASES])
def test_indexing_matches_numpy(case):
    run_case(case)


def _one_kernel_reading(plan, inputs):
    (k,) = plan.kernels
    assert plan.workspace_bytes == 0
    assert sorted(r for r in k["reads"] if r.startswith("in")) == inputs
    return k


def test_stencils_are_one_kernel_without_temporaries(monkeypatch):
    monkeypatch.delenv("CUNUMPY_FUSION_STENCIL_TILES", raising=False)
    u = np.linspace(0.0, 1.0, 1001)
    f = fuse(lambda u: u[2:] - 2 * u[1:-1] + u[:-2])
    k = _one_kernel_reading(f.plan(u), ["in0"])
    assert k["elements"] == 999
    # the plan reads the array once and writes the result: no temporary of any view
    assert f.plan(u).bytes_read == u.nbytes and f.plan(u).bytes_written == 999 * 8
    g = np.ones((64, 80))
    lap = fuse(
        lambda u: u[1:-1, 2:] + u[1:-1, :-2] + u[2:, 1:-1] + u[:-2, 1:-1] - 4 * u[1:-1, 1:-1]
    )
    _one_kernel_reading(lap.plan(g), ["in0"])
    source = lap.plan(g).cuda_source()
    # five views of one pointer, each at its own offset: an index map, not a copy; the rows
    # above, at and below share one window of registers per tile (eight rows a lane: ten
    # loads), the left and right neighbours load at each row
    bases = set(re.findall(r"const int (b\d+) = oin0", source))
    assert len(bases) == 5
    assert len(set(re.findall(r"const double w0_\d+ = in0\[", source))) == 10
    # the tile's row and column come from a multiply-high and a shift, not a division
    assert "__umulhi" in source and " % " not in source


def test_outer_difference_and_masks_are_one_kernel():
    x = np.arange(5.0)
    d = fuse(lambda x: x[None, :] - x[:, None])
    _one_kernel_reading(d.plan(x), ["in0"])
    np.testing.assert_array_equal(d(x), x[None, :] - x[:, None])


def test_row_range_is_one_reduction_kernel():
    a = np.random.default_rng(0).standard_normal((1000, 16))
    f = fuse(lambda a: a.max(axis=1) - a.min(axis=1))
    (k,) = f.plan(a).kernels
    assert k["kind"] == "reduction"
    # rows of 16: 4 lanes per row, 8 rows per warp, both reductions in one pass
    assert k["strategy"] == "lanes_per_row" and k["lanes_per_row"] == 4
    assert "4 lanes per output (8 outputs per warp)" in f.plan(a).explain()
    source = f.plan(a).cuda_source()
    assert "k += 4)" in source and source.count("in0[") == 1
    for k_len, lanes in ((2, 1), (15, 2), (17, 4), (33, 8), (64, 16), (127, 16)):
        b = np.ones((300, k_len))
        (kb,) = f.plan(b).kernels
        assert (kb["strategy"], kb["lanes_per_row"]) == ("lanes_per_row", lanes), k_len
        np.testing.assert_array_equal(f(b), np.zeros(300))
    (kw,) = f.plan(np.ones((300, 128))).kernels
    assert kw["strategy"] == "warp_per_row" and "lanes_per_row" not in kw
    np.testing.assert_array_equal(f(a), a.max(axis=1) - a.min(axis=1))


def test_gather_is_one_pass():
    a, b = np.arange(10.0), np.arange(6.0)
    idx = np.array([0, 9, -1, -10, 3, 3])
    f = fuse(lambda a, i, b: a[i] * b)
    (k,) = f.plan(a, idx, b).kernels
    assert "take" in k["fused_ops"]
    np.testing.assert_array_equal(f(a, idx, b), a[idx] * b)


@pytest.mark.parametrize(
    "idx", [np.array([0, 10]), np.array([-11, 0]), np.array([2**40]), np.array([7], np.uint8)]
)
def test_gather_out_of_range_is_numpys_index_error(idx):
    a = np.arange(10.0) if idx.dtype != np.uint8 else np.arange(5.0)
    f = fuse(lambda a, i: a[i] + 1.0)
    with pytest.raises(IndexError) as numpy_error:
        a[idx]
    with pytest.raises(FusionIndexError) as ours:
        f(a, idx)
    assert isinstance(ours.value, IndexError)
    # NumPy's words: "index 10 is out of bounds for axis 0 with size 10"
    assert str(numpy_error.value) in str(ours.value)


def test_gather_of_a_traced_scalar_index():
    a = np.arange(12.0).reshape(3, 4)
    f = fuse(lambda a, i: a[i] * 2.0)
    np.testing.assert_array_equal(f(a, -1), a[-1] * 2.0)
    np.testing.assert_array_equal(f(a, 1), a[1] * 2.0)
    assert f.trace_count == 1  # a new index value is a new parameter, not a new trace
    with pytest.raises(IndexError):
        f(a, 3)


def test_plan_time_index_errors_are_numpys():
    a = np.arange(3.0)
    with pytest.raises(IndexError, match="index 5 is out of bounds for axis 0 with size 3"):
        fuse(lambda a: a[5] + 1.0)(a)
    with pytest.raises(IndexError, match="too many indices"):
        fuse(lambda a: a[0, 0] + 1.0)(a)
    with pytest.raises(IndexError, match="single ellipsis"):
        fuse(lambda a: a[..., ...] + 1.0)(a)
    with pytest.raises(FusionValueError, match="step"):
        fuse(lambda a: a[::0] + 1.0)(a)
    with pytest.raises(ValueError):
        a[::0]


@pytest.mark.parametrize(
    "func, what",
    [
        (lambda a, m: a[m], "boolean mask"),
        (lambda a, m: a[a > 0], "boolean mask"),
        (lambda a, m: a[[0, 1]], "list"),
        (lambda a, m: a[1.5], "float"),
        (lambda a, m: a[a.astype(np.int64), a.astype(np.int64)], "more than one index array"),
        (lambda a, m: a[0 : a.astype(np.int64)], "slice stop"),
    ],
)
def test_unsupported_indices_name_the_construct(func, what):
    a, m = np.arange(4.0), np.array([True, False, True, False])
    with pytest.raises(FusionUnsupportedError, match=what) as e:
        fuse(func)(a, m)
    assert "test_fusion_index_cpu.py" in str(e.value)  # the user's line


def test_index_array_apart_from_the_integers_is_refused():
    t = np.zeros((3, 4, 5))
    i = np.array([0, 1])
    # NumPy moves the gathered dims first here; refused rather than placed differently
    with pytest.raises(FusionUnsupportedError, match="integers apart"):
        fuse(lambda t, i: t[1, :, i])(t, i)


def test_out_views_receive_the_result():
    u = np.linspace(0.0, 1.0, 50)
    v = np.zeros_like(u)
    f = fuse(lambda u: u[2:] - 2 * u[1:-1] + u[:-2])
    r = f(u, out=v[1:-1])
    expected = np.zeros_like(u)
    expected[1:-1] = u[2:] - 2 * u[1:-1] + u[:-2]
    np.testing.assert_array_equal(v, expected)
    assert r.base is v
    w = np.zeros((4, 6))
    g = fuse(lambda a: a * 2.0)
    g(np.arange(6.0)[::-1][:4, None] + np.zeros((4, 3)), out=w[:, ::2])
    np.testing.assert_array_equal(w[:, 1::2], 0.0)
    np.testing.assert_array_equal(
        w[:, ::2], 2.0 * (np.arange(6.0)[::-1][:4, None] + np.zeros((4, 3)))
    )
