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

from ._ndarray import IMPLICIT_CONVERSION, ndarray, unwrap, wrap

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
    "fromfile",
    "load",
    "save",
    "savez",
    "savez_compressed",
    "loadtxt",
    "savetxt",
    "genfromtxt",
    "fromregex",
    "set_printoptions",
    "get_printoptions",
    "printoptions",
    "array2string",
    "array_repr",
    "array_str",
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


def ascontiguousarray(a: Any, dtype: Any = None) -> ndarray:
    if isinstance(a, ndarray):
        return wrap(np.ascontiguousarray(a._a, dtype=dtype))
    return _host_copy(a, dtype, None, "C", 0)._contiguous("C")


def asfortranarray(a: Any, dtype: Any = None) -> ndarray:
    if isinstance(a, ndarray):
        return wrap(np.asfortranarray(a._a, dtype=dtype))
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


def wrap_function(func: Callable[..., Any], name: str) -> Callable[..., Any]:
    """NumPy's ``func`` on fake arrays (host arrays refused, results wrapped)."""
    where = f"cupy.{name}"
    like = name in LIKE

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        plain = [unwrap(a, where) for a in args[1:]]
        if like and args and isinstance(args[0], np.ndarray):
            plain.insert(0, args[0])  # only its shape and dtype are read, as by CuPy
        elif args:
            plain.insert(0, unwrap(args[0], where))
        named = {k: unwrap(v, where) for k, v in kwargs.items()}
        return wrap(func(*plain, **named))

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
        return wrap(
            method(
                *[unwrap(a, where) for a in args],
                **{k: unwrap(v, where) for k, v in kwargs.items()},
            )
        )

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

    def at(self, *args: Any, **kwargs: Any) -> Any:
        return self._run(self._uf.at, ".at", args, kwargs)

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
        plain = [a._a if isinstance(a, ndarray) else a for a in args]
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
    return Generator(np.random.default_rng(unwrap(seed, "cupy.random.default_rng")))


__all__ = ["IMPLICIT_CONVERSION"]
