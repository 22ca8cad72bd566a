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
from ..exceptions import FusionError, FusionTypeError, FusionUnsupportedError, MixedBackendError
from . import _profile
from ._vectorcall import use_vectorcall

__all__ = ["fuse", "FusedFunction"]

_SKIP_DIRS = tuple(
    os.path.dirname(os.path.abspath(m.__file__)) + os.sep
    for m in (sys.modules["cunumpy"], np)
    if getattr(m, "__file__", None)
)
# the op names and reductions a fused function may call, from the Rust op table
_OPS = {name for name, _ in _core._fusion_ops()} | {a for a, _ in _core._fusion_op_aliases()}
# the dtype of a Python scalar argument or constant (weak, NEP 50), by _python_scalar_kind
_PYTHON_SCALAR_DTYPES = {
    "bool": "bool",
    "int": "int64",
    "float": "float64",
    "complex": "complex128",
}
_REDUCTIONS = dict(_core._fusion_reductions())  # name -> the name it is traced under
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


def _unsupported(what: str) -> FusionUnsupportedError:
    tracer = getattr(_local, "tracer", None)
    name = tracer.name if tracer is not None else "?"
    return FusionUnsupportedError(
        f"fuse: {what} is not supported in fused function '{name}' ({_user_site()})"
    )


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
        ids = [self.value(a) for a in args]
        return self.sym(self.call("op", name, ids))

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
        if out is not None or dtype is not None or extra:
            bad = (
                "out="
                if out is not None
                else "dtype="
                if dtype is not None
                else f"{next(iter(extra))}="
            )
            raise _unsupported(f"`{kind}(..., {bad})`")
        if not isinstance(x, Symbol):
            raise _unsupported(f"`{kind}` of a constant")
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


def _refuse(what: str) -> Callable[..., Any]:
    def method(self: Symbol, *args: Any, **kwargs: Any) -> Any:
        raise _unsupported(what)

    return method


class Symbol:
    """A symbolic array or scalar while a fused function is traced. Supports operators, the
    math ufuncs (``xp.exp(s)``, ``np.exp(s)``), ``astype``, reductions as methods, and
    nothing that needs concrete values (``if s > 0:``, ``float(s)``, ``s.shape``)."""

    __slots__ = ("_tracer", "_id", "dtype", "ndim", "_weak")
    __array_priority__ = 1000

    def __init__(self, tracer: _Tracer, vid: int) -> None:
        self._tracer = tracer
        self._id = vid
        dtype, ndim, weak = tracer.builder.info(vid)
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

    __matmul__ = __rmatmul__ = _refuse("the `@` operator")
    __divmod__ = __rdivmod__ = _refuse("`divmod`")
    __bool__ = _refuse("using a traced value as a Python bool (`if`, `and`, `or`, `not`)")
    __float__ = _refuse("`float()` of a traced value")
    __int__ = _refuse("`int()` of a traced value")
    __index__ = _refuse("using a traced value as an index")
    __len__ = _refuse("`len()` of a traced value")
    __iter__ = _refuse("iterating over a traced value")

    def __getitem__(self, key: Any) -> Symbol:
        from ._fusion_index import getitem

        return self._tracer.sym(getitem(self._tracer, self, key, Symbol, _unsupported))

    __setitem__ = _refuse("item assignment (fused functions are pure; use `where`)")

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
        raise _unsupported(f"`.{name}`")

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

    def sum(self, axis: Any = None, **kw: Any) -> Symbol:
        return self._tracer.reduce("sum", self, axis, **kw)

    def prod(self, axis: Any = None, **kw: Any) -> Symbol:
        return self._tracer.reduce("prod", self, axis, **kw)

    def min(self, axis: Any = None, **kw: Any) -> Symbol:
        return self._tracer.reduce("min", self, axis, **kw)

    def max(self, axis: Any = None, **kw: Any) -> Symbol:
        return self._tracer.reduce("max", self, axis, **kw)

    def mean(self, axis: Any = None, **kw: Any) -> Symbol:
        return self._tracer.reduce("mean", self, axis, **kw)

    def var(self, axis: Any = None, **kw: Any) -> Symbol:
        return self._tracer.reduce("var", self, axis, **kw)

    def std(self, axis: Any = None, **kw: Any) -> Symbol:
        return self._tracer.reduce("std", self, axis, **kw)

    def any(self, axis: Any = None, **kw: Any) -> Symbol:
        return self._tracer.reduce("any", self, axis, **kw)

    def all(self, axis: Any = None, **kw: Any) -> Symbol:
        return self._tracer.reduce("all", self, axis, **kw)

    def clip(self, min: Any = None, max: Any = None) -> Symbol:  # noqa: A002
        return _NAMESPACE.clip(self, min, max)

    # NumPy functions called on symbols (np.exp(s), np.sum(s), ...) come here.
    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        name = ufunc.__name__
        if method != "__call__":
            raise _unsupported(f"`np.{name}.{method}`")
        if kwargs:
            raise _unsupported(f"`np.{name}(..., {next(iter(kwargs))}=)`")
        return getattr(_NAMESPACE, name)(*inputs)

    def __array_function__(self, func: Any, types_: Any, args: Any, kwargs: Any) -> Any:
        return getattr(_NAMESPACE, func.__name__)(*args, **kwargs)


def _tracer_of(args: tuple[Any, ...], what: str) -> _Tracer:
    for a in args:
        if isinstance(a, Symbol):
            return a._tracer
    raise _unsupported(f"`{what}` on constants only")


class _Namespace:
    """What ``xp`` (or ``np``) means inside a traced function: the supported functions on
    symbols; dtypes and constants pass through; any other function raises a clear error when
    it is given a traced value."""

    def __init__(self, real: Any) -> None:
        self._real = real

    def __getattr__(self, name: str) -> Any:
        if name in _OPS:
            return functools.partial(self._op, name)
        if name in _REDUCTIONS:
            kind = _REDUCTIONS[name]

            def reduction(x: Any, axis: Any = None, **kw: Any) -> Symbol:
                return _tracer_of((x,), name).reduce(kind, x, axis, **kw)

            return reduction
        real = getattr(self._real, name)
        if not callable(real) or isinstance(real, type):
            return real

        @functools.wraps(real)
        def guarded(*args: Any, **kwargs: Any) -> Any:
            if any(isinstance(a, Symbol) for a in (*args, *kwargs.values())):
                raise _unsupported(f"`xp.{name}`")
            return real(*args, **kwargs)

        return guarded

    @staticmethod
    def _op(name: str, *args: Any, **kwargs: Any) -> Symbol:
        if kwargs:
            raise _unsupported(f"`xp.{name}(..., {next(iter(kwargs))}=)`")
        return _tracer_of(args, name).op(name, *args)

    def where(self, cond: Any, x: Any = None, y: Any = None) -> Symbol:
        if x is None or y is None:
            raise _unsupported("`where` with one argument")
        return _tracer_of((cond, x, y), "where").op("where", cond, x, y)

    def clip(self, x: Any, a_min: Any = None, a_max: Any = None, **kw: Any) -> Symbol:
        a_min = kw.pop("min", a_min)
        a_max = kw.pop("max", a_max)
        if kw:
            raise _unsupported(f"`clip(..., {next(iter(kw))}=)`")
        t = _tracer_of((x, a_min, a_max), "clip")
        if a_min is None and a_max is None:
            raise _unsupported("`clip` without bounds")
        if a_min is None:
            return t.op("minimum", x, a_max)
        if a_max is None:
            return t.op("maximum", x, a_min)
        return t.op("clip", x, a_min, a_max)

    def astype(self, x: Any, dtype: Any, /, *, copy: bool = True, **_: Any) -> Symbol:
        if not isinstance(x, Symbol):
            raise _unsupported("`astype` of a constant")
        return x.astype(dtype)

    def round(self, x: Any, decimals: int = 0) -> Symbol:
        if decimals != 0:
            raise _unsupported("`round` with decimals")
        return _tracer_of((x,), "round").op("rint", x)

    around = round

    def square(self, x: Any) -> Symbol:
        return _tracer_of((x,), "square").op("square", x)


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
    modules) replaced by the tracing namespace."""
    if not isinstance(function, types.FunctionType):
        return function
    g = function.__globals__
    names = set(function.__code__.co_names)
    swapped = {n: g[n] for n in names if n in g and _is_array_module(g[n])}
    closure = function.__closure__
    if closure is not None:
        cells = []
        for cell in closure:
            try:
                v = cell.cell_contents
            except ValueError:
                cells.append(cell)
                continue
            cells.append(types.CellType(_Namespace(v)) if _is_array_module(v) else cell)
        closure = tuple(cells)
    if not swapped and closure == function.__closure__:
        return function
    new_globals = dict(g)
    for n, module in swapped.items():
        new_globals[n] = _Namespace(module)
    f = types.FunctionType(
        function.__code__, new_globals, function.__name__, function.__defaults__, closure
    )
    f.__kwdefaults__ = function.__kwdefaults__
    return f


class _Trace:
    """A traced signature: the graph, the output structure, the constants."""

    def __init__(self, graph: Any, tuple_out: bool, constants: list[Any]) -> None:
        self.graph = graph
        self.tuple_out = tuple_out
        self.constants = constants
        self.plans: dict[tuple[tuple[int, ...], ...], Any] = {}


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
            else:
                raise FusionTypeError(
                    f"fuse: argument {i}: expected an array or a Python/NumPy scalar, got "
                    f"{type(a).__name__}"
                )
        return tuple(key), arrays, scalars

    def _trace(self, key: tuple[Any, ...]) -> _Trace:
        tracer = _Tracer(self.kernel_name)
        symbols = []
        for k in key:
            if k[0] == "a":
                symbols.append(tracer.sym(tracer.call("input", np.dtype(k[1]).name, k[2])))
            elif k[0] == "n":
                symbols.append(tracer.sym(tracer.call("scalar", np.dtype(k[1]).name, False)))
            else:
                dtype = _PYTHON_SCALAR_DTYPES[k[1]]
                symbols.append(tracer.sym(tracer.call("scalar", dtype, True)))
        previous = getattr(_local, "tracer", None)
        _local.tracer = tracer
        try:
            result = _rebound(self._function)(*symbols)
        finally:
            _local.tracer = previous
        tuple_out = isinstance(result, (tuple, list))
        outs = list(result) if tuple_out else [result]
        if not outs:
            raise FusionTypeError(f"fuse: fused function '{self.kernel_name}' returns nothing")
        for i, o in enumerate(outs):
            if not isinstance(o, Symbol) or o._tracer is not tracer:
                raise FusionTypeError(
                    f"fuse: fused function '{self.kernel_name}' must return traced arrays; "
                    f"output {i} is {type(o).__name__}"
                )
            tracer.call("output", o._id)
        graph = tracer.builder.finish()
        self.trace_count += 1
        return _Trace(graph, tuple_out, tracer.constants)

    def _prepare(self, args: tuple[Any, ...]) -> tuple[_Trace, Any, list[Any], list[Any]]:
        key, arrays, scalars = self._classify(args)
        with self._lock:
            trace = self._traces.get(key)
            if trace is None:
                trace = self._trace(key)
                self._traces[key] = trace
            shapes = tuple(tuple(int(d) for d in a.shape) for a in arrays)
            plan = trace.plans.get(shapes)
            if plan is None:
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
        if _profile.active:
            path = "host" if backend == "numpy" else "cuda"
            outs = _profile.timed_call(
                self.kernel_name, path, self._run, (plan, backend, arrays, scalars, out), {}
            )
        else:
            outs = self._run(plan, backend, arrays, scalars, out)
        self._remember(args, plan, trace.constants, trace.tuple_out)
        if trace.tuple_out:
            return tuple(outs)
        return outs[0]

    def _run(
        self,
        plan: Any,
        backend: str,
        arrays: list[Any],
        scalars: list[Any],
        out: Any,
    ) -> list[Any]:
        specs = plan.outputs
        targets = self._out_targets(out, len(specs))
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
                t is not None
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
            if t is not None:
                if not direct[i]:
                    if tuple(t.shape) != tuple(r.shape):
                        from ..exceptions import FusionValueError

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
