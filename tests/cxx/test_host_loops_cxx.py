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
