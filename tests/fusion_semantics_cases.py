"""NumPy semantics of `fuse` (issue 22, items 2 and 3): the wider ufunc set, float16, in-place
updates of arguments, `out=`, None arguments, reductions with `dtype=`/`out=`, and the
exception classes. Each case is a function and its arguments; `check_case` runs it unfused
with NumPy and fused on a backend (`to_device` moves arrays there) and compares the results
and the arguments afterwards. Used by tests/cpu (NumPy), tests/cxx (the emulated device) and
tests/gpu (the GPU)."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

import cunumpy as xp

rng = np.random.default_rng(22)
F64 = rng.uniform(-3, 3, (4, 5))
F64B = rng.uniform(-3, 3, (4, 5))
POS = rng.uniform(0.5, 4, (4, 5))
UNIT = rng.uniform(-0.9, 0.9, (4, 5))
F32 = F64.astype(np.float32)
F16 = F64.astype(np.float16)
F16B = F64B.astype(np.float16)
I64 = rng.integers(-9, 10, (4, 5))
I64B = rng.integers(1, 10, (4, 5))
I8 = rng.integers(-9, 10, (4, 5)).astype(np.int8)
U8 = rng.integers(0, 200, (4, 5)).astype(np.uint8)
SPECIAL = np.array([0.0, -0.0, 1.5, -2.5, np.inf, -np.inf, np.nan, 1e-310, 7.0, -1e300])
# complex values in every quadrant; CXB shares some real parts with CX (so the imaginary parts
# decide the order) and CXN has NaN real and imaginary parts (NumPy's ordering and min/max rules)
CX = F64 + 1j * F64B
CXB = (F64B + 1j * F64)[::-1].copy()
CXB[1] = CX[1].real + 1j * F64[2]
CXB[2, :2] = CX[2, :2]
CX64 = CX.astype(np.complex64)
CXN = np.array([1 + 2j, complex(1, np.nan), complex(np.nan, 0), 2 + 1j, -1 + 5j, 3 - 1j, 0j])
CXNB = np.array([1 + 3j, 2 + 0j, 1 + 0j, complex(1, np.nan), -1 + 4j, 3 - 1j, complex(-0.0, 0)])


def _inplace_add(x, y):
    x += y


def _inplace_return(x, y):
    x *= y
    return x + 1


def _setitem_whole(x, y):
    x[...] = y * 2


def _out_kw(x, y, z):
    xp.add(x, y, out=z)
    return z


def _copyto(x, y):
    xp.copyto(x, y)


def _alias(x):
    y = x
    y += 1
    return x


def _copy_is_independent(x):
    y = x.copy()
    y += 1
    return x, y


def _none_arg(x, n, y):
    return x + y


def _scalar_rebinds(x, s):
    s += 1  # a scalar argument is immutable: rebinding, as in NumPy
    return x + s


def _reduce_out(x, out):
    x.sum(axis=0, out=out)


def _cupy_positional(x):
    return x.sum(1, None, None, False)


# (name, function, arguments): every case must give NumPy's values and leave the arguments
# as NumPy leaves them
def _inplace_twice(x, y):
    x += y
    x += y


def _empty_tuple(x):
    return ()


def _complex_order(a, b):
    return a < b, a <= b, a > b, a >= b


def _complex_min_max(a, b):
    return xp.maximum(a, b), xp.minimum(a, b), xp.fmax(a, b), xp.fmin(a, b)


def _complex_trig(a):
    return (
        xp.tan(a),
        xp.arcsin(a),
        xp.arccos(a),
        xp.arctan(a),
        xp.arcsinh(a),
        xp.arccosh(a),
        xp.arctanh(a),
    )


def _complex_explog(a):
    return xp.expm1(a), xp.exp2(a), xp.log2(a), xp.log10(a), xp.log1p(a)


CASES: list[tuple[str, Any, tuple[Any, ...]]] = [
    ("fmax", lambda a, b: xp.fmax(a, b), (SPECIAL, SPECIAL[::-1].copy())),
    ("fmin", lambda a, b: xp.fmin(a, b), (SPECIAL, SPECIAL[::-1].copy())),
    ("fmax_int", lambda a, b: xp.fmax(a, b), (I64, I64B)),
    ("arcsinh", lambda a: xp.arcsinh(a), (F64,)),
    ("arccosh", lambda a: xp.arccosh(a + 4), (POS,)),
    ("arctanh", lambda a: xp.arctanh(a), (UNIT,)),
    ("hypot", lambda a, b: xp.hypot(a, b), (F64, F64B)),
    ("deg2rad", lambda a: xp.deg2rad(a) + xp.radians(a), (F64,)),
    # (a sum, not a difference: a GPU contracts x*c - x*c into one fused multiply-add)
    ("rad2deg", lambda a: xp.rad2deg(a) + xp.degrees(a), (F64,)),
    ("fix", lambda a: xp.fix(a), (SPECIAL,)),
    ("exp2", lambda a: xp.exp2(a), (F64,)),
    ("cbrt", lambda a: xp.cbrt(a), (SPECIAL,)),
    ("logaddexp", lambda a, b: xp.logaddexp(a, b), (F64, F64B)),
    ("logaddexp_inf", lambda a, b: xp.logaddexp(a, b), (SPECIAL, SPECIAL)),
    ("logaddexp2", lambda a, b: xp.logaddexp2(a, b), (F64, F64B)),
    ("ldexp", lambda a, n: xp.ldexp(a, n), (F64, I64)),
    ("signbit", lambda a: xp.signbit(a), (SPECIAL,)),
    ("frexp", lambda a: xp.frexp(a), (SPECIAL,)),
    ("copysign", lambda a, b: xp.copysign(a, b), (F64, F64B)),
    ("nextafter", lambda a, b: xp.nextafter(a, b), (F64, F64B)),
    ("angle", lambda a: xp.angle(a), (F64,)),
    ("modf", lambda a: xp.modf(a), (SPECIAL,)),
    ("fmod", lambda a, b: xp.fmod(a, b), (F64, F64B)),
    ("fmod_int", lambda a, b: xp.fmod(a, b), (I64, I64B)),
    ("divmod", lambda a, b: xp.divmod(a, b), (I64, I64B)),
    ("divmod_op", lambda a, b: divmod(a, b), (F64, F64B)),
    ("sinc", lambda a: xp.sinc(a), (F64,)),
    ("float_power", lambda a, b: xp.float_power(a, b), (POS, F64B)),
    ("heaviside", lambda a: xp.heaviside(a, 0.5), (SPECIAL,)),
    ("nansum", lambda a: xp.nansum(a), (SPECIAL,)),
    ("nanprod", lambda a: xp.nanprod(a), (SPECIAL[:4].copy(),)),
    ("sum_dtype", lambda a: a.sum(axis=0, dtype=np.int8), (I64,)),
    ("sum_dtype_float32", lambda a: xp.sum(a, axis=1, dtype=np.float32), (F64,)),
    ("copy", lambda a: xp.copy(a) + a.copy(), (F64,)),
    ("float16_add", lambda a, b: a + b, (F16, F16B)),
    ("float16_chain", lambda a, b: (a * b + a) / (b - 3), (F16, F16B)),
    ("float16_math", lambda a: xp.exp(a) + xp.sin(a), (F16,)),
    ("float16_mixed", lambda a, b: a * b, (F16, F32)),
    ("float16_int8", lambda a, b: a + b, (F16, I8)),
    ("float16_scalar", lambda a: a * 1.7 + np.float16(0.3), (F16,)),
    ("float16_sum", lambda a: a.sum(axis=0), (F16,)),
    ("float16_astype", lambda a: a.astype(np.float16) * 3, (F64,)),
    ("int8_sin_is_float16", lambda a: xp.sin(a), (I8,)),
    ("uint8_sqrt", lambda a: xp.sqrt(a), (U8,)),
    ("inplace_add_no_return", _inplace_add, (F64.copy(), F64B)),
    ("inplace_then_return", _inplace_return, (I64.copy(), I64B)),
    ("setitem_whole", _setitem_whole, (F64.copy(), F64B)),
    ("out_kwarg", _out_kw, (F64, F64B, np.zeros((4, 5)))),
    ("copyto", _copyto, (np.zeros((4, 5), np.float32), F64B[0].astype(np.float32))),
    ("alias_sees_update", _alias, (F64.copy(),)),
    ("copy_is_independent", _copy_is_independent, (F64.copy(),)),
    ("none_argument", _none_arg, (F64, None, F64B)),
    ("scalar_rebinds", _scalar_rebinds, (F64, np.float64(2.0))),
    ("reduction_out", _reduce_out, (F64, np.zeros(5))),
    ("cupy_positional_sum", _cupy_positional, (F64,)),
    ("float16_inplace", _inplace_add, (F16.copy(), F16B)),
    # one traced value updated twice through two names: the second update reads the first
    ("inplace_aliased_argument", lambda x: _inplace_twice(x, x), (I64.copy(),)),
    ("return_empty_tuple", _empty_tuple, (F64,)),
    ("complex_order", _complex_order, (CX, CXB)),
    ("complex_order_nan", _complex_order, (CXN, CXNB)),
    ("complex_order_scalar", lambda a: (a < 0.5j, 1 >= a), (CX,)),
    ("complex_min_max", _complex_min_max, (CX, CXB)),
    ("complex_min_max_nan", _complex_min_max, (CXN, CXNB)),
    ("complex_reductions", lambda a: (a.max(axis=0), a.min(axis=1), xp.amax(a)), (CX,)),
    # (one value with a NaN part: with several, which one a parallel reduction returns depends
    # on its order; NumPy's is the first)
    ("complex_reduction_nan", lambda a: (a.max(), xp.min(a)), (CXN[[0, 1, 3, 4, 5, 6]],)),
    ("complex64_min_max", lambda a, b: (xp.maximum(a, b), a.min(axis=0)), (CX64, CX64[::-1])),
    ("complex_trig", _complex_trig, (CX * 0.5,)),
    ("complex_explog", _complex_explog, (CX,)),
    ("complex64_trig", _complex_trig, (CX64,)),
    ("complex64_explog", _complex_explog, (CX64,)),
    ("i0", lambda a: xp.i0(a), (F64 * 3,)),
    ("i0_special", lambda a: xp.i0(a), (SPECIAL,)),
    ("i0_float32", lambda a: xp.i0(a), (F32,)),
    ("i0_int_is_float64", lambda a: xp.i0(a), (I8,)),
    ("i0_float16", lambda a: xp.i0(a), (F16,)),
]


def _leaves(x: Any) -> list[Any]:
    return [v for item in x for v in _leaves(item)] if isinstance(x, tuple) else [x]


def _host(x: Any) -> Any:
    if isinstance(x, tuple):
        return tuple(_host(v) for v in x)
    if x is None or isinstance(x, (np.ndarray, np.generic, int, float, complex, bool)):
        return x
    return xp.to_numpy(x)


def _same(got: Any, want: Any, what: str, rtol: float) -> None:
    if want is None:
        assert got is None, f"{what}: expected None, got {got!r}"
        return
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want), f"{what}: {got!r}"
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            _same(g, w, f"{what}[{i}]", rtol)
        return
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype}, NumPy gives {want.dtype}"
    assert got.shape == want.shape, f"{what}: shape {got.shape}, NumPy gives {want.shape}"
    np.testing.assert_allclose(got, want, rtol=rtol, atol=0, equal_nan=True, err_msg=what)
    if want.dtype.kind == "c":
        # a NaN part is NaN on both sides (assert_allclose takes any NaN for any NaN)
        assert np.array_equal(np.isnan(got.real), np.isnan(want.real)), what
        assert np.array_equal(np.isnan(got.imag), np.isnan(want.imag)), what
    if want.dtype.kind == "f":
        # the signs of zeros and the special values are NumPy's too
        assert np.array_equal(np.signbit(got), np.signbit(want)) or np.isnan(want).any(), what


def check_case(func: Any, args: tuple[Any, ...], to_device: Any, rtol: float = 1e-12) -> None:
    """Runs ``func`` with NumPy and fused on a backend; compares results and arguments."""
    ref_args = tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)
    dev_args = tuple(to_device(a.copy()) if isinstance(a, np.ndarray) else a for a in args)
    # (NumPy 2.5 deprecates numpy.fix; the reference still uses it)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        with xp.use_backend("numpy"):  # the reference is NumPy's, whatever the backend
            want = func(*ref_args)
        got = xp.fuse(func)(*dev_args)
    if any(getattr(w, "dtype", None) in (np.float32, np.complex64) for w in _leaves(want)):
        # (float32 sums: NumPy's summation order is not ours; complex64 functions: computed in
        # complex128 and rounded, NumPy's in single precision)
        rtol = max(rtol, 2e-6)
    if isinstance(want, np.ndarray) and want.dtype == np.float16:
        rtol = max(rtol, 1e-3)  # (one float16 rounding apart at most)
    if any(isinstance(a, np.ndarray) and a.dtype == np.float16 for a in args):
        rtol = max(rtol, 1e-2)
    _same(_host(got), want, "result", rtol)
    for i, (g, w) in enumerate(zip(dev_args, ref_args, strict=True)):
        if isinstance(w, np.ndarray):
            _same(_host(g), w, f"argument {i} after the call", rtol)
