"""``fuse``: NumPy-style Python functions compiled into as few kernels as their data
dependencies allow, by cunumpy's fusion compiler (``cunumpy-fusion``, in Rust).

On the first call for a signature (the dtypes and ndims of the array arguments, and which
arguments are Python or NumPy scalars) the function runs once on symbolic values that record
every operation in a graph; the graph is planned for the call's shapes and run by the CPU
executor (NumPy arrays) or as generated CUDA kernels (CuPy arrays). Scalar arguments and
constants are kernel parameters: new values never retrace or recompile.
"""

from __future__ import annotations

import functools
import linecache
import os
import re
import sys
import threading
import types
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import _core
from ..exceptions import (
    FusionError,
    FusionOverflowError,
    FusionTypeError,
    FusionUnsupportedError,
    FusionValueError,
    MixedBackendError,
)
from . import _profile
from ._vectorcall import use_vectorcall

__all__ = ["fuse", "FusedFunction"]

_SKIP_DIRS = tuple(
    os.path.dirname(os.path.abspath(m.__file__)) + os.sep
    for m in (sys.modules["cunumpy"], np)
    if getattr(m, "__file__", None)
)
# the op names and reductions a fused function may call, from the Rust op table
# (names starting with `_` are internal steps, such as the rounding of float16 results)
_OPS = {name for name, _ in _core._fusion_ops() if not name.startswith("_")} | {
    a for a, _ in _core._fusion_op_aliases()
}
# the dtype of a Python scalar argument or constant (weak, NEP 50), by _python_scalar_kind
_PYTHON_SCALAR_DTYPES = {
    "bool": "bool",
    "int": "int64",
    "float": "float64",
    "complex": "complex128",
}
_REDUCTIONS = dict(_core._fusion_reductions())  # name -> the name it is traced under
_ARITY = dict(_core._fusion_ops())
_ARITY.update({a: _ARITY[t] for a, t in _core._fusion_op_aliases()})
_local = threading.local()


def _user_site() -> str:
    """``file:line: `source``` of the innermost frame outside cunumpy and NumPy."""
    frame = sys._getframe(1)
    while frame is not None:
        filename = os.path.abspath(frame.f_code.co_filename)
        skip = filename.startswith(_SKIP_DIRS) or "array_api_compat" in filename
        if not skip:
            line = linecache.getline(frame.f_code.co_filename, frame.f_lineno).strip()
            where = f"{frame.f_code.co_filename}:{frame.f_lineno}"
            return f"{where}: `{line}`" if line else where
        frame = frame.f_back
    return "<unknown>"


class _UnsupportedAttribute(FusionUnsupportedError, AttributeError):
    """An attribute a traced value does not have (``hasattr`` answers False)."""


def _unsupported(what: str, cls: type = FusionUnsupportedError) -> FusionUnsupportedError:
    tracer = getattr(_local, "tracer", None)
    name = tracer.name if tracer is not None else "?"
    return cls(f"fuse: {what} is not supported in fused function '{name}' ({_user_site()})")


def _c_ident(name: str) -> str:
    ident = re.sub(r"\W", "_", name.replace("<lambda>", "lambda"))
    return ident if ident and not ident[0].isdigit() else f"f_{ident}"


def _dtype_name(dtype: Any) -> str:
    try:
        return np.dtype(dtype).name
    except TypeError:
        return np.dtype(getattr(dtype, "name", str(dtype))).name


def _python_scalar_kind(x: Any) -> str:
    """``"bool"``, ``"int"``, ``"float"`` or ``"complex"`` for a Python scalar (subclasses of
    float, such as NumPy's float64, count as float; of complex, as complex)."""
    if isinstance(x, bool):
        return "bool"
    if isinstance(x, int):
        return "int"
    if isinstance(x, complex):
        return "complex"
    return "float"


class _Tracer:
    """Turns operations on symbols into graph-builder calls; constants become parameters."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.builder = _core.FusionGraphBuilder()
        self.constants: list[Any] = []
        # the array arguments' symbols and their values at the start (an in-place update
        # rebinds a symbol's value; what changed is written back to the caller's array)
        self.arguments: list[tuple[Symbol, int]] = []

    def call(self, method: str, *args: Any, **kwargs: Any) -> int:
        try:
            return getattr(self.builder, method)(*args, **kwargs)
        except FusionError as exc:
            raise type(exc)(f"{exc} (in fused function '{self.name}', {_user_site()})") from None

    def sym(self, vid: int) -> Symbol:
        return Symbol(self, vid)

    def value(self, x: Any) -> int:
        """The graph value of a symbol or a constant (a new scalar parameter)."""
        if isinstance(x, Symbol):
            if x._tracer is not self:
                raise _unsupported("a value from another fused call")
            return x._id
        if isinstance(x, (bool, int, float, complex)) and not isinstance(x, np.generic):
            dtype = _PYTHON_SCALAR_DTYPES[_python_scalar_kind(x)]
            if dtype == "int64" and not -(2**63) <= x < 2**64:
                raise FusionTypeError(
                    f"fuse: the constant {x} does not fit in 64 bits "
                    f"(in fused function '{self.name}', {_user_site()})"
                )
            vid = self.call("scalar", dtype, True)
            self.constants.append(x)
            return vid
        if isinstance(x, np.generic) or (isinstance(x, np.ndarray) and x.ndim == 0):
            x = np.asarray(x)[()]
            vid = self.call("scalar", x.dtype.name, False)
            self.constants.append(x.item())
            return vid
        raise _unsupported(f"a constant of type {type(x).__name__}")

    def op(self, name: str, *args: Any) -> Symbol:
        if not any(isinstance(a, Symbol) for a in args):
            raise _unsupported(f"`{name}` on constants only")
        _check_python_ints(self, name, args)
        ids = [self.value(a) for a in args]
        out = self.sym(self.call("op", name, ids))
        out._array = any(isinstance(a, Symbol) and a._array for a in args)
        return out

    def update(self, target: Any, value: Symbol, casting: str = "same_kind") -> Symbol:
        """``target[...] = value`` as NumPy's in-place operations and ``out=`` do it: the
        value cast to the target's dtype (``casting`` as NumPy checks it), broadcast to its
        shape (it may not have more dimensions). The target symbol takes the new value, so
        every name bound to it sees the update, and an argument's update reaches the caller."""
        if not isinstance(target, Symbol) or target._tracer is not self:
            raise FusionTypeError(
                f"fuse: out= must be an array of the fused function, got "
                f"{type(target).__name__} (in fused function '{self.name}', {_user_site()})"
            )
        if not target._array:
            raise _unsupported("writing into a scalar")
        if not isinstance(value, Symbol):
            value = self.sym(self.call("op", "positive", [self.value(value)]))
        if value.ndim > target.ndim:
            raise FusionValueError(
                f"fuse: non-broadcastable output operand: a {value.ndim}-d result cannot be "
                f"written into a {target.ndim}-d array (in fused function '{self.name}', "
                f"{_user_site()})"
            )
        src = value.dtype if not value._weak else np.result_type(target.dtype, value.dtype)
        if casting != "unsafe" and not np.can_cast(src, target.dtype, casting):
            raise FusionTypeError(
                f"fuse: cannot cast the result from {value.dtype} to {target.dtype} with "
                f"casting rule '{casting}' (in fused function '{self.name}', {_user_site()})"
            )
        vid = value._id
        if value.ndim < target.ndim:  # broadcast to the target's shape
            vid = self.call("op", "where", [self.value(True), vid, target._id])
        if self.builder.info(vid)[0] != target.dtype.name or self.builder.info(vid)[2]:
            vid = self.call("astype", vid, target.dtype.name)
        target._id = vid
        target._weak = False
        return target

    def reduce(
        self,
        kind: str,
        x: Any,
        axis: Any = None,
        keepdims: bool = False,
        ddof: int = 0,
        dtype: Any = None,
        out: Any = None,
        correction: Any = None,
        **extra: Any,
    ) -> Symbol:
        if correction is not None:  # the array API's name for ddof
            ddof = correction
        extra.pop("where", True) is True or _raise(_unsupported(f"`{kind}(..., where=)`"))
        if extra:
            raise _unsupported(f"`{kind}(..., {next(iter(extra))}=)`")
        if not isinstance(x, Symbol):
            raise _unsupported(f"`{kind}` of a constant")
        if isinstance(out, tuple) and len(out) == 1:
            out = out[0]
        if dtype is not None:
            dtype = np.dtype(dtype)
            if kind in ("sum", "prod", "mean", "var", "std") and dtype != x.dtype:
                x = x.astype(dtype)
        result = self._reduce(kind, x, axis, keepdims, ddof)
        if dtype is not None and result.dtype != dtype:
            result = result.astype(dtype)
        if out is not None:
            return self.update(out, result)
        return result

    def _reduce(self, kind: str, x: Symbol, axis: Any, keepdims: Any, ddof: Any) -> Symbol:
        single = isinstance(axis, (int, np.integer))
        if axis is None:
            axes = None
        elif single:
            axes = [int(axis)]
        else:
            axes = [int(a) for a in axis]
        return self.sym(
            self.call("reduce", kind, x._id, axes, bool(keepdims), int(ddof), single=single)
        )


def _binary(name: str, reflected: bool = False) -> Callable[[Symbol, Any], Symbol]:
    def method(self: Symbol, other: Any) -> Symbol:
        args = (other, self) if reflected else (self, other)
        return self._tracer.op(name, *args)

    method.__name__ = f"__{'r' if reflected else ''}{name}__"
    return method


def _inplace(name: str) -> Callable[[Symbol, Any], Symbol]:
    def method(self: Symbol, other: Any) -> Symbol:
        result = self._tracer.op(name, self, other)
        if not self._array:  # scalars are immutable: `s += 1` rebinds `s`, as in NumPy
            return result
        return self._tracer.update(self, result)

    method.__name__ = f"__i{name}__"
    return method


def _is_whole(key: Any) -> bool:
    """Whether an index selects the whole array (``x[...]``, ``x[:]``, ``x[:, :]``)."""
    keys = key if isinstance(key, tuple) else (key,)
    return all(k is Ellipsis or k == slice(None) for k in keys)


def _raise(exc: BaseException) -> Any:
    raise exc


_COMPARISONS = {"equal", "not_equal", "less", "less_equal", "greater", "greater_equal"}


def _check_python_ints(tracer: _Tracer, name: str, args: tuple[Any, ...]) -> None:
    """NumPy 2 refuses a Python int that does not fit the integer dtype it meets
    (``int8_array + 300`` is an ``OverflowError``)."""
    ints = [a for a in args if type(a) is int]
    if not ints or name in _COMPARISONS:  # NumPy compares out-of-range ints exactly
        return
    dtypes = [
        a.dtype for a in args if isinstance(a, Symbol) and not a._weak and a.dtype.kind in "iu"
    ]
    if not dtypes or any(isinstance(a, Symbol) and a.dtype.kind in "fc" for a in args):
        return
    target = functools.reduce(np.promote_types, dtypes)
    info = np.iinfo(target)
    for v in ints:
        if not info.min <= v <= info.max:
            raise FusionOverflowError(
                f"fuse: Python integer {v} out of bounds for {target} in `{name}` "
                f"(in fused function '{tracer.name}', {_user_site()})"
            )


def _refuse(what: str) -> Callable[..., Any]:
    def method(self: Symbol, *args: Any, **kwargs: Any) -> Any:
        raise _unsupported(what)

    return method


class Symbol:
    """A symbolic array or scalar while a fused function is traced. Supports operators, the
    math ufuncs (``xp.exp(s)``, ``np.exp(s)``), ``astype``, reductions as methods, and
    nothing that needs concrete values (``if s > 0:``, ``float(s)``, ``s.shape``)."""

    __slots__ = ("_tracer", "_vid", "dtype", "ndim", "_weak", "_array")
    __array_priority__ = 1000

    def __init__(self, tracer: _Tracer, vid: int) -> None:
        self._tracer = tracer
        self._array = True  # an array (in-place updates change it), not a scalar
        self._id = vid

    @property
    def _id(self) -> int:
        return self._vid

    @_id.setter
    def _id(self, vid: int) -> None:
        self._vid = vid
        dtype, ndim, weak = self._tracer.builder.info(vid)
        self.dtype = np.dtype(dtype)
        self.ndim = ndim
        self._weak = weak

    def __repr__(self) -> str:
        return f"<fuse symbol %{self._id}: {self.dtype}, {self.ndim}-d>"

    __add__, __radd__ = _binary("add"), _binary("add", True)
    __sub__, __rsub__ = _binary("subtract"), _binary("subtract", True)
    __mul__, __rmul__ = _binary("multiply"), _binary("multiply", True)
    __truediv__, __rtruediv__ = _binary("true_divide"), _binary("true_divide", True)
    __floordiv__, __rfloordiv__ = _binary("floor_divide"), _binary("floor_divide", True)
    __mod__, __rmod__ = _binary("remainder"), _binary("remainder", True)
    __rpow__ = _binary("power", True)

    def __pow__(self, other: Any) -> Symbol:
        # `x ** 2` with a literal 2 on a float array is `x * x`, as in NumPy (which takes the
        # same shortcut): no pow() in the generated code, and the same bits as NumPy.
        if type(other) in (int, float) and other == 2 and self.dtype.kind == "f":
            return self._tracer.op("square", self)
        return self._tracer.op("power", self, other)

    __and__, __rand__ = _binary("bitwise_and"), _binary("bitwise_and", True)
    __or__, __ror__ = _binary("bitwise_or"), _binary("bitwise_or", True)
    __xor__, __rxor__ = _binary("bitwise_xor"), _binary("bitwise_xor", True)
    __lshift__, __rlshift__ = _binary("left_shift"), _binary("left_shift", True)
    __rshift__, __rrshift__ = _binary("right_shift"), _binary("right_shift", True)
    __eq__ = _binary("equal")  # type: ignore[assignment]
    __ne__ = _binary("not_equal")  # type: ignore[assignment]
    __lt__ = _binary("less")
    __le__ = _binary("less_equal")
    __gt__ = _binary("greater")
    __ge__ = _binary("greater_equal")
    __hash__ = object.__hash__

    def __neg__(self) -> Symbol:
        return self._tracer.op("negative", self)

    def __pos__(self) -> Symbol:
        return self._tracer.op("positive", self)

    def __abs__(self) -> Symbol:
        return self._tracer.op("absolute", self)

    def __invert__(self) -> Symbol:
        return self._tracer.op("invert", self)

    __iadd__ = _inplace("add")
    __isub__ = _inplace("subtract")
    __imul__ = _inplace("multiply")
    __itruediv__ = _inplace("true_divide")
    __ifloordiv__ = _inplace("floor_divide")
    __imod__ = _inplace("remainder")
    __ipow__ = _inplace("power")
    __iand__ = _inplace("bitwise_and")
    __ior__ = _inplace("bitwise_or")
    __ixor__ = _inplace("bitwise_xor")
    __ilshift__ = _inplace("left_shift")
    __irshift__ = _inplace("right_shift")

    def __divmod__(self, other: Any) -> tuple[Symbol, Symbol]:
        return _NAMESPACE.divmod(self, other)

    def __rdivmod__(self, other: Any) -> tuple[Symbol, Symbol]:
        return _NAMESPACE.divmod(other, self)

    __matmul__ = __rmatmul__ = _refuse("the `@` operator")
    __bool__ = _refuse(
        "using a traced value as a Python bool (`if`, `and`, `or`, `not`: a Python scalar "
        "that tracing cannot know)"
    )
    __float__ = _refuse("`float()` of a traced value")
    __int__ = _refuse("`int()` of a traced value")
    __index__ = _refuse("using a traced value as an index")
    __len__ = _refuse("`len()` of a traced value")
    __iter__ = _refuse("iterating over a traced value")

    def __getitem__(self, key: Any) -> Symbol:
        from ._fusion_index import getitem

        return self._tracer.sym(getitem(self._tracer, self, key, Symbol, _unsupported))

    def __setitem__(self, key: Any, value: Any) -> None:
        if not _is_whole(key):
            raise _unsupported("item assignment to part of an array (use `where`)")
        t = self._tracer
        if not isinstance(value, Symbol):
            value = t.sym(t.call("op", "positive", [t.value(value)]))
        t.update(self, value, casting="unsafe")

    @property
    def shape(self) -> Any:
        raise _unsupported("`.shape` (shapes are not known while tracing)")

    @property
    def size(self) -> Any:
        raise _unsupported("`.size` (shapes are not known while tracing)")

    @property
    def T(self) -> Any:  # noqa: N802
        raise _unsupported("`.T`")

    def __getattr__(self, name: str) -> Any:
        # also an AttributeError: `hasattr(x, "__cuda_array_interface__")` and the other
        # protocol probes of NumPy and CuPy answer False
        raise _unsupported(f"`.{name}`", _UnsupportedAttribute)

    def copy(self, order: str = "K") -> Symbol:
        """A copy: the same value, but a later in-place update of either leaves the other."""
        out = Symbol(self._tracer, self._id)
        out._array = self._array
        return out

    def __copy__(self) -> Symbol:
        return self.copy()

    @property
    def real(self) -> Symbol:
        """The real part (the value itself for a real dtype)."""
        return self._tracer.op("real", self)

    @property
    def imag(self) -> Symbol:
        """The imaginary part (zeros for a real dtype)."""
        return self._tracer.op("imag", self)

    def conj(self) -> Symbol:
        """The complex conjugate (the value itself for a real dtype)."""
        return self._tracer.op("conjugate", self)

    conjugate = conj

    def astype(self, dtype: Any, copy: bool = True) -> Symbol:
        """The value converted to ``dtype``."""
        return self._tracer.sym(self._tracer.call("astype", self._id, _dtype_name(dtype)))

    # NumPy's (and CuPy's) positional order: CuPy's own `cupy.sum(x, axis)` calls
    # `x.sum(axis, None, None, False)`
    def sum(self, axis=None, dtype=None, out=None, keepdims=False, **kw):  # type: ignore[no-untyped-def]
        return self._tracer.reduce("sum", self, axis, keepdims, dtype=dtype, out=out, **kw)

    def prod(self, axis=None, dtype=None, out=None, keepdims=False, **kw):  # type: ignore[no-untyped-def]
        return self._tracer.reduce("prod", self, axis, keepdims, dtype=dtype, out=out, **kw)

    def min(self, axis=None, out=None, keepdims=False, **kw):  # type: ignore[no-untyped-def]
        return self._tracer.reduce("min", self, axis, keepdims, out=out, **kw)

    def max(self, axis=None, out=None, keepdims=False, **kw):  # type: ignore[no-untyped-def]
        return self._tracer.reduce("max", self, axis, keepdims, out=out, **kw)

    def mean(self, axis=None, dtype=None, out=None, keepdims=False, **kw):  # type: ignore[no-untyped-def]
        return self._tracer.reduce("mean", self, axis, keepdims, dtype=dtype, out=out, **kw)

    def var(self, axis=None, dtype=None, out=None, ddof=0, keepdims=False, **kw):  # type: ignore[no-untyped-def]
        return self._tracer.reduce("var", self, axis, keepdims, ddof, dtype, out, **kw)

    def std(self, axis=None, dtype=None, out=None, ddof=0, keepdims=False, **kw):  # type: ignore[no-untyped-def]
        return self._tracer.reduce("std", self, axis, keepdims, ddof, dtype, out, **kw)

    def any(self, axis=None, out=None, keepdims=False, **kw):  # type: ignore[no-untyped-def]
        return self._tracer.reduce("any", self, axis, keepdims, out=out, **kw)

    def all(self, axis=None, out=None, keepdims=False, **kw):  # type: ignore[no-untyped-def]
        return self._tracer.reduce("all", self, axis, keepdims, out=out, **kw)

    def clip(self, min: Any = None, max: Any = None, out: Any = None) -> Symbol:  # noqa: A002
        return _NAMESPACE.clip(self, min, max, out)

    # NumPy functions called on symbols (np.exp(s), np.sum(s), ...) come here.
    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        name = ufunc.__name__
        if method != "__call__":
            raise _unsupported(f"`np.{name}.{method}`")
        return _namespace_function(name)(*inputs, **kwargs)

    def __array_function__(self, func: Any, types_: Any, args: Any, kwargs: Any) -> Any:
        module = getattr(func, "__module__", "numpy") or "numpy"
        what = f"{module.replace('numpy', 'np', 1)}.{func.__name__}"
        if module not in (
            "numpy",
            "numpy._core.multiarray",
            "numpy._core.fromnumeric",
            "numpy._core.numeric",
            "numpy.lib._function_base_impl",
        ):
            return _namespace_function("", what)(*args, **kwargs)
        return _namespace_function(func.__name__, what)(*args, **kwargs)

    # CuPy's ufuncs and elementwise kernels called on symbols (from a helper that calls
    # `cupy.exp(x)` itself) ask their arguments for these hooks first.
    def __cupy_override_elementwise_kernel__(self, kernel: Any, *args: Any, **kwargs: Any):  # type: ignore[no-untyped-def]
        # CuPy's ufuncs are named `cupy_<numpy name>`
        name = getattr(kernel, "name", "?")
        return _namespace_function(name.removeprefix("cupy_"))(*args, **kwargs)

    def __cupy_override_reduction_kernel__(self, kernel: Any, *args: Any, **kwargs: Any):  # type: ignore[no-untyped-def]
        raise _unsupported(f"the CuPy reduction kernel `{getattr(kernel, 'name', kernel)}`")


def _tracer_of(args: tuple[Any, ...], what: str) -> _Tracer:
    for a in args:
        if isinstance(a, Symbol):
            return a._tracer
    raise _unsupported(f"`{what}` on constants only")


# NumPy's positional parameters of the reductions after the array (`np.sum(a, axis, dtype,
# out, keepdims)`), as the methods of a symbol take them
_REDUCTION_METHODS = {name: traced for name, traced in _REDUCTIONS.items()}
_NO_OUT_KWARGS = {"casting": "same_kind", "order": "K", "subok": True, "where": True}


class _Namespace:
    """What ``xp`` (or ``np``) means inside a traced function: the supported functions on
    symbols; dtypes and constants pass through; any other function raises a clear error when
    it is given a traced value."""

    def __init__(self, real: Any) -> None:
        self._real = real

    def __getattr__(self, name: str) -> Any:
        if name in _OPS:
            return _TracedUfunc(name, self._op)
        if name in _REDUCTION_METHODS:
            method = _REDUCTION_METHODS[name]

            def reduction(x: Any, *args: Any, **kw: Any) -> Symbol:
                if not isinstance(x, Symbol):
                    _tracer_of((x, *args, *kw.values()), name)
                    raise _unsupported(f"`{name}` of a constant")
                return getattr(x, method)(*args, **kw)

            reduction.__name__ = name
            return reduction
        real = getattr(self._real, name)
        if isinstance(real, types.ModuleType):
            return _guarded_module(real, f"xp.{name}")
        if not callable(real) or isinstance(real, type):
            return real
        return _guarded(real, f"xp.{name}")

    @staticmethod
    def _op(name: str, *args: Any, **kwargs: Any) -> Any:
        arity = _ARITY[name]
        out = kwargs.pop("out", None)
        for k, default in _NO_OUT_KWARGS.items():
            if k in kwargs and kwargs[k] is default:
                del kwargs[k]
        dtype = kwargs.pop("dtype", None)
        if kwargs:
            raise _unsupported(f"`xp.{name}(..., {next(iter(kwargs))}=)`")
        if len(args) == arity + 1:
            if out is not None:
                raise FusionTypeError(f"fuse: `{name}`: out given both by position and name")
            out = args[-1]
            args = args[:-1]
        if len(args) != arity:
            raise FusionTypeError(
                f"fuse: `{name}` takes {arity} argument(s) (and an optional out), {len(args)} given"
            )
        if isinstance(out, tuple):
            if len(out) != 1:
                raise FusionTypeError(f"fuse: `{name}` has 1 output, out= gives {len(out)}")
            out = out[0]
        t = _tracer_of(args, name)
        if dtype is not None:
            args = tuple(
                a.astype(dtype) if isinstance(a, Symbol) else np.dtype(dtype).type(a) for a in args
            )
        result = t.op(name, *args)
        if out is None:
            return result
        return t.update(out, result)

    def where(self, cond: Any, x: Any = None, y: Any = None, **kw: Any) -> Symbol:
        if kw:
            raise FusionTypeError(
                f"fuse: `where` got an unexpected keyword argument '{next(iter(kw))}'"
            )
        if x is None or y is None:
            raise _unsupported("`where` with one argument")
        return _tracer_of((cond, x, y), "where").op("where", cond, x, y)

    def clip(self, x: Any, a_min: Any = None, a_max: Any = None, out: Any = None, **kw: Any):  # type: ignore[no-untyped-def]
        a_min = kw.pop("min", a_min)
        a_max = kw.pop("max", a_max)
        if kw:
            raise _unsupported(f"`clip(..., {next(iter(kw))}=)`")
        t = _tracer_of((x, a_min, a_max), "clip")
        if a_min is None and a_max is None:
            raise _unsupported("`clip` without bounds")
        if a_min is None:
            result = t.op("minimum", x, a_max)
        elif a_max is None:
            result = t.op("maximum", x, a_min)
        else:
            result = t.op("clip", x, a_min, a_max)
        return result if out is None else t.update(out, result)

    def astype(self, x: Any, dtype: Any, /, *, copy: bool = True, **_: Any) -> Symbol:
        if not isinstance(x, Symbol):
            raise _unsupported("`astype` of a constant")
        return x.astype(dtype)

    def round(self, x: Any, decimals: int = 0, out: Any = None) -> Symbol:
        if decimals != 0:
            raise _unsupported("`round` with decimals")
        t = _tracer_of((x,), "round")
        result = x.copy() if isinstance(x, Symbol) and x.dtype.kind in "biu" else t.op("rint", x)
        return result if out is None else t.update(out, result)

    around = round

    def fix(self, x: Any, out: Any = None) -> Symbol:
        t = _tracer_of((x,), "fix")
        result = t.op("trunc", x) if x.dtype.kind in "fc" else x.copy()
        return result if out is None else t.update(out, result)

    def square(self, x: Any, out: Any = None) -> Symbol:
        return self._op("square", x, out=out)

    def copy(self, x: Any, order: str = "K", **_: Any) -> Symbol:
        if not isinstance(x, Symbol):
            raise _unsupported("`copy` of a constant")
        return x.copy()

    def copyto(self, dst: Any, src: Any, casting: str = "same_kind", where: Any = True) -> None:
        t = _tracer_of((dst, src), "copyto")
        if not isinstance(src, Symbol):
            src = t.sym(t.call("op", "positive", [t.value(src)]))
        if where is not True:
            src = t.op("where", where, src, dst)
        t.update(dst, src, casting=casting)

    def divmod(self, x: Any, y: Any, *out: Any, **kw: Any) -> tuple[Symbol, Symbol]:
        return self._two(
            "divmod", (self._op("floor_divide", x, y), self._op("remainder", x, y)), out, kw
        )

    def modf(self, x: Any, *out: Any, **kw: Any) -> tuple[Symbol, Symbol]:
        t = _tracer_of((x,), "modf")
        x = _as_float(t, x)
        whole = t.op("trunc", x)
        frac = t.op(
            "where",
            t.op("isinf", x),
            t.op("copysign", 0.0, x),
            t.op("copysign", t.op("subtract", x, whole), x),
        )
        return self._two("modf", (frac, whole), out, kw)

    def frexp(self, x: Any, *out: Any, **kw: Any) -> tuple[Symbol, Symbol]:
        t = _tracer_of((x,), "frexp")
        x = _as_float(t, x)
        return self._two(
            "frexp",
            (t.op("_frexp_mantissa", x), t.op("_frexp_exponent", x).astype(np.int32)),
            out,
            kw,
        )

    @staticmethod
    def _two(name: str, results: tuple[Symbol, Symbol], out: Any, kw: Any) -> Any:
        out = kw.pop("out", out or None)
        if kw:
            raise _unsupported(f"`{name}(..., {next(iter(kw))}=)`")
        if not out or all(o is None for o in out):
            return results
        if len(out) != 2:
            raise FusionTypeError(f"fuse: `{name}` has 2 outputs, out= gives {len(out)}")
        t = results[0]._tracer
        return tuple(r if o is None else t.update(o, r) for r, o in zip(results, out, strict=True))

    def deg2rad(self, x: Any, out: Any = None) -> Symbol:
        t = _tracer_of((x,), "deg2rad")
        return self._op("multiply", _as_float(t, x), np.pi / 180.0, out=out)

    def rad2deg(self, x: Any, out: Any = None) -> Symbol:
        t = _tracer_of((x,), "rad2deg")
        return self._op("multiply", _as_float(t, x), 180.0 / np.pi, out=out)

    radians = deg2rad
    degrees = rad2deg

    def angle(self, z: Any, deg: bool = False) -> Symbol:
        t = _tracer_of((z,), "angle")
        a = t.op("arctan2", t.op("imag", z), t.op("real", z))
        return t.op("multiply", a, 180.0 / np.pi) if deg else a

    def ldexp(self, x: Any, n: Any, out: Any = None) -> Symbol:
        t = _tracer_of((x, n), "ldexp")
        xf = _as_float(t, x)
        if isinstance(n, Symbol):
            if n.dtype.kind not in "biu":
                raise FusionTypeError(f"fuse: `ldexp` takes integer exponents, not {n.dtype}")
            scale = t.op("exp2", n.astype(np.float64))
        else:
            scale = float(np.exp2(float(n)))
        result = t.op("multiply", xf, scale)  # exact: a power of two (in float64)
        if result.dtype != xf.dtype:
            result = result.astype(xf.dtype)
        return result if out is None else t.update(out, result)

    def sinc(self, x: Any) -> Symbol:
        t = _tracer_of((x,), "sinc")
        x = _as_float(t, x)
        y = t.op("multiply", np.pi, t.op("where", t.op("equal", x, 0), 1.0e-20, x))
        return t.op("true_divide", t.op("sin", y), y)

    def float_power(self, x: Any, y: Any, out: Any = None) -> Symbol:
        _tracer_of((x, y), "float_power")
        kinds = {
            a.dtype.kind if isinstance(a, Symbol) else np.asarray(a).dtype.kind for a in (x, y)
        }
        d = np.complex128 if "c" in kinds else np.float64
        xs = [a.astype(d) if isinstance(a, Symbol) else a for a in (x, y)]
        return self._op("power", *xs, out=out)

    def heaviside(self, x: Any, h0: Any, out: Any = None) -> Symbol:
        t = _tracer_of((x, h0), "heaviside")
        x = _as_float(t, x)
        step = t.op("where", t.op("less", x, 0), 0.0, t.op("where", t.op("greater", x, 0), 1.0, h0))
        result = t.op("where", t.op("isnan", x), x, step)
        return result if out is None else t.update(out, result)

    def logaddexp(self, x: Any, y: Any, out: Any = None) -> Symbol:
        return self._logaddexp("logaddexp", x, y, out, np.log(2.0), 1.0)

    def logaddexp2(self, x: Any, y: Any, out: Any = None) -> Symbol:
        return self._logaddexp("logaddexp2", x, y, out, 1.0, np.log(2.0))

    @staticmethod
    def _logaddexp(name: str, x: Any, y: Any, out: Any, same: float, scale: float) -> Symbol:
        # NumPy's definition: equal arguments (also infinities) give x + log(2); otherwise the
        # larger plus log1p(exp(-|x - y|)) (in base 2 for logaddexp2); NaN stays NaN
        t = _tracer_of((x, y), name)
        x, y = _as_float(t, x), _as_float(t, y)
        d = t.op("subtract", x, y)

        def tail(v: Symbol) -> Symbol:  # log_b(1 + b**v) for v <= 0
            if scale == 1.0:
                return t.op("log1p", t.op("exp", v))
            return t.op(
                "multiply", t.op("log1p", t.op("exp", t.op("multiply", v, scale))), 1.0 / scale
            )

        pos = t.op("add", x, tail(t.op("negative", d)))
        neg = t.op("add", y, tail(d))
        result = t.op(
            "where",
            t.op("equal", x, y),
            t.op("add", x, same),
            t.op(
                "where", t.op("greater", d, 0), pos, t.op("where", t.op("less_equal", d, 0), neg, d)
            ),
        )
        return result if out is None else t.update(out, result)

    def nansum(self, x: Any, *args: Any, **kw: Any) -> Symbol:
        return self._nan_reduce("sum", 0, x, args, kw)

    def nanprod(self, x: Any, *args: Any, **kw: Any) -> Symbol:
        return self._nan_reduce("prod", 1, x, args, kw)

    @staticmethod
    def _nan_reduce(kind: str, identity: int, x: Any, args: Any, kw: Any) -> Symbol:
        t = _tracer_of((x,), f"nan{kind}")
        if x.dtype.kind in "fc":
            x = t.op("where", t.op("isnan", x), identity, x)
        return getattr(x, kind)(*args, **kw)


def _as_float(t: _Tracer, x: Any) -> Any:
    """``x`` converted to the float dtype NumPy's float loops would use for it (int8 to
    float16, int16 to float32, wider integers to float64; floats and complex unchanged)."""
    if not isinstance(x, Symbol) or x.dtype.kind in "fc":
        return x
    return x.astype(np.result_type(x.dtype, np.float16))


class _TracedUfunc:
    """A ufunc of the op table inside a traced function: calling it traces the op; its
    methods (``np.add.at``, ``.reduce``, ``.outer``, ...) are refused with the user's line."""

    def __init__(self, name: str, call: Any) -> None:
        self.__name__ = name
        self._call = call
        self.nin = _ARITY[name]
        self.nout = 1

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._call(self.__name__, *args, **kwargs)

    def __getattr__(self, attr: str) -> Any:
        raise _unsupported(f"`xp.{self.__name__}.{attr}`", _UnsupportedAttribute)


def _guarded(real: Any, what: str) -> Any:
    @functools.wraps(real)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        if _has_symbol(args) or _has_symbol(kwargs.values()):
            raise _unsupported(f"`{what}`")
        return real(*args, **kwargs)

    return guarded


def _has_symbol(values: Any) -> bool:
    for v in values:
        if isinstance(v, Symbol):
            return True
        if isinstance(v, (tuple, list)) and _has_symbol(v):
            return True
    return False


class _guarded_module:  # noqa: N801
    """A submodule (``xp.linalg``, ``xp.fft``, ...) whose functions refuse traced values."""

    def __init__(self, real: Any, what: str) -> None:
        self._real = real
        self._what = what

    def __getattr__(self, name: str) -> Any:
        real = getattr(self._real, name)
        if isinstance(real, types.ModuleType):
            return _guarded_module(real, f"{self._what}.{name}")
        if callable(real) and not isinstance(real, type):
            return _guarded(real, f"{self._what}.{name}")
        return real


def _namespace_function(name: str, what: str | None = None) -> Any:
    """The traced version of the NumPy (or CuPy) function or ufunc ``name`` (one that refuses
    traced values, naming ``what``, when there is none)."""
    try:
        return getattr(_NAMESPACE, name)
    except AttributeError:
        return _guarded(lambda *a, **k: None, what or f"xp.{name}")


_NAMESPACE = _Namespace(np)


def _is_array_module(value: Any) -> bool:
    if not isinstance(value, types.ModuleType):
        return False
    name = value.__name__
    return (
        name in ("cunumpy", "numpy", "cupy")
        or name.startswith("array_api_compat.")
        or value is sys.modules.get("cunumpy")
    )


def _rebound(function: Callable[..., Any]) -> Callable[..., Any]:
    """``function`` with every global or closure reference to cunumpy/NumPy/CuPy (the
    modules) replaced by the tracing namespace, and so every Python function it references
    (a helper it calls, the lambda a test wraps): ``cupy.around(x)`` in a helper traces like
    ``xp.around(x)`` in the fused function itself."""
    return _rebind(function, {})


# Functions of these packages (and of the standard library) are never rebound: CuPy's own
# Python functions reference NumPy and CuPy, and must keep seeing the real modules.
_LIBRARY_PACKAGES = frozenset(
    {
        "numpy",
        "cupy",
        "cupyx",
        "cupy_backends",
        "cunumpy",
        "array_api_compat",
        "scipy",
        "torch",
        "jax",
        "jaxlib",
        "numba",
        "numexpr",
        "mpi4py",
        "pytest",
        "_pytest",
        "pluggy",
    }
)


def _is_user_function(function: types.FunctionType) -> bool:
    package = (function.__module__ or "").partition(".")[0]
    return package not in _LIBRARY_PACKAGES and package not in sys.stdlib_module_names


def _rebind(function: Any, seen: dict[int, Any]) -> Any:
    if not isinstance(function, types.FunctionType):
        return function
    if seen and not _is_user_function(function):  # the fused function itself is always read
        return function
    if id(function) in seen:  # recursion, or a helper referenced twice
        return seen[id(function)]
    seen[id(function)] = function
    g = function.__globals__
    swapped: dict[str, Any] = {}
    for n in function.__code__.co_names:
        value = g.get(n)
        if _is_array_module(value):
            swapped[n] = _Namespace(value)
        elif isinstance(value, types.FunctionType) and value is not function:
            helper = _rebind(value, seen)
            if helper is not value:
                swapped[n] = helper
    closure = function.__closure__
    if closure is not None:
        cells = []
        for cell in closure:
            try:
                v = cell.cell_contents
            except ValueError:
                cells.append(cell)
                continue
            if _is_array_module(v):
                cells.append(types.CellType(_Namespace(v)))
            elif isinstance(v, types.FunctionType) and v is not function:
                helper = _rebind(v, seen)
                cells.append(cell if helper is v else types.CellType(helper))
            else:
                cells.append(cell)
        closure = tuple(cells)
    if not swapped and closure == function.__closure__:
        return function
    new_globals = dict(g)
    new_globals.update(swapped)
    f = types.FunctionType(
        function.__code__, new_globals, function.__name__, function.__defaults__, closure
    )
    f.__kwdefaults__ = function.__kwdefaults__
    seen[id(function)] = f
    return f


class _Trace:
    """A traced signature: the graph, the output structure, the constants, and what the call
    must do around the plan: the array arguments updated in place (``updates``: the argument
    index of each graph output after the ``n_returned`` returned ones), whether the function
    returns nothing, and the float16 outputs (computed in float32, rounded to float16 after
    every operation, converted back at the end)."""

    def __init__(
        self,
        graph: Any,
        tuple_out: bool,
        constants: list[Any],
        n_returned: int = 0,
        updates: tuple[int, ...] = (),
        returns_none: bool = False,
        half_outputs: tuple[int, ...] = (),
    ) -> None:
        self.graph = graph
        self.tuple_out = tuple_out
        self.constants = constants
        self.n_returned = n_returned
        self.updates = updates
        self.returns_none = returns_none
        self.half_outputs = half_outputs
        self.plans: dict[tuple[tuple[int, ...], ...], Any] = {}

    @property
    def needs_python(self) -> bool:
        """Whether a call needs the Python path (the Rust entry runs plain calls only)."""
        return bool(self.updates or self.returns_none or self.half_outputs or self.graph is None)


def _backend_of(arrays: list[Any]) -> str:
    kinds = set()
    for a in arrays:
        kinds.add("numpy" if isinstance(a, np.ndarray) else "cupy")
    if len(kinds) > 1:
        raise MixedBackendError(
            "fuse: the array arguments mix NumPy and CuPy arrays; convert them with "
            "xp.to_numpy / xp.to_cupy first"
        )
    return kinds.pop() if kinds else "numpy"


def _is_device_array(x: Any) -> bool:
    return hasattr(x, "__cuda_array_interface__") and not isinstance(x, np.ndarray)


@use_vectorcall
class FusedFunction(_core.FusedDispatcher):
    """A function compiled by :func:`fuse`. Call it like the original function (plus an
    optional ``out=``); :meth:`explain` shows the plan and the generated CUDA.

    Every call runs through one Rust entry (``_core.FusedDispatcher``). The first call with
    a new signature (argument types, dtypes, shapes) is a miss: it is traced and planned in
    Python and remembered in Rust, which then runs it as it runs every later call with that
    signature, without entering Python."""

    def __init__(self, function: Callable[..., Any], kernel_name: str | None = None) -> None:
        if not callable(function):
            raise TypeError(f"fuse: expected a function, got {type(function).__name__}")
        self._function = function
        name = kernel_name or getattr(function, "__name__", "fused")
        self.kernel_name = _c_ident(name)
        self._traces: dict[tuple[Any, ...], _Trace] = {}
        self._lock = threading.Lock()
        self.trace_count = 0
        self.plan_count = 0
        functools.update_wrapper(self, function)

    def __repr__(self) -> str:
        return f"<fused function '{self.kernel_name}'>"

    def clear_cache(self) -> None:
        """Forgets every traced signature and plan of this function (the next call traces
        again; compiled kernels stay in the disk cache)."""
        with self._lock:
            self._traces.clear()
            self._forget()

    # ---- tracing -------------------------------------------------------------------------
    @staticmethod
    def _classify(args: tuple[Any, ...]) -> tuple[tuple[Any, ...], list[Any], list[Any]]:
        key = []
        arrays = []
        scalars = []
        for i, a in enumerate(args):
            if isinstance(a, np.ndarray) or _is_device_array(a):
                key.append(("a", np.dtype(a.dtype).str, a.ndim))
                arrays.append(a)
            elif isinstance(a, np.generic):
                key.append(("n", a.dtype.str))
                scalars.append(a.item())
            elif isinstance(a, (bool, int, float, complex)):
                key.append(("p", _python_scalar_kind(a)))
                scalars.append(a)
            elif a is None:
                key.append(("none",))
            else:
                raise FusionTypeError(
                    f"fuse: argument {i}: expected an array or a Python/NumPy scalar, got "
                    f"{type(a).__name__}"
                )
        return tuple(key), arrays, scalars

    def _trace(self, key: tuple[Any, ...]) -> _Trace:
        tracer = _Tracer(self.kernel_name)
        symbols: list[Any] = []
        array_index = 0
        for k in key:
            if k[0] == "a":
                sym = tracer.sym(tracer.call("input", np.dtype(k[1]).name, k[2]))
                tracer.arguments.append((sym, sym._id, array_index))
                array_index += 1
            elif k[0] == "n":
                sym = tracer.sym(tracer.call("scalar", np.dtype(k[1]).name, False))
                sym._array = False
            elif k[0] == "none":
                sym = None
            else:
                dtype = _PYTHON_SCALAR_DTYPES[k[1]]
                sym = tracer.sym(tracer.call("scalar", dtype, True))
                sym._array = False
            symbols.append(sym)
        previous = getattr(_local, "tracer", None)
        _local.tracer = tracer
        try:
            result = _rebound(self._function)(*symbols)
        finally:
            _local.tracer = previous
        returns_none = result is None
        tuple_out = isinstance(result, (tuple, list))
        outs = [] if returns_none else list(result) if tuple_out else [result]
        for i, o in enumerate(outs):
            if not isinstance(o, Symbol) or o._tracer is not tracer:
                raise FusionTypeError(
                    f"fuse: fused function '{self.kernel_name}' must return traced arrays; "
                    f"output {i} is {type(o).__name__}"
                )
        updates = []
        values = [o._id for o in outs]
        for sym, start, index in tracer.arguments:
            if sym._id != start:
                updates.append(index)
                values.append(sym._id)
        self.trace_count += 1
        if not values:  # nothing returned (or `()`), nothing updated: the call does nothing
            return _Trace(None, tuple_out, tracer.constants, returns_none=not tuple_out)
        half = []
        for i, v in enumerate(values):
            if tracer.builder.info(v)[0] == "float16":
                half.append(i)
            tracer.call("output", v)
        graph = tracer.builder.finish()
        return _Trace(
            graph,
            tuple_out,
            tracer.constants,
            len(outs),
            tuple(updates),
            returns_none,
            tuple(half),
        )

    def _prepare(self, args: tuple[Any, ...]) -> tuple[_Trace, Any, list[Any], list[Any]]:
        key, arrays, scalars = self._classify(args)
        with self._lock:
            trace = self._traces.get(key)
            if trace is None:
                trace = self._trace(key)
                self._traces[key] = trace
            shapes = tuple(tuple(int(d) for d in a.shape) for a in arrays)
            plan = trace.plans.get(shapes)
            if plan is None and trace.graph is not None:
                try:
                    plan = trace.graph.plan([list(s) for s in shapes], name=self.kernel_name)
                except FusionError as exc:
                    raise type(exc)(f"{exc} (fused function '{self.kernel_name}')") from None
                trace.plans[shapes] = plan
                self.plan_count += 1
        return trace, plan, arrays, scalars + trace.constants

    def plan(self, *args: Any) -> Any:
        """The :class:`cunumpy._core.FusionPlan` a call with these arguments runs (its
        ``kernels``, ``explain()``, ``cuda_source()``)."""
        return self._prepare(args)[1]

    def explain(self, *args: Any) -> str:
        """The plan for these arguments (kernels, their inputs and outputs, the bytes each
        moves) followed by the generated CUDA source."""
        plan = self.plan(*args)
        return plan.explain() + "\n// ---- CUDA source ----\n" + plan.cuda_source()

    # ---- calling -------------------------------------------------------------------------
    def _miss(self, *args: Any) -> bool:
        """A call whose signature the Rust entry does not know yet: traces and plans it and
        remembers it there (which then runs the call). False when it cannot be remembered
        (the call then takes :meth:`_call_slow`)."""
        trace, plan, arrays, _ = self._prepare(args)
        _backend_of(arrays)  # mixed NumPy and CuPy arrays raise here
        if trace.needs_python or any(a is None for a in args):
            return False
        return bool(self._remember(args, plan, trace.constants, trace.tuple_out))

    def _call_slow(self, *args: Any, out: Any = None) -> Any:
        """Every call the Rust entry declines: nested calls while tracing, ``out=`` arrays
        that need a copy, non-contiguous arrays, the emulated device, calls while a kernel
        profile collects."""
        if any(isinstance(a, Symbol) for a in args):
            if out is not None:
                raise _unsupported("`out=` in a nested fused call")
            return _rebound(self._function)(*args)  # inlined into the caller's trace
        trace, plan, arrays, scalars = self._prepare(args)
        backend = _backend_of(arrays)
        if plan is None:  # a function that neither returns nor updates anything
            if out is not None:
                raise FusionTypeError(f"fuse: '{self.kernel_name}' returns nothing; out= given")
            return () if trace.tuple_out else None
        if trace.updates and self._updates_alias(trace, arrays, backend):
            # an argument updated in place shares memory with another argument (`f(x, x)`,
            # `f(x, x.T)`): NumPy's later reads see the earlier updates, which one fused pass
            # cannot do, so the function runs unfused, operation by operation, as NumPy runs it
            if out is not None:
                raise FusionValueError(
                    f"fuse: '{self.kernel_name}': out= with arguments that share memory with "
                    "an argument the function updates in place"
                )
            return self._function(*args)
        targets = self._out_targets(out, trace.n_returned)
        specs = plan.outputs
        for j, index in enumerate(trace.updates):  # NumPy checks every shape before writing
            a = arrays[index]
            shape = tuple(specs[trace.n_returned + j][0])
            if tuple(a.shape) != shape:
                raise FusionValueError(
                    f"fuse: '{self.kernel_name}': non-broadcastable output operand with shape "
                    f"{tuple(a.shape)} doesn't match the broadcast shape {shape}"
                )
            targets.append(a)
        run_arrays = [a.astype(np.float32) if a.dtype == np.float16 else a for a in arrays]
        if _profile.active:
            path = "host" if backend == "numpy" else "cuda"
            outs = _profile.timed_call(
                self.kernel_name,
                path,
                self._run,
                (plan, backend, run_arrays, scalars, targets, trace.half_outputs),
                {},
            )
        else:
            outs = self._run(plan, backend, run_arrays, scalars, targets, trace.half_outputs)
        if not trace.needs_python:
            self._remember(args, plan, trace.constants, trace.tuple_out)
        if trace.returns_none:
            return None
        outs = outs[: trace.n_returned]
        if trace.tuple_out:
            return tuple(outs)
        return outs[0]

    @staticmethod
    def _updates_alias(trace: _Trace, arrays: list[Any], backend: str) -> bool:
        """Whether an argument the function updates in place shares memory with another."""
        if backend == "numpy":
            may_share = np.may_share_memory
        else:
            import cupy

            may_share = cupy.may_share_memory
        return any(
            j != i and may_share(arrays[i], b) for i in trace.updates for j, b in enumerate(arrays)
        )

    def _run(
        self,
        plan: Any,
        backend: str,
        arrays: list[Any],
        scalars: list[Any],
        targets: list[Any],
        half_outputs: tuple[int, ...] = (),
    ) -> list[Any]:
        specs = plan.outputs
        if backend == "numpy":
            xp = np
        else:
            import cupy

            xp = cupy
        # (ascontiguousarray would turn a 0-d array into a 1-d one)
        inputs = [a if a.flags.c_contiguous else xp.ascontiguousarray(a) for a in arrays]
        results = []
        direct = []
        for i, (shape, dtype) in enumerate(specs):
            t = targets[i]
            usable = (
                i not in half_outputs
                and t is not None
                and type(t) is type(inputs[0] if inputs else np.empty(0))
                and tuple(t.shape) == tuple(shape)
                and t.dtype == np.dtype(dtype)
                and t.flags.c_contiguous
                and not any(xp.may_share_memory(t, a) for a in inputs)
            )
            direct.append(usable)
            if usable:
                results.append(t)
            elif backend == "numpy":
                # large results come from the host memory pool (host_memory_pool())
                results.append(_core._host_empty(shape, dtype))
            else:
                results.append(xp.empty(shape, dtype))
        if backend == "numpy":
            plan.execute_cpu(inputs, scalars, results)
        else:
            plan.launch(inputs, scalars, results, _new_workspace(plan))
        final = []
        for i, r in enumerate(results):
            t = targets[i]
            if i in half_outputs:
                r = r.astype(np.float16)  # exact: the value is rounded to float16 already
            if t is not None:
                if not direct[i]:
                    if tuple(t.shape) != tuple(r.shape):
                        raise FusionValueError(
                            f"fuse: '{self.kernel_name}': out[{i}] has shape {tuple(t.shape)}, "
                            f"the result has shape {tuple(r.shape)}"
                        )
                    xp.copyto(t, r, casting="same_kind")
                final.append(t)
            elif backend == "numpy" and r.ndim == 0:
                final.append(r[()])
            else:
                final.append(r)
        return final

    def _out_targets(self, out: Any, n: int) -> list[Any]:
        if out is None:
            return [None] * n
        outs = list(out) if isinstance(out, (tuple, list)) else [out]
        for o in outs:
            if o is not None and not (isinstance(o, np.ndarray) or _is_device_array(o)):
                raise FusionTypeError(
                    f"fuse: '{self.kernel_name}': out= must be arrays, got {type(o).__name__}"
                )
        if len(outs) != n:
            raise FusionTypeError(
                f"fuse: '{self.kernel_name}' has {n} output(s), out= gives {len(outs)}"
            )
        return outs


def _new_workspace(plan: Any) -> Any:
    import cupy

    ws = plan.workspace_bytes
    return cupy.empty(ws, cupy.uint8) if ws else None


def fuse(function: Callable[..., Any] | None = None, *, kernel_name: str | None = None) -> Any:
    """Compiles a function of arrays and scalars, written with ``xp.*`` operations, into as
    few kernels as its data dependencies allow (elementwise work is fused into reductions and
    their epilogues). Use as ``@fuse``, ``@fuse(kernel_name="name")`` or ``fuse(lambda a: ...)``.

    NumPy arrays run on the CPU executor (all cores, no temporaries); CuPy arrays run the
    generated CUDA kernels on CuPy's current stream. Results follow NumPy 2 type promotion
    (Python scalars are weak, NumPy scalars strong). ``f(..., out=arr)`` writes into ``arr``
    (a tuple for several outputs). Fused functions called inside a fused function are inlined.
    """
    if function is None:
        return lambda f: FusedFunction(f, kernel_name)
    return FusedFunction(function, kernel_name)
