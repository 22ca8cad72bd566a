"""cunumpy.kernels.fuse on NumPy arrays: tracing, NEP 50 dtypes and the CPU executor, checked
against NumPy itself."""

from __future__ import annotations

import numpy as np
import pytest
from fusion_corpus import CASES, F32, F32B, FLAT, I32, U8, A, B, C, run_case

import cunumpy as xp
from cunumpy.exceptions import (
    FusionTypeError,
    FusionUnsupportedError,
    FusionValueError,
)
from cunumpy.kernels import fuse

rng = np.random.default_rng(7)


def _empty(shape, dtype):
    return np.empty(shape, dtype)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_fused_matches_numpy(case):
    run_case(case, empty=_empty)


def test_corpus_size():
    assert len(CASES) >= 60


def test_cunumpy_namespace_is_rebound():
    # the corpus is written with `np`; `xp` (cunumpy) is rebound the same way
    f = fuse(lambda a, b: xp.exp(-a * a) * xp.sin(b) + xp.sum(a, axis=0))
    np.testing.assert_allclose(f(A, B), np.exp(-A * A) * np.sin(B) + A.sum(axis=0), rtol=1e-12)


def test_kernel_counts():
    a, b = A.ravel(), B.ravel()
    assert len(fuse(lambda a: a - xp.mean(a)).plan(a).kernels) == 2
    assert len(fuse(lambda a, b: xp.sum((a - b) ** 2)).plan(a, b).kernels) == 1
    assert len(fuse(lambda a, b: a * b + 2.5 * a).plan(a, b).kernels) == 1
    text = fuse(lambda a: a - xp.mean(a)).explain(a)
    assert "2 kernel(s)" in text and 'extern "C" __global__' in text


def test_decorator_forms_and_kernel_name():
    @fuse
    def plain(a):
        return a + 1

    @fuse(kernel_name="my_kernel")
    def named(a):
        return a * 2

    assert plain.kernel_name == "plain"
    assert named.kernel_name == "my_kernel"
    assert "my_kernel" in named.plan(C).kernels[0]["name"]
    np.testing.assert_array_equal(named(C), C * 2)
    assert fuse(lambda a: a).kernel_name == "lambda"
    assert xp.fuse is fuse


def test_new_scalar_values_do_not_retrace_or_replan():
    f = fuse(lambda a, s: a * s)
    for s in (1.0, 2.5, -7.0):
        np.testing.assert_array_equal(f(A, s), A * s)
    assert f.trace_count == 1 and f.plan_count == 1
    f(A, 3)  # a Python int is another signature
    assert f.trace_count == 2
    f(A[:2], 3)  # new shape: new plan, same trace
    assert f.trace_count == 2 and f.plan_count == 3


def test_nep50_weak_and_strong_scalars():
    f = fuse(lambda x, s: x * s)
    assert f(F32, 2.0).dtype == np.float32  # Python float is weak
    assert f(F32, np.float64(2.0)).dtype == np.float64  # NumPy scalar is strong
    assert f(U8, 2).dtype == np.uint8
    assert f(U8, np.int16(2)).dtype == np.int16
    assert fuse(lambda x: x + 1.5)(I32).dtype == (I32 + 1.5).dtype


def test_composition_is_inlined():
    @fuse
    def sq(x):
        return x * x

    @fuse
    def dist(a, b):
        return xp.sqrt(xp.sum(sq(a - b), axis=1))

    np.testing.assert_allclose(dist(A, B), np.sqrt(np.sum((A - B) ** 2, axis=1)))
    assert len(dist.plan(A, B).kernels) == 1


def test_out_argument_single_and_tuple():
    f = fuse(lambda a, b: a + b)
    out = np.empty_like(A)
    r = f(A, B, out=out)
    assert r is out
    np.testing.assert_array_equal(out, A + B)
    g = fuse(lambda a, b: (a - b, a.sum(axis=0)))
    o1, o2 = np.empty_like(A), np.empty(A.shape[1])
    r1, r2 = g(A, B, out=(o1, o2))
    assert r1 is o1 and r2 is o2
    np.testing.assert_allclose(o2, A.sum(axis=0))
    # out aliasing an input: computed aside, then copied
    a = A.copy()
    fuse(lambda x: x - x.mean())(a, out=a)
    np.testing.assert_allclose(a, A - A.mean())
    with pytest.raises(FusionValueError, match="shape"):
        f(A, B, out=np.empty((2, 2)))
    with pytest.raises(FusionTypeError, match="1 output"):
        f(A, B, out=(out, out))


def test_non_contiguous_inputs():
    f = fuse(lambda a: a * 2 + 1)
    np.testing.assert_array_equal(f(A.T), A.T * 2 + 1)
    np.testing.assert_array_equal(f(A[:, ::3]), A[:, ::3] * 2 + 1)


def test_full_reduction_returns_numpy_scalar():
    r = fuse(lambda a: xp.sum(a))(A)
    assert np.ndim(r) == 0
    assert r == pytest.approx(A.sum())


def test_unsupported_operation_names_op_and_line():
    def uses_sort(a):
        return xp.sort(a) + 1  # the line the error names

    with pytest.raises(FusionUnsupportedError) as info:
        fuse(uses_sort)(A)
    msg = str(info.value)
    assert "`xp.sort`" in msg and "uses_sort" in msg
    assert "test_fusion_cpu.py:" in msg and "return xp.sort(a) + 1" in msg

    def branch(a):
        if a > 0:
            return a
        return -a

    with pytest.raises(FusionUnsupportedError, match="Python bool"):
        fuse(branch)(A)
    with pytest.raises(FusionUnsupportedError, match=r"\.shape"):
        fuse(lambda a: a.shape)(A)
    with pytest.raises(FusionUnsupportedError, match="boolean mask"):
        fuse(lambda a: a[a > 0])(A)  # basic indices fuse (test_fusion_index_cpu.py); masks not


def test_type_and_axis_errors():
    with pytest.raises(FusionTypeError):
        fuse(lambda a: a & 1)(A)  # bitwise on float
    with pytest.raises(FusionValueError, match="axis"):
        fuse(lambda a: a.sum(axis=3))(A)
    with pytest.raises(FusionValueError, match="broadcast"):
        fuse(lambda a, b: a + b)(A, np.ones(5))
    with pytest.raises(FusionTypeError, match="argument 1"):
        fuse(lambda a, b: a + b)(A, "x")


def test_plan_object_describes_kernels():
    plan = fuse(lambda a: a - xp.mean(a), kernel_name="center").plan(A.ravel())
    assert plan.name == "center"
    assert plan.outputs == [([A.size], "float64")]
    kinds = [k["kind"] for k in plan.kernels]
    assert kinds == ["reduction", "elementwise"]
    launch = plan.kernels[1]["launches"][0]
    assert launch["name"].startswith("center") and launch["block"] > 0
    assert any(p[2] == "input 0" for p in launch["params"])


def test_execute_cpu_checks_arguments():
    plan = fuse(lambda a: a + 1).plan(C)
    out = np.empty_like(C)
    with pytest.raises(FusionTypeError, match="expected float64"):
        plan.execute_cpu([C.astype(np.float32)], [1], [out])
    with pytest.raises(FusionValueError, match="overlaps"):
        plan.execute_cpu([C], [1], [C])
    with pytest.raises(FusionTypeError, match="writable"):
        ro = np.empty_like(C)
        ro.flags.writeable = False
        plan.execute_cpu([C], [1], [ro])


def test_larger_arrays_parallel_and_deterministic():
    a = rng.standard_normal(3_000_017)
    b = rng.standard_normal(3_000_017)
    f = fuse(lambda a, b: xp.sum((a - b) ** 2))
    r1, r2 = f(a, b), f(a, b)
    assert r1 == r2  # bitwise: fixed reduction order
    assert r1 == pytest.approx(np.sum((a - b) ** 2), rel=1e-12)


def test_repeated_calls_take_the_call_table_and_match_the_first():
    f = fuse(lambda a, s: (xp.sum(a * s), a * s))
    for s in (2, 2.0, np.float32(2), np.int16(2), True):
        first = f(F32, s)
        again = f(F32, s)
        expected = (np.sum(F32 * s), F32 * s)
        for g1, g2, e in zip(first, again, expected, strict=True):
            assert np.ndim(g1) == np.ndim(e) and np.asarray(g2).dtype == np.asarray(e).dtype
            np.testing.assert_allclose(g2, e, rtol=2e-5)
            np.testing.assert_array_equal(g1, g2)
    assert np.ndim(f(F32, 3.0)[0]) == 0  # a full reduction is a NumPy scalar on every path
    # non-contiguous arrays of a cached signature are copied, not misread
    g = fuse(lambda a: a + 1)
    g(A.copy())
    np.testing.assert_array_equal(g(A[:, ::-1].copy()), A[:, ::-1] + 1)
    np.testing.assert_array_equal(g(np.asfortranarray(A)), A + 1)


def test_remembered_signatures_run_in_rust_and_match_the_traced_call():
    f = fuse(lambda a, b, s: (a * b + s, xp.sum(a - b)))
    first = f(A, B, 2.5)
    assert f._remembered == 1
    again = f(A, B, 2.5)
    np.testing.assert_array_equal(again[0], first[0])
    assert again[1] == first[1] and np.ndim(again[1]) == 0
    # a new scalar value is a parameter: same signature, new result
    np.testing.assert_array_equal(f(A, B, -1.0)[0], A * B - 1.0)
    # a new shape or dtype is a new signature (traced in Python, then remembered)
    f(A[:2].copy(), B[:2].copy(), 2.5)
    f(F32, F32B, 2.5)
    assert f._remembered == 3 and f.trace_count == 2
    # out= with a remembered signature writes in place from Rust and returns the targets
    target, total = np.empty_like(A), np.empty(())
    got = f(A, B, 2.5, out=(target, total))
    assert got[0] is target and got[1] is total
    np.testing.assert_array_equal(target, first[0])
    assert total[()] == first[1]
    assert f._remembered == 3
    # an out= array overlapping an input takes the Python path: still NumPy's result
    a2 = A.copy()
    f(a2, B, 2.5, out=(a2, np.empty(())))
    np.testing.assert_array_equal(a2, first[0])
    # a wrong out= is reported by the Python path
    with pytest.raises(FusionTypeError):
        f(A, B, 2.5, out=target)


def test_fused_calls_appear_in_the_kernel_profile():
    f = fuse(lambda a: a * 2.0 + 1.0, kernel_name="profiled_axpb")
    f(FLAT)  # traced and remembered before the profile opens
    with xp.profiling.kernel_profile() as profile:
        for _ in range(3):
            np.testing.assert_array_equal(f(FLAT), FLAT * 2.0 + 1.0)
    assert profile.as_dict()["profiled_axpb"]["host"]["calls"] == 3
    f(FLAT)  # not profiled any more
    assert profile.as_dict()["profiled_axpb"]["host"]["calls"] == 3


def test_op_aliases_and_reduction_names_come_from_the_rust_op_table():
    from cunumpy import _core

    aliases = dict(_core._fusion_op_aliases())
    arity = dict(_core._fusion_ops())
    floats = [np.linspace(0.1, 0.9, 7), np.linspace(0.2, 0.8, 7)]
    ints = [np.arange(1, 8, dtype=np.int64), np.arange(7, 0, -1, dtype=np.int64) % 3]
    for alias, name in aliases.items():
        args = (ints if "bitwise" in alias or name == "invert" else floats)[: arity[name]]
        if name == "arccosh":  # (its domain starts at 1)
            args = [a + 1 for a in args]
        f = fuse(lambda *a, alias=alias: getattr(xp, alias)(*a))
        # (libm and NumPy's SIMD loops may differ in the last place)
        np.testing.assert_allclose(f(*args), getattr(np, name)(*args), rtol=1e-14, err_msg=alias)
    reductions = dict(_core._fusion_reductions())
    assert {"sum", "amin", "amax", "var", "std"} <= set(reductions)
    for name, traced in reductions.items():
        f = fuse(lambda a, name=name: getattr(xp, name)(a, axis=0))
        want = getattr(np, traced)(A, axis=0)
        np.testing.assert_allclose(f(A), want, rtol=1e-12, err_msg=name)


def test_first_calls_run_through_the_rust_entry(monkeypatch):
    # Python only traces, plans and remembers a new signature; the Rust entry runs the call
    from cunumpy.kernels._fusion import FusedFunction

    def no_python_run(*args, **kwargs):
        raise AssertionError("the first call ran the Python path")

    monkeypatch.setattr(FusedFunction, "_run", no_python_run)
    f = fuse(lambda a, b, s: (a - b) * s, kernel_name="first_in_rust")
    r = f(A, B, 2.0)
    assert f.trace_count == 1 and f._remembered == 1
    np.testing.assert_array_equal(r, (A - B) * 2.0)
    out = np.empty_like(A)
    assert f(A, B, 3.0, out=out) is out  # out= of the plan's dtype and shape: Rust writes it
    np.testing.assert_array_equal(out, (A - B) * 3.0)
    total = fuse(lambda a: xp.sum(a))
    t = total(A)  # a 0-d result comes back as a NumPy scalar
    assert isinstance(t, np.float64) and np.isclose(t, np.sum(A), rtol=1e-12)
    # what the Rust entry declines (here a non-contiguous input) still takes the Python path
    with pytest.raises(AssertionError, match="Python path"):
        f(A[::2], B[::2], 2.0)
