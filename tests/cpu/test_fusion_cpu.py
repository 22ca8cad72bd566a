"""cunumpy.kernels.fuse on NumPy arrays: tracing, NEP 50 dtypes and the CPU executor, checked
against NumPy itself."""

from __future__ import annotations

import numpy as np
import pytest

import cunumpy as xp
from cunumpy.exceptions import (
    FusionTypeError,
    FusionUnsupportedError,
    FusionValueError,
)
from cunumpy.kernels import fuse

rng = np.random.default_rng(7)
A = rng.standard_normal((6, 37))
B = rng.standard_normal((6, 37))
C = rng.standard_normal(37)
I32 = rng.integers(-50, 50, (6, 37)).astype(np.int32)
U8 = rng.integers(0, 200, (6, 37)).astype(np.uint8)
F32 = rng.standard_normal((6, 37)).astype(np.float32)
BOOL = rng.random((6, 37)) > 0.5


CASES = [
    ("axpy", lambda a, b: a * b + 2.5 * a, (A, B)),
    ("chain", lambda a, b, c: a * b + c * a - 2.5 * a, (A, B, C)),
    ("exp_sin", lambda a, b, c: xp.exp(-a * a) * xp.sin(b) + c, (A, B, C)),
    ("math", lambda a: xp.tanh(a) + xp.cos(a) - xp.sqrt(xp.abs(a)) + xp.log1p(a * a), (A,)),
    ("floor_ceil", lambda a: xp.floor(a * 3) + xp.ceil(a) - xp.trunc(a), (A,)),
    ("power", lambda a, b: xp.power(xp.abs(a), b), (A, B)),
    ("minmax", lambda a, b: xp.minimum(a, b) - xp.maximum(a, 0.5), (A, B)),
    ("clip", lambda a: xp.clip(a, -0.5, 0.5), (A,)),
    ("clip_method", lambda a: a.clip(-0.25, 0.75), (A,)),
    ("where", lambda a, b: xp.where(a > b, a, b * 2), (A, B)),
    ("compare", lambda a, b: (a < b) & (a > -1.0), (A, B)),
    ("logical", lambda a, b: xp.logical_or(xp.logical_not(a > 0), b < 0), (A, B)),
    ("broadcast_row", lambda a, c: a * c + c, (A, C)),
    ("int_arith", lambda i: i * 3 + i // 4 - i % 5, (I32,)),
    ("bitwise", lambda i: (i & 7) | (i ^ 12) << 1, (I32,)),
    ("invert_bool", lambda m: ~m, (BOOL,)),
    ("uint8_weak", lambda u: u + 3, (U8,)),
    ("float32_weak", lambda f: f * 2.5 + 1, (F32,)),
    ("float32_f64", lambda f, a: f * a, (F32, A)),
    ("int_true_divide", lambda i: i / 7, (I32,)),
    ("astype", lambda a: (a * 100).astype(np.int32) + 1, (A,)),
    ("astype_ns", lambda a: xp.astype(a * 10, xp.float32), (A,)),
    ("sum_sq_diff", lambda a, b: xp.sum((a - b) ** 2), (A, B)),
    ("a_minus_mean", lambda a: a - xp.mean(a), (A,)),
    ("sum_axis0", lambda a: xp.sum(a, axis=0), (A,)),
    ("sum_axis1_keep", lambda a: xp.sum(a, axis=1, keepdims=True), (A,)),
    ("prod_axis1", lambda a: xp.prod(a * 0.5 + 1, axis=1), (A,)),
    ("min_all", lambda a: xp.min(a), (A,)),
    ("max_axis_neg", lambda a: xp.max(a, axis=-1), (A,)),
    ("mean_method", lambda a: a.mean(axis=0, keepdims=True), (A,)),
    ("var", lambda a: xp.var(a), (A,)),
    ("var_axis", lambda a: xp.var(a, axis=1), (A,)),
    ("std_ddof", lambda a: xp.std(a, axis=0, correction=1), (A,)),
    ("std_method_ddof", lambda a: a.std(axis=1, ddof=1, keepdims=True), (A,)),
    ("any_all", lambda a: (xp.any(a > 2.0), xp.all(a > -10.0)), (A,)),
    ("any_axis", lambda a: xp.any(a > 1.0, axis=1), (A,)),
    ("int_sum", lambda i: xp.sum(i, axis=1), (I32,)),
    ("int_mean", lambda i: xp.mean(i), (I32,)),
    ("f32_sum", lambda f: xp.sum(f, axis=1), (F32,)),
    (
        "softmax",
        lambda x: (
            xp.exp(x - xp.max(x, axis=-1, keepdims=True))
            / xp.sum(xp.exp(x - xp.max(x, axis=-1, keepdims=True)), axis=-1, keepdims=True)
        ),
        (A,),
    ),
    ("center_scale", lambda a: (a - a.mean(axis=0)) / a.std(axis=0), (A,)),
    ("two_outputs", lambda a, b: (a + b, a * b), (A, B)),
    ("three_outputs_mixed", lambda a: (a.sum(), a - 1, a.max(axis=0)), (A,)),
    ("isnan", lambda a: xp.isfinite(a / (a > 0)), (A,)),
    ("python_scalar_arg", lambda a, s: a * s + s, (A, 3.5)),
    ("numpy_scalar_arg", lambda a, s: a * s, (F32, np.float64(3.5))),
]


@pytest.mark.parametrize("name,func,args", CASES, ids=[c[0] for c in CASES])
def test_fused_matches_numpy(name, func, args):
    with np.errstate(all="ignore"):
        np_expected = func(*args)  # xp is the NumPy backend here: NumPy evaluates it eagerly
        got = fuse(func)(*args)
    if isinstance(np_expected, tuple):
        assert isinstance(got, tuple) and len(got) == len(np_expected)
        pairs = zip(got, np_expected, strict=True)
    else:
        pairs = [(got, np_expected)]
    for g, e in pairs:
        g, e = np.asarray(g), np.asarray(e)
        assert g.dtype == e.dtype, (name, g.dtype, e.dtype)
        assert g.shape == e.shape
        if e.dtype.kind == "f":
            tol = 2e-5 if e.dtype == np.float32 else 1e-12
            np.testing.assert_allclose(g, e, rtol=tol, atol=tol)
        else:
            np.testing.assert_array_equal(g, e)


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
    with pytest.raises(FusionUnsupportedError, match="indexing"):
        fuse(lambda a: a[0])(A)


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
