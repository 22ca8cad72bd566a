"""Compiled CPU loops of fused functions (needs a host C++ compiler): the same results as the
interpreter and NumPy, used only for exact operations, built in the background or on demand."""

from __future__ import annotations

import numpy as np
import pytest

import cunumpy as xp
from cunumpy.kernel_testing import emulation_compiler
from cunumpy.kernels import host_loop_status, set_host_loops, wait_for_host_loops

pytestmark = [
    pytest.mark.cxx,
    pytest.mark.skipif(emulation_compiler() is None, reason="needs a host C++ compiler"),
]

N = 100_003  # one partial reduction chunk after a whole one, and tails


@pytest.fixture
def loops():
    """Restores the process-wide setting after each test."""
    previous = set_host_loops("sync", 1)
    yield
    assert wait_for_host_loops(120)
    set_host_loops(*previous)


def runs():
    return host_loop_status()["runs"]


def call(f, *args):
    with xp.use_backend("numpy"):
        return f(*args)


def interpreted(f, *args):
    previous = set_host_loops("off", 0)
    try:
        return call(f, *args)
    finally:
        set_host_loops(*previous)


def test_chain_reduction_and_centering_are_compiled_and_exact(loops):
    rng = np.random.default_rng(1)
    a, b, c, d = (rng.standard_normal(N) for _ in range(4))
    chain = xp.fuse(lambda a, b, c, d: a * b + c * d - 2.5 * a)
    sumsq = xp.fuse(lambda a, b: xp.sum((a - b) ** 2))
    centre = xp.fuse(lambda a: a - xp.mean(a))
    before = runs()
    got = call(chain, a, b, c, d)
    # the same IEEE operations in the same order as NumPy's: the same bits
    np.testing.assert_array_equal(got, a * b + c * d - 2.5 * a)
    s = call(sumsq, a, b)
    assert s == interpreted(sumsq, a, b)
    np.testing.assert_allclose(s, np.sum((a - b) ** 2), rtol=1e-12)
    r = call(centre, a)
    np.testing.assert_array_equal(r, interpreted(centre, a))
    np.testing.assert_allclose(r, a - np.mean(a), rtol=1e-12, atol=1e-15)
    # chain: 1 run; sum: the reduction and its one-point epilogue (min_points is 1 here);
    # centre: the mean's epilogue and the subtraction (the mean of an array as it is stays
    # interpreted while it fits in the caches)
    assert runs() - before == 5
    assert host_loop_status()["failed"] == []


def test_special_values_integers_and_bools_match_numpy(loops):
    rng = np.random.default_rng(2)
    x = rng.standard_normal(N) * 1e3
    x[::7] = np.nan
    x[3::11] = np.inf
    x[5::13] = -0.0
    y = rng.standard_normal(N)
    i = rng.integers(-(2**62), 2**62, N)
    k = rng.integers(-128, 127, N, dtype=np.int8)
    f = xp.fuse(
        lambda x, y, i, k: (
            xp.where(x < y, xp.minimum(x, y), xp.maximum(x, y)),
            xp.clip(x, -10.0, 10.0),
            xp.sqrt(xp.abs(x)),
            xp.floor(x / y),
            (i * 3 + i) ^ k,
            xp.logical_and(xp.isnan(x), y > 0),
        )
    )
    before = runs()
    got = call(f, x, y, i, k)
    with np.errstate(all="ignore"):
        want = (
            np.where(x < y, np.minimum(x, y), np.maximum(x, y)),
            np.clip(x, -10.0, 10.0),
            np.sqrt(np.abs(x)),
            np.floor(x / y),
            (i * 3 + i) ^ k,
            np.logical_and(np.isnan(x), y > 0),
        )
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype
        np.testing.assert_array_equal(g, w)
    assert runs() > before


def test_math_library_functions_stay_interpreted(loops):
    a = np.linspace(-3, 3, N)
    f = xp.fuse(lambda a: xp.exp(a) * 2.0)
    before = runs()
    np.testing.assert_allclose(call(f, a), np.exp(a) * 2.0, rtol=1e-15)
    assert runs() == before


def test_off_and_small_runs_use_the_interpreter(loops):
    a = np.arange(N, dtype=np.float64)
    f = xp.fuse(lambda a: a * 3.0 + 1.0)
    set_host_loops("off", 1)
    before = runs()
    np.testing.assert_array_equal(call(f, a), a * 3.0 + 1.0)
    set_host_loops("sync", N + 1)  # fewer points than the minimum
    np.testing.assert_array_equal(call(f, a), a * 3.0 + 1.0)
    assert runs() == before


def test_background_build_then_compiled(loops):
    a = np.arange(N, dtype=np.float32)
    f = xp.fuse(lambda a: xp.ceil(a * 0.25) - a)
    set_host_loops("background", 1)
    want = np.ceil(a * np.float32(0.25)) - a
    np.testing.assert_array_equal(call(f, a), want)  # interpreted (or compiled, if cached)
    assert wait_for_host_loops(120)
    before = runs()
    np.testing.assert_array_equal(call(f, a), want)
    assert runs() == before + 1


def test_bad_mode_is_refused():
    with pytest.raises(ValueError, match="'off', 'background' or 'sync'"):
        set_host_loops("always")


def as_tuple(r):
    return r if isinstance(r, tuple) else (r,)


def same_values(got, want, name):
    """Equal values, dtypes and shapes; zeros of equal sign; NaN where the other has NaN."""
    for g, w in zip(got, want, strict=True):
        g, w = np.asarray(g), np.asarray(w)
        assert g.dtype == w.dtype and g.shape == w.shape, name
        np.testing.assert_array_equal(g, w, err_msg=name)
        if g.dtype.kind in "fc":
            # signed zeros must match; a NaN's sign bit depends on operand order, as in NumPy
            ok = ~np.isnan(g) & ~np.isnan(w)
            assert np.array_equal(np.signbit(g.real)[ok], np.signbit(w.real)[ok]), name


def test_fusion_corpus_compiled_gives_the_interpreters_results(loops):
    """Every corpus case with every kernel it can compile compiled (min_points 1) against
    the same case interpreted."""
    from fusion_corpus import CASES

    before = runs()
    for case in CASES:
        f = xp.fuse(case.func, kernel_name=case.name)
        with np.errstate(all="ignore"):
            want = interpreted(f, *case.args)
            got = call(f, *case.args)
        same_values(as_tuple(got), as_tuple(want), case.name)
    assert runs() - before >= 60
    assert host_loop_status()["failed"] == []


def test_two_dimensional_stencils_run_compiled_row_by_row(loops):
    """A 2-D five-point Laplacian and strided/reversed 2-D views: every leaf reads rows of a
    larger array (offsets, strides, odd sizes), one compiled row loop per call, NumPy's bits."""
    rng = np.random.default_rng(3)
    g = rng.standard_normal((301, 517))
    lap = xp.fuse(
        lambda u: u[1:-1, 2:] + u[1:-1, :-2] + u[2:, 1:-1] + u[:-2, 1:-1] - 4.0 * u[1:-1, 1:-1]
    )
    before = runs()
    got = call(lap, g)
    assert runs() == before + 1
    want = g[1:-1, 2:] + g[1:-1, :-2] + g[2:, 1:-1] + g[:-2, 1:-1] - 4.0 * g[1:-1, 1:-1]
    np.testing.assert_array_equal(got, want)
    # a non-contiguous argument (every other column of a wider array) and a reversed view
    wide = rng.standard_normal((203, 1201))
    v = wide[:, ::2]
    h = xp.fuse(lambda u, w: u[::-2, 1:] * w[1:-1:2, 2:])
    u = rng.standard_normal((201, 600))
    before = runs()
    got = call(h, u, v)
    assert runs() == before + 1
    np.testing.assert_array_equal(got, u[::-2, 1:] * v[1:-1:2, 2:])
    assert got.tobytes() == interpreted(h, u, v).tobytes()


def test_gathers_run_compiled_and_out_of_range_raises_index_error(loops):
    """`a[idx] * b` reads the table in the product's loop; negative indices count from the end;
    an index out of range raises NumPy's IndexError, as interpreted."""
    rng = np.random.default_rng(4)
    a = rng.standard_normal(70_001)
    idx = rng.integers(-70_001, 70_001, N)
    b = rng.standard_normal(N)
    f = xp.fuse(lambda a, i, b: a[i] * b)
    before = runs()
    got = call(f, a, idx, b)
    assert runs() == before + 1
    np.testing.assert_array_equal(got, a[idx] * b)
    # a non-contiguous index array (every third of a longer one)
    idx3 = rng.integers(0, 70_001, 3 * N)[::3]
    np.testing.assert_array_equal(call(f, a, idx3, b), a[idx3] * b)
    for bad in (70_001, -70_002):
        wrong = idx.copy()
        wrong[N // 2] = bad
        with pytest.raises(IndexError, match=f"index {bad} is out of bounds"):
            call(f, a, wrong, b)
        with pytest.raises(IndexError, match=f"index {bad} is out of bounds"):
            interpreted(f, a, wrong, b)


def test_large_gathers_take_the_streaming_loop_and_agree_with_numpy(loops):
    """A result of 8 MiB and more is written in streamed tiles (one sub-range for a gather);
    every point, the tail after the whole tiles included, is NumPy's, and an index out of range
    in the tiles still raises."""
    rng = np.random.default_rng(6)
    n = (1 << 20) + 4099  # over 8 MiB of float64 results; not a whole number of tiles
    a = rng.standard_normal(1 << 16)
    idx = rng.integers(-(1 << 16), 1 << 16, n)
    b = rng.standard_normal(n)
    f = xp.fuse(lambda a, i, b: a[i] * b)
    before = runs()
    np.testing.assert_array_equal(call(f, a, idx, b), a[idx] * b)
    assert runs() == before + 1
    wrong = idx.copy()
    wrong[n // 3] = 1 << 16
    with pytest.raises(IndexError, match=f"index {1 << 16} is out of bounds"):
        call(f, a, wrong, b)


def test_short_row_ranges_run_compiled_with_numpys_nan_rules(loops):
    """`a.max(axis=1) - a.min(axis=1)` on tall matrices (rows of 16, 13, 3): both reductions
    and the subtraction compiled; NaN rows give NaN and signed zeros as NumPy."""
    rng = np.random.default_rng(5)
    f = xp.fuse(lambda a: a.max(axis=1) - a.min(axis=1))
    for rows, k in ((N, 16), (7001, 13), (40_000, 3)):
        a = rng.standard_normal((rows, k))
        a[1, 2] = np.nan
        a[2, :] = -0.0
        a[3, 0] = np.inf
        a[4, :] = np.nan
        before = runs()
        got = call(f, a)
        assert runs() == before + 2  # the rows' reductions, then the subtraction
        want = a.max(axis=1) - a.min(axis=1)
        np.testing.assert_array_equal(got, want)
        assert np.isnan(got[1]) and np.isnan(got[4]) and got[3] == np.inf
        assert got.tobytes() == interpreted(f, a).tobytes()
    # a non-contiguous tall matrix (every other row of a larger one), copied in by the caller
    big = rng.standard_normal((2 * 5001, 16))
    np.testing.assert_array_equal(call(f, big[::2]), big[::2].max(axis=1) - big[::2].min(axis=1))
