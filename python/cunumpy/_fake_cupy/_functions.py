"""The fake CuPy's functions: NumPy's, run on the host buffers of fake arrays.

Every NumPy function and ufunc is wrapped once: fake arrays are unwrapped, NumPy arrays of
ndim > 0 are refused (a host/device mix-up on a GPU), and NumPy results come back as fake
arrays (NumPy scalars as 0-d arrays, as in CuPy). Creation functions accept host data and copy
it, as ``cupy.asarray`` does.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np

from ._ndarray import (
    IMPLICIT_CONVERSION,
    count_to_device,
    count_to_host,
    host_to_device,
    ndarray,
    unwrap,
    wrap,
)

# Functions that take host data (lists, NumPy arrays) and copy it to the "device".
HOST_DATA = {"array", "asarray", "asanyarray", "ascontiguousarray", "asfortranarray"}
# Functions that only read the shape and dtype of their first argument.
LIKE = {"empty_like", "zeros_like", "ones_like", "full_like"}
# NumPy names that are not array functions and pass through unchanged.
SKIP = {
    "test",
    "show_config",
    "show_runtime",
    "info",
    "ma",
    "char",
    "core",
    "ctypeslib",
    "f2py",
    "lib",
    "polynomial",
    "rec",
    "strings",
    "typing",
    "version",
    "matrixlib",
    "asmatrix",
    "bmat",
    "matrix",
    "memmap",
    "recarray",
    "fromregex",
}
# NumPy functions CuPy exports as they are (``from numpy import ...`` in CuPy).
FROM_NUMPY = {
    "set_printoptions",
    "get_printoptions",
    "printoptions",
    "promote_types",
    "finfo",
    "iinfo",
    "issubdtype",
    "isdtype",
    "mintypecode",
    "typename",
    "ndindex",
    "iterable",
    "isscalar",
}

# Arguments (position, keyword) for which CuPy itself copies host data to the device
# (``cupy.asarray`` inside the function); anywhere else a NumPy array is refused.
HOST_ARGS: dict[str, tuple[tuple[int, str], ...]] = {
    "diff": ((0, "a"), (3, "prepend"), (4, "append")),
    "gradient": ((0, "f"),),
    "isclose": ((0, "a"), (1, "b")),
    "allclose": ((0, "a"), (1, "b")),
    "tril": ((0, "m"),),
    "triu": ((0, "m"),),
    "vander": ((0, "x"),),
    "linspace": ((0, "start"), (1, "stop")),
    "logspace": ((0, "start"), (1, "stop")),
    "place": ((1, "mask"), (2, "vals")),
    "delete": ((1, "obj"),),
    "append": ((0, "arr"), (1, "values")),
    "resize": ((0, "a"),),
    "unique": ((0, "ar"),),
    "asarray_chkfinite": ((0, "a"),),
    "require": ((0, "a"),),
    "unwrap": ((0, "p"),),
    "searchsorted": ((1, "v"),),
    "histogram": ((1, "bins"),),
    "average": ((0, "a"), (2, "weights")),
    "percentile": ((1, "q"),),
    "quantile": ((1, "q"),),
    "put": ((1, "ind"), (2, "v")),
}
# Every positional argument is copied from the host when needed.
HOST_VARARGS = {"atleast_1d", "atleast_2d", "atleast_3d"}
# Functions that read only dtypes and shapes: host arrays are fine, nothing is copied.
HOST_OK = {
    "iscomplexobj",
    "isrealobj",
    "result_type",
    "can_cast",
    "min_scalar_type",
    "common_type",
    "ndim",
    "shape",
    "size",
}
# Host-side readers: NumPy reads, the result is copied to the device.
HOST_READERS = {"fromfile", "fromfunction", "fromiter", "fromstring", "frombuffer", "loadtxt",
                "genfromtxt", "load"}  # fmt: skip
# Host-side writers and printers: device arguments are copied to the host first.
HOST_WRITERS = {"save", "savez", "savez_compressed", "savetxt", "array2string", "array_repr",
                "array_str", "format_float_positional", "format_float_scientific"}  # fmt: skip
# CuPy returns a 0-d device array (NumPy a Python bool).
BOOL_AS_ARRAY = {"array_equal", "array_equiv", "allclose"}
# CuPy functions that end in a call of their first argument's method (``cupy.sum(a, ...)`` is
# ``a.sum(...)``): given a NumPy array, CuPy reduces it with NumPy on the host. The fake refuses
# that as a host/device mix-up (it is one in a GPU code) unless ``follow_cupy_on_host_arrays``
# asks it to do as CuPy does (CuPy's own test suite calls them on NumPy arrays for its
# reference values).
_FOLLOW_CUPY = {"host_methods": False}
METHOD_OF_FIRST = {
    "sum": "sum",
    "prod": "prod",
    "amin": "min",
    "amax": "max",
    "min": "min",
    "max": "max",
    "ptp": "ptp",
    "mean": "mean",
    "var": "var",
    "std": "std",
    "argmin": "argmin",
    "argmax": "argmax",
    "around": "round",
    "round": "round",
    "round_": "round",
    "clip": "clip",
}


def _host_copy(obj: Any, dtype: Any, copy: bool | None, order: str, ndmin: int = 0) -> ndarray:
    if isinstance(obj, ndarray):
        src = obj._a
        need_copy = copy is True
    else:
        src = unwrap(obj, "cupy.asarray") if isinstance(obj, list | tuple) else obj
        need_copy = True  # host to device is always a copy
        if copy is False:
            raise ValueError("copying host data to the device is unavoidable with copy=False")
    out = np.array(src, dtype=dtype, copy=need_copy or None, order=order, ndmin=ndmin)
    if not isinstance(obj, ndarray) and not (isinstance(obj, list | tuple) and _holds_fake(obj)):
        count_to_device("asarray of host data", out)
    if out is src and not need_copy:
        return obj if isinstance(obj, ndarray) else ndarray._from(out)
    return ndarray._from(out)


def asarray(
    a: Any, dtype: Any = None, order: str = "K", *, blocking: bool = False, copy: bool | None = None
) -> ndarray:
    """A fake device array: the same one when ``a`` already is one of that dtype, else a copy
    (host data is always copied)."""
    return _host_copy(a, dtype, copy, order)


def array(
    obj: Any,
    dtype: Any = None,
    copy: bool | None = True,
    order: str = "K",
    subok: bool = False,
    ndmin: int = 0,
    *,
    blocking: bool = False,
) -> ndarray:
    """A fake device array; copies unless ``copy=False`` and nothing needs to change."""
    return _host_copy(obj, dtype, copy, order, ndmin)


def asanyarray(a: Any, dtype: Any = None, order: str = "K", *, blocking: bool = False) -> ndarray:
    return _host_copy(a, dtype, None, order)


def _same_or_wrapped(a: ndarray, out: np.ndarray) -> ndarray:
    """``a`` itself when NumPy returned its buffer unchanged (CuPy returns the array itself):
    the same object, or a view of the same memory with the same dtype, shape and strides
    (NumPy makes such a view of an array whose dtype object is an equal copy, as unpickled
    arrays have)."""
    if out is a._a:
        return a
    same = (
        out.dtype == a._a.dtype
        and out.shape == a._a.shape
        and out.strides == a._a.strides
        and out.__array_interface__["data"][0] == a._a.__array_interface__["data"][0]
    )
    return a if same else ndarray._from(out)


def ascontiguousarray(a: Any, dtype: Any = None) -> ndarray:
    """``a`` itself when it is already a C-contiguous fake array of that dtype, else a copy
    (host data: a counted copy to the device)."""
    if isinstance(a, ndarray):
        return _same_or_wrapped(a, np.ascontiguousarray(a._a, dtype=dtype))
    return _host_copy(a, dtype, None, "C", 0)._contiguous("C")


def asfortranarray(a: Any, dtype: Any = None) -> ndarray:
    """``a`` itself when it is already an F-contiguous fake array of that dtype, else a copy."""
    if isinstance(a, ndarray):
        return _same_or_wrapped(a, np.asfortranarray(a._a, dtype=dtype))
    return _host_copy(a, dtype, None, "F", 0)._contiguous("F")


def _contiguous(self: ndarray, order: str) -> ndarray:
    if order == "C":
        return ndarray._from(np.ascontiguousarray(self._a))
    return ndarray._from(np.asfortranarray(self._a))


ndarray._contiguous = _contiguous  # type: ignore[attr-defined]


def asnumpy(
    a: Any, stream: Any = None, order: str = "C", out: Any = None, blocking: bool = True
) -> np.ndarray:
    """A host copy of a fake array (other data: ``np.asarray``)."""
    if isinstance(a, ndarray):
        return a.get(order=order, out=out)
    return np.asarray(a, order=order)


def get_array_module(*args: Any) -> ModuleType:
    import sys

    for a in args:
        if isinstance(a, ndarray):
            return sys.modules["cupy"]
    return np


def _host_function(func: Callable[..., Any], name: str) -> Callable[..., Any] | None:
    """The fake of a function that works on the host in CuPy too (readers, writers, printers,
    dtype and shape queries), or None for an ordinary device function."""
    where = f"cupy.{name}"
    if name in FROM_NUMPY:
        return func
    if name in HOST_OK:

        def query(*args: Any, **kwargs: Any) -> Any:
            def plain(v: Any) -> Any:
                return v._a if isinstance(v, ndarray) else v

            return func(*[plain(a) for a in args], **{k: plain(v) for k, v in kwargs.items()})

        return query
    if name in HOST_READERS:

        def reader(*args: Any, **kwargs: Any) -> Any:
            out = func(*args, **kwargs)
            if isinstance(out, np.ndarray):
                count_to_device(f"{where} (read on the host)", out)
                return ndarray._from(out)
            return out

        return reader
    if name in HOST_WRITERS:

        def to_host(v: Any) -> Any:
            if isinstance(v, ndarray):
                count_to_host(where, v, implicit=True)
                return v._a
            return v

        def writer(*args: Any, **kwargs: Any) -> Any:
            return func(*[to_host(a) for a in args], **{k: to_host(v) for k, v in kwargs.items()})

        return writer
    return None


def _copy_host_args(name: str, args: list[Any], kwargs: dict[str, Any]) -> None:
    """Copies host data to the device (counted) for the arguments CuPy copies itself."""
    where = f"cupy.{name}"
    if name in HOST_VARARGS:
        args[:] = [host_to_device(a, where) if isinstance(a, np.ndarray) else a for a in args]
        return
    for pos, key in HOST_ARGS.get(name, ()):
        if pos < len(args) and isinstance(args[pos], np.ndarray | list | tuple):
            if not isinstance(args[pos], list | tuple) or not _holds_fake(args[pos]):
                args[pos] = host_to_device(args[pos], where)
        elif key in kwargs and isinstance(kwargs[key], np.ndarray | list | tuple):
            if not isinstance(kwargs[key], list | tuple) or not _holds_fake(kwargs[key]):
                kwargs[key] = host_to_device(kwargs[key], where)


def _is_host_values(value: Any) -> bool:
    return (
        isinstance(value, np.ndarray)
        and value.ndim > 0
        or (isinstance(value, list | tuple) and not _holds_fake(value))
    )


def _holds_fake(seq: Any) -> bool:
    return any(
        isinstance(v, ndarray) or isinstance(v, list | tuple) and _holds_fake(v) for v in seq
    )


def follow_cupy_on_host_arrays(enabled: bool = True) -> bool:
    """Whether ``cupy.sum(h)`` and the other functions of ``METHOD_OF_FIRST`` given a NumPy
    array ``h`` call its method as CuPy does (True) or refuse it as a host/device mix-up (False,
    the default); returns the previous setting."""
    previous = _FOLLOW_CUPY["host_methods"]
    _FOLLOW_CUPY["host_methods"] = bool(enabled)
    return previous


def wrap_function(func: Callable[..., Any], name: str) -> Callable[..., Any]:
    """NumPy's ``func`` on fake arrays (host arrays refused unless CuPy copies them itself,
    results wrapped)."""
    host = _host_function(func, name)
    if host is not None:
        if host is not func:
            functools.update_wrapper(host, func)
        return host
    where = f"cupy.{name}"
    like = name in LIKE
    copies_host_data = name in HOST_ARGS or name in HOST_VARARGS
    as_array = name in BOOL_AS_ARRAY
    method = METHOD_OF_FIRST.get(name)

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if method and _FOLLOW_CUPY["host_methods"] and args and isinstance(args[0], np.ndarray):
            return getattr(args[0], method)(*args[1:], **kwargs)
        if copies_host_data:
            args_list, kwargs = list(args), dict(kwargs)
            _copy_host_args(name, args_list, kwargs)
            args = tuple(args_list)
        plain = [unwrap(a, where) for a in args[1:]]
        if like and args and isinstance(args[0], np.ndarray):
            plain.insert(0, args[0])  # only its shape and dtype are read, as by CuPy
        elif args:
            plain.insert(0, unwrap(args[0], where))
        named = {k: unwrap(v, where) for k, v in kwargs.items()}
        out = func(*plain, **named)
        if as_array and isinstance(out, bool | np.bool_):
            return ndarray._from(np.asarray(out))
        return wrap(out)

    wrapper.__module__ = "cupy"
    return wrapper


class ufunc:  # noqa: N801 - NumPy's name
    """A NumPy ufunc on fake arrays, with its methods."""

    def __init__(self, uf: np.ufunc) -> None:
        self._uf = uf
        self.__name__ = uf.__name__
        self.__doc__ = uf.__doc__
        self.nin = uf.nin
        self.nout = uf.nout
        self.nargs = uf.nargs
        self.identity = uf.identity

    def _run(self, method: Callable[..., Any], what: str, args: Any, kwargs: Any) -> Any:
        where = f"cupy.{self.__name__}{what}"
        result = method(
            *[unwrap(a, where) for a in args],
            **{k: unwrap(v, where) for k, v in kwargs.items()},
        )
        out = kwargs.get("out")
        if isinstance(out, ndarray) and result is out._a:
            return out  # out= returns the very array given, as in CuPy
        return wrap(result)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._run(self._uf, "", args, kwargs)

    def reduce(self, *args: Any, **kwargs: Any) -> Any:
        return self._run(self._uf.reduce, ".reduce", args, kwargs)

    def accumulate(self, *args: Any, **kwargs: Any) -> Any:
        return self._run(self._uf.accumulate, ".accumulate", args, kwargs)

    def reduceat(self, *args: Any, **kwargs: Any) -> Any:
        return self._run(self._uf.reduceat, ".reduceat", args, kwargs)

    def outer(self, *args: Any, **kwargs: Any) -> Any:
        return self._run(self._uf.outer, ".outer", args, kwargs)

    def at(self, a: Any, indices: Any, b: Any = None) -> Any:
        """``ufunc.at(a, indices, b)``: host indices and values are copied to the device
        (counted), as CuPy's scatter does."""
        where = f"cupy.{self.__name__}.at"
        if isinstance(indices, np.ndarray | list):
            indices = host_to_device(indices, where)
        elif isinstance(indices, tuple):
            indices = tuple(
                host_to_device(i, where) if isinstance(i, np.ndarray | list) else i for i in indices
            )
        if _is_host_values(b):
            b = host_to_device(b, where)
        args = (a, indices) if b is None else (a, indices, b)
        return self._run(self._uf.at, ".at", args, {})

    def __repr__(self) -> str:
        return f"<ufunc '{self.__name__}' (cunumpy fake CuPy)>"


def wrap_namespace(source: Any, target: dict[str, Any], prefix: str = "") -> None:
    """Fills ``target`` with wrapped versions of ``source``'s public callables; types, dtypes
    and constants pass through."""
    for name in dir(source):
        if name.startswith("_") or name in SKIP:
            continue
        try:
            value = getattr(source, name)
        except AttributeError:
            continue
        if isinstance(value, ModuleType):
            continue
        if isinstance(value, np.ufunc):
            target[name] = ufunc(value)
        elif isinstance(value, type) or not callable(value):
            target[name] = value
        else:
            target[name] = wrap_function(value, prefix + name)


class _NoKernel:
    """``RawKernel``, ``RawModule``, ``ElementwiseKernel``, ``ReductionKernel``: the fake CuPy
    does not compile CUDA through CuPy; use ``cunumpy.kernels.CudaKernel``, which runs in the
    emulator on the fake backend."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.args = args

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(
            f"fake CuPy cannot compile CUDA kernels ({type(self).__name__}); use "
            "cunumpy.kernels.CudaKernel, which runs in the CPU emulator on the fake backend"
        )

    __call__ = _refuse
    compile = _refuse
    get_function = _refuse


class RawKernel(_NoKernel):
    """Not available in the fake CuPy."""


class RawModule(_NoKernel):
    """Not available in the fake CuPy."""


class ElementwiseKernel(_NoKernel):
    """Not available in the fake CuPy."""


class ReductionKernel(_NoKernel):
    """Not available in the fake CuPy."""


def fuse(*args: Any, **kwargs: Any) -> Any:
    """The identity: ``@fuse``, ``@fuse()`` and ``fuse(kernel_name=...)`` return the function."""
    if len(args) == 1 and callable(args[0]) and not kwargs:
        return args[0]
    return lambda f: f


def _testing_wrapper(func: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        plain = []
        for a in args:
            if isinstance(a, ndarray):
                count_to_host(f"cupy.testing.{func.__name__}", a, implicit=True)
                plain.append(a._a)
            else:
                plain.append(a)
        return func(*plain, **kwargs)

    return wrapper


def testing_namespace() -> dict[str, Any]:
    """``cupy.testing``: NumPy's assertions, reading fake arrays' host buffers."""
    out: dict[str, Any] = {}
    for name in dir(np.testing):
        if name.startswith("assert_"):
            out[name] = _testing_wrapper(getattr(np.testing, name))
    return out


class Generator:
    """``cupy.random.Generator`` over NumPy's: results are fake arrays."""

    def __init__(self, gen: np.random.Generator) -> None:
        self._gen = gen

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._gen, name)
        if not callable(method):
            return method
        return wrap_function(method, f"random.Generator.{name}")


def default_rng(seed: Any = None) -> Generator:
    """``cupy.random.default_rng``: NumPy's generator for the same seed, drawing fake arrays."""
    return Generator(np.random.default_rng(unwrap(seed, "cupy.random.default_rng")))


class RandomState(Generator):
    """``cupy.random.RandomState`` over NumPy's legacy ``RandomState``: results are fake
    arrays."""

    def __init__(self, seed: Any = None) -> None:
        super().__init__(np.random.RandomState(seed))  # type: ignore[arg-type]


def get_random_state() -> RandomState:
    """The global state behind ``cupy.random.rand`` etc.: NumPy's global ``RandomState``."""
    state = RandomState()
    state._gen = np.random.mtrand._rand  # type: ignore[assignment]
    return state


__all__ = ["IMPLICIT_CONVERSION"]
