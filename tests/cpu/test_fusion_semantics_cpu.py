"""`fuse` gives NumPy's results for the wider ufunc set, float16, in-place updates, `out=` and
None arguments on the CPU executor (tests/fusion_semantics_cases.py), and raises NumPy's
exception classes."""

import sys
import types
from pathlib import Path

import numpy as np
import pytest

import cunumpy as xp
from cunumpy.exceptions import (
    FusionAxisError,
    FusionOverflowError,
    FusionUnsupportedError,
    FusionValueError,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from fusion_semantics_cases import CASES, F64, I8, check_case  # noqa: E402


@pytest.mark.parametrize(("name", "func", "args"), CASES, ids=[c[0] for c in CASES])
def test_numpy_semantics_on_numpy(name, func, args):
    check_case(func, args, lambda a: a)


def test_out_of_range_axis_is_numpy_axis_error():
    with pytest.raises(np.exceptions.AxisError) as info:
        xp.fuse(lambda a: a.sum(axis=2))(F64)
    assert isinstance(info.value, FusionAxisError) and "axis 2" in str(info.value)


def test_broadcast_mismatch_is_a_value_error():
    with pytest.raises(ValueError, match="could not be broadcast together with shapes"):
        xp.fuse(lambda a, b: a + b)(np.ones(3), np.ones(2))


def test_inplace_update_that_would_broadcast_the_argument_raises():
    def f(x, y):
        x += y

    x = np.ones(3)
    with pytest.raises(FusionValueError, match="non-broadcastable"):
        xp.fuse(f)(x, np.ones((2, 3)))
    assert (x == 1).all()  # nothing written


def test_inplace_update_with_an_unsafe_cast_is_a_type_error():
    def f(x, y):
        x += y

    with pytest.raises(TypeError, match="cannot cast"):
        xp.fuse(f)(np.ones(3, np.int64), np.ones(3))


def test_python_int_too_big_for_the_dtype_is_an_overflow_error():
    with np.errstate(all="ignore"), pytest.raises(OverflowError):
        I8 + 300  # NumPy 2's rule, which fuse follows
    with pytest.raises(OverflowError) as info:
        xp.fuse(lambda a: a + 300)(I8)
    assert isinstance(info.value, FusionOverflowError)
    assert xp.fuse(lambda a: a < 300)(I8).all()  # comparisons are exact, as in NumPy


@pytest.mark.parametrize(
    ("func", "construct"),
    [
        (lambda a: np.add.at(a, 0, 1), "add.at"),
        (lambda a: xp.linalg.norm(a), "linalg.norm"),
        (lambda a: np.linalg.norm(a), "linalg.norm"),
    ],
)
def test_unsupported_constructs_name_the_construct_and_the_line(func, construct):
    with pytest.raises(FusionUnsupportedError) as info:
        xp.fuse(func)(F64.copy())
    assert construct in str(info.value) and "test_fusion_semantics_cpu.py" in str(info.value)


def test_traced_values_answer_protocol_probes_with_false():
    seen = {}

    def f(a):
        seen["cai"] = hasattr(a, "__cuda_array_interface__")
        seen["hook"] = hasattr(a, "__cupy_override_elementwise_kernel__")
        return a + 1

    xp.fuse(f)(F64)
    assert seen == {"cai": False, "hook": True}


def test_clear_cache_traces_again():
    f = xp.fuse(lambda a: a * 2)
    f(F64)
    f(F64)
    assert f.trace_count == 1
    f.clear_cache()
    np.testing.assert_array_equal(f(F64), F64 * 2)
    assert f.trace_count == 2


def test_function_returning_nothing_and_updating_nothing_returns_none():
    assert xp.fuse(lambda a: None)(F64) is None


def test_float16_symbols_report_float16():
    seen = []
    xp.fuse(lambda a: seen.append((a.dtype, (a + 1).dtype, (a * 1.5).dtype)) or a)(
        F64.astype(np.float16)
    )
    assert seen == [(np.float16, np.float16, np.float16)]


def _add_twice(x, y):
    x += y
    x += y


@pytest.mark.parametrize(
    "second", [lambda x: x, lambda x: x.T, lambda x: x[::-1]], ids=["same", "transpose", "reversed"]
)
def test_argument_updated_in_place_that_shares_memory_with_another_sees_its_updates(second):
    # NumPy's order: the second update reads the first one's result through the other argument
    want = np.arange(16.0).reshape(4, 4)
    _add_twice(want, second(want))
    got = np.arange(16.0).reshape(4, 4)
    assert xp.fuse(_add_twice)(got, second(got)) is None
    np.testing.assert_array_equal(got, want)
    # arguments that do not overlap still run fused, in one pass
    x, y = np.ones(4), np.ones(4)
    xp.fuse(_add_twice)(x, y)
    np.testing.assert_array_equal(x, 3.0)


def test_returning_an_empty_tuple_gives_an_empty_tuple():
    assert xp.fuse(lambda a: ())(F64) == ()


def test_python_branch_on_a_traced_value_says_it_needs_a_python_scalar():
    def f(a):
        if a > 0:
            return a
        return -a

    with pytest.raises(TypeError, match="Python scalar"):
        xp.fuse(f)(F64)


def _refusing_array_module() -> types.ModuleType:
    """A module named `cupy` whose functions refuse anything but its own arrays, as real
    CuPy's `cupy.around`/`cupy.nansum`/`cupy.all` refuse a traced value; its ufunc-like
    object calls the override hook with CuPy's `cupy_<name>` naming."""
    mod = types.ModuleType("cupy")

    def refuse(*args, **kwargs):
        raise TypeError("only this module's arrays")

    class Ufunc:
        name = "cupy_hypot"

        def __call__(self, a, b):
            return a.__cupy_override_elementwise_kernel__(self, a, b)

    mod.around = mod.nansum = mod.all = refuse
    mod.hypot = Ufunc()
    return mod


def test_helpers_calling_the_array_module_are_traced_like_the_function_itself():
    cp = _refusing_array_module()
    hypot = cp.hypot  # fetched before tracing: reaches the override hook

    def helper(x):  # `cp` in its closure, as CuPy's fusion tests wrap their lambdas
        return cp.around(cp.nansum(x, axis=1)), cp.all(x > -2)

    def fused(x):
        r, a = helper(x)
        return r + hypot(x, x).sum(axis=1), a

    a = np.random.default_rng(3).standard_normal((5, 7))
    a[1, 2] = np.nan
    got = xp.fuse(fused)(a)
    expected = np.around(np.nansum(a, axis=1)) + np.hypot(a, a).sum(axis=1)
    np.testing.assert_allclose(got[0], expected, rtol=1e-13)
    assert bool(got[1]) == bool(np.all(a > -2))
