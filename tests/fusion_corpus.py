"""The corpus of fused functions that every backend runs: NumPy (the CPU executor,
tests/cpu/test_fusion_cpu.py), the emulated device (the generated CUDA C in the CPU emulator,
tests/cxx/test_fusion_emulated_cxx.py) and the GPU (tests/gpu/test_fusion_gpu.py).

Each case is a function written with ``np`` (rebound to the tracing namespace by ``fuse``),
its arguments (NumPy arrays and scalars) and a reference: the same function run eagerly by
NumPy unless the case gives its own. ``run_case(case, to_device, to_host)`` runs the fused
function on the backend's arrays and checks dtype, shape and values against the reference.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cunumpy.kernels import fuse

rng = np.random.default_rng(7)
A = rng.standard_normal((6, 37))
B = rng.standard_normal((6, 37))
C = rng.standard_normal(37)
COL = rng.standard_normal((6, 1))
T3 = rng.standard_normal((3, 4, 5))
ROW3 = rng.standard_normal((4, 1))
FLAT = rng.standard_normal(1000)
ZERO_D = np.array(1.75)
I32 = rng.integers(-50, 50, (6, 37)).astype(np.int32)
I64 = rng.integers(-(10**9), 10**9, (6, 37)).astype(np.int64)
I8 = rng.integers(-100, 100, (6, 37)).astype(np.int8)
I16 = rng.integers(-3000, 3000, (6, 37)).astype(np.int16)
U8 = rng.integers(0, 200, (6, 37)).astype(np.uint8)
U16 = rng.integers(0, 60000, (6, 37)).astype(np.uint16)
U64 = rng.integers(0, 2**40, (6, 37)).astype(np.uint64)
F32 = rng.standard_normal((6, 37)).astype(np.float32)
F32B = rng.standard_normal((6, 37)).astype(np.float32)
BOOL = rng.random((6, 37)) > 0.5
BOOL2 = rng.random((6, 37)) > 0.3
Z = rng.standard_normal((6, 37)) + 1j * rng.standard_normal((6, 37))
Z2 = rng.standard_normal((6, 37)) + 1j * rng.standard_normal((6, 37))
ZROW = rng.standard_normal(37) + 1j * rng.standard_normal(37)
Z64 = Z.astype(np.complex64)
Z64B = Z2.astype(np.complex64)


@dataclass
class Case:
    name: str
    func: Callable[..., Any]
    args: tuple[Any, ...]
    ref: Callable[..., Any] | None = None
    out: bool = False  # also call with out= (preallocated results)
    tol: dict[str, float] = field(default_factory=dict)  # per result dtype name


def _softmax(x):
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True)


_square = fuse(lambda x: x * x, kernel_name="square")
_center = fuse(lambda x: x - np.mean(x, axis=-1, keepdims=True), kernel_name="center")


def _nested_dist(a, b):
    return np.sqrt(np.sum(_square(a - b), axis=1))


def _nested_center_scale(a):
    return _center(a) * 2.0 + _square(a)


CASES: list[Case] = [
    # ---- elementwise chains -------------------------------------------------------------
    Case("axpy", lambda a, b: a * b + 2.5 * a, (A, B), out=True),
    Case("chain", lambda a, b, c: a * b + c * a - 2.5 * a, (A, B, C)),
    Case("exp_sin", lambda a, b, c: np.exp(-a * a) * np.sin(b) + c, (A, B, C)),
    Case(
        "math",
        lambda a: np.tanh(a) + np.cos(a) - np.sqrt(np.abs(a)) + np.log1p(a * a),
        (A,),
    ),
    Case("exp_log", lambda a: np.log(np.exp(a) + 1.0) - np.expm1(a * 0.1), (A,)),
    Case("trig_inverse", lambda a: np.arctan2(a, 1.5) + np.arcsin(np.tanh(a)), (A,)),
    Case("floor_ceil", lambda a: np.floor(a * 3) + np.ceil(a) - np.trunc(a), (A,)),
    Case("power", lambda a, b: np.power(np.abs(a), b), (A, B)),
    Case("square_rint", lambda a: np.square(a) + np.rint(a * 4), (A,)),
    Case("minmax", lambda a, b: np.minimum(a, b) - np.maximum(a, 0.5), (A, B)),
    Case("clip", lambda a: np.clip(a, -0.5, 0.5), (A,)),
    Case("clip_method", lambda a: a.clip(-0.25, 0.75), (A,)),
    Case("where", lambda a, b: np.where(a > b, a, b * 2), (A, B)),
    Case("where_scalar_branches", lambda a: np.where(a > 0, 1.0, -1.0) * a, (A,)),
    Case("compare", lambda a, b: (a < b) & (a > -1.0), (A, B)),
    Case("logical", lambda a, b: np.logical_or(np.logical_not(a > 0), b < 0), (A, B)),
    Case("isfinite", lambda a: np.isfinite(a / (a > 0)), (A,)),
    Case("sign_negative", lambda a: np.sign(a) * -a + np.negative(a), (A,)),
    Case("python_scalar_arg", lambda a, s: a * s + s, (A, 3.5)),
    Case("numpy_scalar_arg", lambda a, s: a * s, (F32, np.float64(3.5))),
    Case("int_scalar_arg", lambda i, s: i * s - 1, (I32, 7)),
    # ---- broadcasting -------------------------------------------------------------------
    Case("broadcast_row", lambda a, c: a * c + c, (A, C)),
    Case("broadcast_col", lambda a, col: a - col * 2, (A, COL)),
    Case("broadcast_outer", lambda col, c: col * c, (COL, C)),
    Case("broadcast_3d", lambda t, r: t * r + 1, (T3, ROW3)),
    Case("broadcast_0d", lambda a, z: a * z + z, (A, ZERO_D)),
    Case("broadcast_reduce", lambda a, c: np.sum(a * c, axis=1), (A, C)),
    # ---- integers, bool ---------------------------------------------------------------
    Case("int_arith", lambda i: i * 3 + i // 4 - i % 5, (I32,)),
    Case("bitwise", lambda i: (i & 7) | (i ^ 12) << 1, (I32,)),
    Case("int64_arith", lambda i: (i >> 3) + i * 2 - (i & 255), (I64,)),
    Case("int8_wrap", lambda i: i * 3 + 100, (I8,)),
    Case("int16_abs", lambda i: np.abs(i) - i // 7, (I16,)),
    Case("uint8_weak", lambda u: u + 3, (U8,)),
    Case("uint16_ops", lambda u: (u >> 2) ^ (u // 3), (U16,)),
    Case("uint64_ops", lambda u: u * 3 + (u % 1000), (U64,)),
    Case("int_true_divide", lambda i: i / 7, (I32,)),
    Case("int_to_float_mix", lambda i, a: i * a + i, (I32, A)),
    Case("invert_bool", lambda m: ~m, (BOOL,)),
    Case("bool_logic", lambda m, n: (m & n) | (m ^ ~n), (BOOL, BOOL2)),
    Case("bool_where", lambda m, a, b: np.where(m, a, b), (BOOL, A, B)),
    Case("bool_sum", lambda m: np.sum(m, axis=1), (BOOL,)),
    Case("bool_to_int", lambda m: m.astype(np.int32) * 5 - 1, (BOOL,)),
    # ---- float32 ------------------------------------------------------------------------
    Case("float32_weak", lambda f: f * 2.5 + 1, (F32,)),
    Case("float32_f64", lambda f, a: f * a, (F32, A)),
    Case("float32_math", lambda f, g: np.exp(f * 0.5) - np.sqrt(np.abs(g)) * f, (F32, F32B)),
    Case("f32_sum", lambda f: np.sum(f, axis=1), (F32,)),
    Case("f32_mean_all", lambda f: np.mean(f), (F32,)),
    Case("f32_var_axis", lambda f: np.var(f, axis=0), (F32,), tol={"float32": 1e-4}),
    # ---- casts ----------------------------------------------------------------------------
    Case("astype", lambda a: (a * 100).astype(np.int32) + 1, (A,)),
    Case("astype_f32", lambda a: (a * 10).astype(np.float32), (A,)),
    # ---- reductions: each kind, with and without axis and keepdims -----------------------
    Case("sum_sq_diff", lambda a, b: np.sum((a - b) ** 2), (A, B)),
    Case("sum_flat", lambda x: np.sum(x * 2.0), (FLAT,)),
    Case("sum_axis0", lambda a: np.sum(a, axis=0), (A,)),
    Case("sum_axis1_keep", lambda a: np.sum(a, axis=1, keepdims=True), (A,), out=True),
    Case("sum_axes_3d", lambda t: np.sum(t, axis=(0, 2)), (T3,)),
    Case("sum_keep_all", lambda a: np.sum(a, keepdims=True), (A,)),
    Case("prod_all", lambda a: np.prod(a * 0.1 + 1), (A,)),
    Case("prod_axis1", lambda a: np.prod(a * 0.5 + 1, axis=1), (A,)),
    Case("prod_axis0_keep", lambda a: np.prod(a * 0.2 + 1, axis=0, keepdims=True), (A,)),
    Case("min_all", lambda a: np.min(a), (A,)),
    Case("min_axis0_keep", lambda a: np.min(a, axis=0, keepdims=True), (A,)),
    Case("max_axis_neg", lambda a: np.max(a, axis=-1), (A,)),
    Case("max_all_keep", lambda a: np.max(a * a, keepdims=True), (A,)),
    Case("int_max_axis", lambda i: np.max(i, axis=0), (I32,)),
    Case("int_min_all", lambda i: np.min(i - 3), (I64,)),
    Case("mean_all", lambda a: np.mean(a), (A,)),
    Case("mean_method", lambda a: a.mean(axis=0, keepdims=True), (A,)),
    Case("mean_axis1", lambda a: np.mean(a * 3, axis=1), (A,)),
    Case("var", lambda a: np.var(a), (A,)),
    Case("var_axis", lambda a: np.var(a, axis=1), (A,)),
    Case("var_keep", lambda a: np.var(a, axis=0, keepdims=True), (A,)),
    Case("std_all", lambda a: np.std(a), (A,)),
    Case("std_ddof", lambda a: np.std(a, axis=0, correction=1), (A,)),
    Case("std_method_ddof", lambda a: a.std(axis=1, ddof=1, keepdims=True), (A,)),
    Case("any_all", lambda a: (np.any(a > 2.0), np.all(a > -10.0)), (A,)),
    Case("any_axis", lambda a: np.any(a > 1.0, axis=1), (A,)),
    Case("all_axis_keep", lambda a: np.all(a > -1.5, axis=0, keepdims=True), (A,)),
    Case("int_sum", lambda i: np.sum(i, axis=1), (I32,)),
    Case("int_sum_all", lambda i: np.sum(i * 2), (I64,)),
    Case("int_mean", lambda i: np.mean(i), (I32,)),
    Case("uint8_sum", lambda u: np.sum(u, axis=0), (U8,)),
    # ---- reductions feeding elementwise work --------------------------------------------
    Case("a_minus_mean", lambda a: a - np.mean(a), (A,), out=True),
    Case("a_minus_mean_flat", lambda x: x - np.mean(x), (FLAT,)),
    Case("a_minus_row_mean", lambda a: a - np.mean(a, axis=1, keepdims=True), (A,)),
    Case("softmax", _softmax, (A,)),
    Case("softmax_3d", _softmax, (T3,)),
    Case("center_scale", lambda a: (a - a.mean(axis=0)) / a.std(axis=0), (A,)),
    Case("normalize_l2", lambda a: a / np.sqrt(np.sum(a * a, axis=1, keepdims=True)), (A,)),
    # ---- several outputs ----------------------------------------------------------------
    Case("two_outputs", lambda a, b: (a + b, a * b), (A, B), out=True),
    Case("three_outputs_mixed", lambda a: (a.sum(), a - 1, a.max(axis=0)), (A,), out=True),
    Case("outputs_of_dtypes", lambda a, i: (a > 0, i + 1, a.astype(np.float32)), (A, I32)),
    Case("stats", lambda a: (np.min(a, axis=1), np.max(a, axis=1), np.mean(a, axis=1)), (A,)),
    # ---- complex (complex64 / complex128) ------------------------------------------------
    Case(
        "complex_arith_mixed_float",
        lambda z, w, a, r: z * a + z / (w + 2) - w**2 + r * 0.5,
        (Z, Z2, A, ZROW),
        out=True,
    ),
    # float32 array + Python complex (weak) -> complex64
    Case("complex64_weak_python_complex", lambda z, f: z * f + f * 1.5j - 2j, (Z64, F32)),
    # a NumPy complex64 scalar is strong: with a complex128 array -> complex128
    Case("complex_numpy_scalar", lambda z, s, f: z * s + f, (Z, np.complex64(1 - 2j), F32)),
    Case("complex_python_scalar_arg", lambda z, s: (z - s) / s, (Z64, 0.5 + 0.25j)),
    Case(
        "complex_abs_real_imag_conj",
        lambda z: (np.abs(z), z.real, np.imag(z), np.conj(z) * z.imag, z.conjugate()),
        (Z,),
    ),
    Case("complex64_abs_real_imag", lambda z: (abs(z), np.real(z) - z.imag), (Z64,)),
    Case(
        "complex_exp_log_sqrt_trig",
        lambda z: np.exp(z) * np.sqrt(z) + np.log(z) - np.sin(z) * np.cos(z) + np.tanh(z),
        (Z,),
    ),
    Case("complex64_exp_sqrt", lambda z: np.exp(z * 0.5j) + np.sqrt(z), (Z64,)),
    Case("complex_power", lambda z, w: z**3 + z ** (-2) + z**0.5 + z**w, (Z, Z2)),
    Case(
        "complex_sum_axis_keepdims",
        lambda z, w: np.sum(z * np.conj(w), axis=1, keepdims=True),
        (Z, Z2),
    ),
    Case("complex_sum_axis0_prod", lambda z: (z.sum(axis=0), np.prod(1 + 0.1j * z, axis=1)), (Z,)),
    Case("complex64_mean", lambda z: (np.mean(z * 2j, axis=0), z.mean()), (Z64,)),
    Case("complex_minus_mean", lambda z: z - np.mean(z, axis=-1, keepdims=True), (Z,)),
    Case("complex_abs_sum", lambda z: np.sum(np.abs(z) ** 2, axis=1), (Z,)),
    Case(
        "complex_where_compare",
        lambda z, w, a: (np.where(a > 0, z, w), z == w, np.where(z != 0, z, 1j)),
        (Z, Z2, A),
    ),
    Case(
        "complex_from_real_astype",
        lambda a, f: (a.astype(np.complex64) * 1j + f, f.astype(np.complex128).imag),
        (A, F32),
    ),
    # ---- nested fused calls (inlined) ---------------------------------------------------
    Case(
        "nested_dist",
        _nested_dist,
        (A, B),
        ref=lambda a, b: np.sqrt(np.sum((a - b) ** 2, axis=1)),
    ),
    Case(
        "nested_center_scale",
        _nested_center_scale,
        (A,),
        ref=lambda a: (a - np.mean(a, axis=-1, keepdims=True)) * 2.0 + a * a,
    ),
]

TOLERANCE = {"float32": 2e-5, "float64": 1e-11, "complex64": 5e-5, "complex128": 1e-11}


def expected_of(case: Case) -> tuple[np.ndarray, ...]:
    """The reference results (NumPy, eagerly), always a tuple of arrays."""
    with np.errstate(all="ignore"):
        r = (case.ref or case.func)(*case.args)
    return tuple(np.asarray(x) for x in r) if isinstance(r, tuple) else (np.asarray(r),)


def check_results(case: Case, got: tuple[np.ndarray, ...]) -> None:
    """Asserts dtype, shape and values of each result against the reference."""
    expected = expected_of(case)
    assert len(got) == len(expected), case.name
    for g, e in zip(got, expected, strict=True):
        g = np.asarray(g)
        assert g.dtype == e.dtype, (case.name, g.dtype, e.dtype)
        assert g.shape == e.shape, (case.name, g.shape, e.shape)
        if e.dtype.kind in "fc":
            tol = case.tol.get(e.dtype.name, TOLERANCE[e.dtype.name])
            np.testing.assert_allclose(g, e, rtol=tol, atol=tol, err_msg=case.name)
        else:
            np.testing.assert_array_equal(g, e, err_msg=case.name)


def run_case(
    case: Case,
    to_device: Callable[[Any], Any] = lambda x: x,
    to_host: Callable[[Any], np.ndarray] = np.asarray,
    empty: Callable[[tuple[int, ...], Any], Any] | None = None,
) -> None:
    """Runs the case fused on a backend (``to_device`` moves NumPy arrays there,
    ``to_host`` back) and checks it; with ``case.out``, also with ``out=`` arrays made by
    ``empty(shape, dtype)``, checking that the results are those arrays."""
    f = fuse(case.func, kernel_name=case.name)
    args = [to_device(a) if isinstance(a, np.ndarray) else a for a in case.args]
    with np.errstate(all="ignore"):
        r = f(*args)
    got = r if isinstance(r, tuple) else (r,)
    check_results(case, tuple(to_host(x) for x in got))
    if case.out and empty is not None:
        expected = expected_of(case)
        outs = tuple(empty(e.shape, e.dtype) for e in expected)
        r = f(*args, out=outs if isinstance(r, tuple) else outs[0])
        got = r if isinstance(r, tuple) else (r,)
        assert all(g is o for g, o in zip(got, outs, strict=True)), case.name
        check_results(case, tuple(to_host(x) for x in outs))
