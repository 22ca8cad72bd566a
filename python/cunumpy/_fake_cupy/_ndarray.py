"""The fake ``cupy.ndarray``: a NumPy array in host memory that behaves like device memory.

It is not an ``np.ndarray``, refuses implicit conversion to NumPy, and its data pointer is the
host address of its buffer (what the CPU emulator of CUDA kernels dereferences).
"""

from __future__ import annotations

import operator
import os
import pickle
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import _config
from .._ledger import record_device_copy

IMPLICIT_CONVERSION = (
    "Implicit conversion to a NumPy array is not allowed. Please use `.get()` to construct a "
    "NumPy array explicitly (cunumpy's fake CuPy behaves like device memory)."
)


def host_mixup(where: str, value: np.ndarray) -> TypeError:
    return TypeError(
        f"{where}: got a NumPy array (shape {value.shape}, dtype {value.dtype}) where a device "
        "array is expected; on a GPU this is a host/device mix-up. Copy it explicitly with "
        "xp.to_cupy() / cupy.asarray()."
    )


def unwrap(value: Any, where: str) -> Any:
    """The NumPy data of fake arrays inside ``value`` (tuples, lists and dicts too); a NumPy
    array of ndim > 0 is refused, as device code would refuse host memory."""
    if isinstance(value, ndarray):
        return value._a
    if isinstance(value, np.ndarray):
        if value.ndim > 0:
            raise host_mixup(where, value)
        return value
    if isinstance(value, tuple):
        return type(value)(unwrap(v, where) for v in value) if type(value) is tuple else value
    if isinstance(value, list):
        return [unwrap(v, where) for v in value]
    return value


def wrap(value: Any) -> Any:
    """Fake arrays for the NumPy arrays (and NumPy scalars: 0-d arrays, as CuPy returns) in a
    result."""
    if isinstance(value, np.ndarray):
        return ndarray._from(value)
    if isinstance(value, np.generic):
        return ndarray._from(np.asarray(value))
    if type(value) is tuple:
        return tuple(wrap(v) for v in value)
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # named tuples (linalg results)
        return type(value)(*(wrap(v) for v in value))
    if isinstance(value, list):
        return [wrap(v) for v in value]
    return value


def _sync_event(what: str, a: ndarray) -> None:
    record_device_copy(
        "sync",
        f"{what} of a {a.dtype} array of shape {a.shape} (device to host)",
        int(a.nbytes),
        implicit=True,
    )


def count_to_host(what: str, a: Any, *, implicit: bool = False) -> None:
    """Records a device-to-host copy the fake makes (``.get()``, ``tobytes()``, printing...)."""
    record_device_copy(
        "to_host",
        f"cupy: {what} of a {a.dtype} array of shape {a.shape}",
        int(a.nbytes),
        implicit=implicit,
    )


def count_to_device(what: str, a: Any, *, implicit: bool = False) -> None:
    """Records a host-to-device copy the fake makes (``cupy.asarray`` of host data, ``.set()``,
    host data that a CuPy function copies to the device itself...)."""
    record_device_copy(
        "to_device",
        f"cupy: {what}: a {a.dtype} array of shape {np.shape(a)}",
        int(a.nbytes),
        implicit=implicit,
    )


def host_to_device(value: Any, where: str, dtype: Any = None) -> ndarray:
    """Host data (a NumPy array, a list, a scalar) copied to a new fake array, as CuPy copies
    it implicitly in the places where it accepts host data; counted as ``to_device``."""
    host = np.array(unwrap(value, where) if isinstance(value, list | tuple) else value, dtype=dtype)
    count_to_device(where, host, implicit=True)
    return ndarray._from(host)


def _is_host_data(value: Any) -> bool:
    """A NumPy array with elements, or a list/tuple holding no fake array: data CuPy would
    have to copy from the host."""
    if isinstance(value, np.ndarray):
        return value.ndim > 0
    if isinstance(value, list | tuple):
        return not any(isinstance(v, ndarray) for v in value)
    return False


def _index_key(key: Any, where: str) -> tuple[Any, bool]:
    """The NumPy index for ``key`` and whether it is advanced indexing. NumPy index arrays and
    lists are copied to the device as CuPy does (counted); fake index arrays are unwrapped."""
    parts = list(key) if isinstance(key, tuple) else [key]
    advanced = False
    for i, part in enumerate(parts):
        if part is None or part is Ellipsis or isinstance(part, slice):
            continue
        if isinstance(part, ndarray):
            parts[i] = part._a
            advanced = True
        elif isinstance(part, np.ndarray | list):
            parts[i] = host_to_device(part, where)._a
            advanced = True
        elif isinstance(part, bool | np.bool_):
            advanced = True
    plain = tuple(parts) if isinstance(key, tuple) else parts[0]
    return plain, advanced


class _Memory:
    """``a.data``: the pointer and the device."""

    __slots__ = ("ptr", "device_id", "mem")

    def __init__(self, ptr: int, owner: Any) -> None:
        self.ptr = ptr
        self.device_id = 0
        self.mem = owner


class _Device:
    """``a.device``: device 0."""

    id = 0

    def __repr__(self) -> str:
        return "<CUDA Device 0 (cunumpy fake)>"

    def __eq__(self, other: object) -> bool:
        return getattr(other, "id", None) == 0

    def __hash__(self) -> int:
        return 0


_DEVICE = _Device()

# Array methods forwarded to NumPy (results wrapped; arguments unwrapped and checked).
_METHODS = (
    "all any argmax argmin argpartition argsort choose clip compress conj conjugate cumprod "
    "cumsum diagonal dot flatten max mean min nonzero partition prod ptp ravel repeat "
    "round searchsorted sort squeeze std sum swapaxes take trace transpose var view"
).split()


def _binary(op: Callable[[Any, Any], Any], name: str) -> Any:
    def method(self: ndarray, other: Any) -> Any:
        if isinstance(other, np.ndarray) and other.ndim > 0:
            raise host_mixup(f"cupy.ndarray.{name}", other)
        if not isinstance(other, ndarray | np.ndarray | np.generic | int | float | complex):
            return NotImplemented
        return wrap(op(self._a, unwrap(other, name)))

    method.__name__ = name
    return method


def _reflected(op: Callable[[Any, Any], Any], name: str) -> Any:
    def method(self: ndarray, other: Any) -> Any:
        if isinstance(other, np.ndarray) and other.ndim > 0:
            raise host_mixup(f"cupy.ndarray.{name}", other)
        if not isinstance(other, np.ndarray | np.generic | int | float | complex):
            return NotImplemented
        return wrap(op(other, self._a))

    method.__name__ = name
    return method


def _inplace(op: Callable[[Any, Any], Any], name: str) -> Any:
    def method(self: ndarray, other: Any) -> ndarray:
        if isinstance(other, np.ndarray) and other.ndim > 0:
            raise host_mixup(f"cupy.ndarray.{name}", other)
        op(self._a, unwrap(other, name))
        return self

    method.__name__ = name
    return method


class ndarray:  # noqa: N801 - CuPy's name
    """A fake device array backed by a NumPy array (``_a``) in host memory."""

    __slots__ = ("_a", "__weakref__")
    __array_priority__ = 1000

    # -- NumPy's protocols, as CuPy implements them ------------------------------------------
    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        """``np.sin(a)``, ``np.add.reduce(a)``, ``scipy.special.erfinv(a)``...: run as the CuPy
        ufunc of the same name, else ``cupyx.scipy.special``'s (CuPy looks in both), which
        refuses NumPy arrays of ndim > 0 (an implicit host-to-device copy) as CuPy does."""
        cupy = sys.modules.get("cupy")
        func = getattr(cupy, ufunc.__name__, None)
        if func is None:  # SciPy's special ufuncs (a ufunc does not say where it is from)
            special = sys.modules.get("cupyx.scipy.special")
            func = getattr(special, ufunc.__name__, None) if special is not None else None
        if func is None or method not in _UFUNC_METHODS:
            return NotImplemented
        if method != "__call__":
            func = getattr(func, method, None)
            if func is None:
                return NotImplemented
        out = kwargs.get("out")
        if isinstance(out, tuple):
            if len(out) != 1:
                raise ValueError("The 'out' parameter must have exactly one array value")
            kwargs["out"] = out[0]
        for x in (*inputs, *((kwargs["out"],) if out is not None else ())):
            if not (
                isinstance(x, ndarray | np.ndarray | np.generic | bool | int | float | complex)
                or hasattr(x, "__cuda_array_interface__")
            ):
                return NotImplemented
        return func(*inputs, **kwargs)

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        """``np.concatenate([a, b])``, ``np.array_equal(a, b)``...: run as the CuPy function of
        the same name (``cupy.linalg.norm`` for ``np.linalg.norm``); NotImplemented, so that
        NumPy raises ``TypeError``, when CuPy has none or other array types take part."""
        module: Any = sys.modules.get("cupy")
        for part in func.__module__.split(".")[1:]:
            module = getattr(module, part, None)
        cupy_func = getattr(module, func.__name__, None)
        if cupy_func is None or cupy_func is func:
            return NotImplemented
        if not all(issubclass(t, ndarray | np.ndarray) for t in types):
            return NotImplemented
        return cupy_func(*args, **kwargs)

    def __init__(
        self,
        shape: Any,
        dtype: Any = float,
        memptr: Any = None,
        strides: Any = None,
        order: str = "C",
    ) -> None:
        if memptr is not None or strides is not None:
            raise NotImplementedError("the fake cupy.ndarray() takes no memptr or strides")
        self._a = np.empty(shape, dtype=dtype, order=order)

    @classmethod
    def _from(cls, a: np.ndarray) -> ndarray:
        out = object.__new__(cls)
        out._a = a
        return out

    # -- conversions -------------------------------------------------------------------------
    def __array__(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError(IMPLICIT_CONVERSION)

    def get(
        self, stream: Any = None, order: str = "C", out: Any = None, blocking: bool = True
    ) -> np.ndarray:
        """A host copy (NumPy array); counted as ``to_host``."""
        if out is not None:
            if not isinstance(out, np.ndarray) or out.shape != self.shape:
                raise ValueError("out must be a NumPy array of the same shape")
            np.copyto(out, self._a)
            count_to_host("get()", self)
            return out
        host = np.array(self._a, order=order, copy=True)
        count_to_host("get()", self)
        return host

    def set(self, arr: Any, stream: Any = None) -> None:
        """Copies host data into this array (shapes must match); counted as ``to_device``."""
        src = np.asarray(arr)
        if src.shape != self.shape:
            raise ValueError(f"Shape mismatch. Old shape: {self.shape}, new shape: {src.shape}")
        np.copyto(self._a, src, casting="unsafe")
        count_to_device("set()", src)

    def item(self, *args: Any) -> Any:
        _sync_event("item()", self)
        return self._a.item(*args)

    def tolist(self) -> Any:
        count_to_host("tolist()", self, implicit=True)  # the whole array comes to the host
        return self._a.tolist()

    def tobytes(self, order: str = "C") -> bytes:
        """The bytes of a host copy (``to_host``), as ``self.get().tobytes(order)``."""
        count_to_host("tobytes()", self)
        return self._a.tobytes(order)

    def tofile(self, fid: Any, sep: str = "", format: str = "%s") -> None:  # noqa: A002
        """Writes a host copy (``to_host``) to a file, as ``self.get().tofile(...)``."""
        count_to_host("tofile()", self)
        self._a.tofile(fid, sep, format)

    def dump(self, file: Any) -> None:
        """Pickles the array to a file (a ``to_host`` copy; ``cupy.load`` reads it back)."""
        if isinstance(file, str | os.PathLike):
            with open(file, "wb") as f:
                pickle.dump(self, f, -1)
        else:
            pickle.dump(self, file, -1)

    def dumps(self) -> bytes:
        """The pickle of the array (a ``to_host`` copy)."""
        return pickle.dumps(self, -1)

    def __float__(self) -> float:
        _sync_event("float()", self)
        return float(self._a)

    def __int__(self) -> int:
        _sync_event("int()", self)
        return int(self._a)

    def __complex__(self) -> complex:
        _sync_event("complex()", self)
        return complex(self._a)

    def __bool__(self) -> bool:
        _sync_event("bool()", self)
        return bool(self._a)

    def __index__(self) -> int:
        _sync_event("index()", self)
        return operator.index(self._a)

    def __reduce__(self) -> Any:
        count_to_host("pickling", self, implicit=True)
        return (_rebuild, (self._a.copy(),))

    # -- what device code and cunumpy read ---------------------------------------------------
    @property
    def data(self) -> _Memory:
        return _Memory(int(self._a.__array_interface__["data"][0]), self)

    @property
    def device(self) -> _Device:
        return _DEVICE

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        iface = self._a.__array_interface__
        return {
            "shape": self._a.shape,
            "typestr": self._a.dtype.str,
            "descr": iface.get("descr", [("", self._a.dtype.str)]),
            "data": (int(iface["data"][0]), not self._a.flags.writeable),
            "strides": None if self._a.flags.c_contiguous else self._a.strides,
            "version": 3,
        }

    @property
    def dtype(self) -> np.dtype:
        return self._a.dtype

    @property
    def shape(self) -> tuple[int, ...]:
        return self._a.shape

    @shape.setter
    def shape(self, value: Any) -> None:
        self._a.shape = value

    @property
    def strides(self) -> tuple[int, ...]:
        return self._a.strides

    @property
    def _c_contiguous(self) -> bool:
        return bool(self._a.flags.c_contiguous)

    @property
    def _f_contiguous(self) -> bool:
        return bool(self._a.flags.f_contiguous)

    @property
    def flags(self) -> Any:
        return self._a.flags

    @property
    def size(self) -> int:
        return self._a.size

    @property
    def nbytes(self) -> int:
        return self._a.nbytes

    @property
    def ndim(self) -> int:
        return self._a.ndim

    @property
    def itemsize(self) -> int:
        return self._a.itemsize

    @property
    def base(self) -> Any:
        return None if self._a.base is None else "view"

    @property
    def T(self) -> ndarray:  # noqa: N802 - NumPy's name
        return ndarray._from(self._a.T)

    @property
    def mT(self) -> ndarray:  # noqa: N802 - NumPy's name
        return ndarray._from(np.swapaxes(self._a, -1, -2))

    @property
    def real(self) -> ndarray:
        return ndarray._from(self._a.real)

    @property
    def imag(self) -> ndarray:
        return ndarray._from(self._a.imag)

    def __len__(self) -> int:
        return len(self._a)

    def __iter__(self) -> Any:
        return (wrap(v) for v in self._a)

    def __repr__(self) -> str:
        count_to_host("repr()", self, implicit=True)  # CuPy prints a host copy
        return "array(" + repr(self._a)[6:] if repr(self._a).startswith("array(") else repr(self._a)

    def __str__(self) -> str:
        count_to_host("str()", self, implicit=True)
        return str(self._a)

    def __format__(self, spec: str) -> str:
        if self._a.ndim == 0:
            _sync_event("format()", self)
            return format(self._a[()], spec)
        count_to_host("format()", self, implicit=True)
        return format(self._a, spec)

    def __dlpack__(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError(IMPLICIT_CONVERSION)

    def __array_namespace__(self, api_version: str | None = None) -> Any:
        import array_api_compat.cupy

        return array_api_compat.cupy

    def to_device(self, device: Any, /, *, stream: Any = None) -> ndarray:
        if device in ("cpu",):
            raise ValueError(
                "the fake CuPy cannot move arrays to the CPU with to_device; use .get()"
            )
        return self

    # -- indexing ----------------------------------------------------------------------------
    def __getitem__(self, key: Any) -> Any:
        return wrap(self._a[_index_key(key, "cupy.ndarray.__getitem__")[0]])

    def __setitem__(self, key: Any, value: Any) -> None:
        """As CuPy: a fake array or a scalar goes anywhere; host data (a NumPy array or a list)
        is copied to the device (counted) for advanced indexing, and refused for basic indexing
        (``a[...] = host`` raises ``ValueError`` on a GPU too: use ``a.set(host)`` or
        ``a[...] = cupy.asarray(host)``), except ``a[:] = host`` of the same shape and dtype
        under ``CUPY_EXPERIMENTAL_SLICE_COPY=1``."""
        where = "cupy.ndarray.__setitem__"
        plain, advanced = _index_key(key, where)
        if _is_host_data(value):
            host = np.asarray(value)
            if advanced:
                value = host_to_device(host, where)
            elif _slice_copy(key, host, self):
                self.set(host)
                return
            else:
                raise ValueError(
                    "non-scalar numpy.ndarray cannot be used for fill (CuPy refuses assigning "
                    f"host data of shape {host.shape} through basic indexing: copy it "
                    "explicitly with a.set(host) or a[...] = cupy.asarray(host))"
                )
        self._a[plain] = unwrap(value, where)

    @property
    def flat(self) -> flatiter:
        """A flat iterator over the array (``cupy.flatiter``)."""
        return flatiter(self)

    def put(self, indices: Any, values: Any, mode: str = "wrap") -> None:
        """``a.flat[indices] = values`` with CuPy's default ``mode="wrap"``; host indices or
        values are copied to the device (counted), as CuPy does."""
        if mode not in ("raise", "wrap", "clip"):
            raise ValueError("clipmode not understood")
        where = "cupy.ndarray.put"
        idx = indices if isinstance(indices, ndarray) else host_to_device(indices, where)
        vals = values if isinstance(values, ndarray) else host_to_device(values, where, self.dtype)
        self._a.put(idx._a, vals._a, mode=mode)

    def byteswap(self, inplace: bool = False) -> ndarray:
        return wrap(self._a.byteswap(inplace))

    # -- methods -----------------------------------------------------------------------------
    def astype(
        self,
        dtype: Any,
        order: str = "K",
        casting: Any = None,
        subok: Any = None,
        copy: bool = True,
    ) -> ndarray:
        if casting is None:
            return ndarray._from(self._a.astype(dtype, order=order, copy=copy))
        return ndarray._from(self._a.astype(dtype, order=order, casting=casting, copy=copy))

    def copy(self, order: str = "C") -> ndarray:
        return ndarray._from(self._a.copy(order=order))

    def reshape(self, *shape: Any, order: str = "C") -> ndarray:
        if len(shape) == 1 and isinstance(shape[0], tuple | list):
            shape = tuple(shape[0])
        return ndarray._from(self._a.reshape(shape, order=order))

    def fill(self, value: Any) -> None:
        self._a.fill(unwrap(value, "cupy.ndarray.fill"))

    def __getattr__(self, name: str) -> Any:
        if name in _METHODS:
            method = getattr(self._a, name)

            def forwarded(*args: Any, **kwargs: Any) -> Any:
                where = f"cupy.ndarray.{name}"
                return wrap(
                    method(
                        *unwrap(list(args), where),
                        **{k: unwrap(v, where) for k, v in kwargs.items()},
                    )
                )

            forwarded.__name__ = name
            return forwarded
        raise AttributeError(f"'cupy.ndarray' (cunumpy fake) object has no attribute {name!r}")

    # -- operators ---------------------------------------------------------------------------
    __add__ = _binary(operator.add, "__add__")
    __sub__ = _binary(operator.sub, "__sub__")
    __mul__ = _binary(operator.mul, "__mul__")
    __truediv__ = _binary(operator.truediv, "__truediv__")
    __floordiv__ = _binary(operator.floordiv, "__floordiv__")
    __mod__ = _binary(operator.mod, "__mod__")
    __pow__ = _binary(operator.pow, "__pow__")
    __matmul__ = _binary(operator.matmul, "__matmul__")
    __and__ = _binary(operator.and_, "__and__")
    __or__ = _binary(operator.or_, "__or__")
    __xor__ = _binary(operator.xor, "__xor__")
    __lshift__ = _binary(operator.lshift, "__lshift__")
    __rshift__ = _binary(operator.rshift, "__rshift__")
    __eq__ = _binary(operator.eq, "__eq__")  # type: ignore[assignment]
    __ne__ = _binary(operator.ne, "__ne__")  # type: ignore[assignment]
    __lt__ = _binary(operator.lt, "__lt__")
    __le__ = _binary(operator.le, "__le__")
    __gt__ = _binary(operator.gt, "__gt__")
    __ge__ = _binary(operator.ge, "__ge__")
    __radd__ = _reflected(operator.add, "__radd__")
    __rsub__ = _reflected(operator.sub, "__rsub__")
    __rmul__ = _reflected(operator.mul, "__rmul__")
    __rtruediv__ = _reflected(operator.truediv, "__rtruediv__")
    __rfloordiv__ = _reflected(operator.floordiv, "__rfloordiv__")
    __rmod__ = _reflected(operator.mod, "__rmod__")
    __rpow__ = _reflected(operator.pow, "__rpow__")
    __rmatmul__ = _reflected(operator.matmul, "__rmatmul__")
    __rand__ = _reflected(operator.and_, "__rand__")
    __ror__ = _reflected(operator.or_, "__ror__")
    __rxor__ = _reflected(operator.xor, "__rxor__")
    __rlshift__ = _reflected(operator.lshift, "__rlshift__")
    __rrshift__ = _reflected(operator.rshift, "__rrshift__")
    __iadd__ = _inplace(operator.iadd, "__iadd__")
    __isub__ = _inplace(operator.isub, "__isub__")
    __imul__ = _inplace(operator.imul, "__imul__")
    __itruediv__ = _inplace(operator.itruediv, "__itruediv__")
    __ifloordiv__ = _inplace(operator.ifloordiv, "__ifloordiv__")
    __imod__ = _inplace(operator.imod, "__imod__")
    __ipow__ = _inplace(operator.ipow, "__ipow__")
    __iand__ = _inplace(operator.iand, "__iand__")
    __ior__ = _inplace(operator.ior, "__ior__")
    __ixor__ = _inplace(operator.ixor, "__ixor__")
    __ilshift__ = _inplace(operator.ilshift, "__ilshift__")
    __irshift__ = _inplace(operator.irshift, "__irshift__")
    __hash__ = None  # type: ignore[assignment]

    def __neg__(self) -> ndarray:
        return ndarray._from(-self._a)

    def __pos__(self) -> ndarray:
        return ndarray._from(+self._a)

    def __abs__(self) -> ndarray:
        return ndarray._from(abs(self._a))

    def __invert__(self) -> ndarray:
        return ndarray._from(~self._a)


ndarray.__module__ = "cupy"

_UFUNC_METHODS = ("__call__", "outer", "at", "reduce", "accumulate", "reduceat")


def _slice_copy(key: Any, host: np.ndarray, a: ndarray) -> bool:
    """CuPy's experimental ``a[:] = host`` (same shape and dtype, contiguous target)."""
    return (
        (_config.raw("CUPY_EXPERIMENTAL_SLICE_COPY") or "0").strip() not in ("", "0")
        and isinstance(key, slice)
        and key == slice(None)
        and host.shape == a.shape
        and host.dtype == a.dtype
        and (a._a.flags.c_contiguous or a._a.flags.f_contiguous)
    )


class flatiter:  # noqa: N801 - CuPy's name
    """``a.flat``: integer and slice indexing of the flattened array, iteration, ``copy``."""

    def __init__(self, a: ndarray) -> None:
        self._base = a
        self._index = 0

    @property
    def base(self) -> ndarray:
        return self._base

    def __len__(self) -> int:
        return self._base.size

    def _check(self, ind: Any) -> None:
        if not isinstance(ind, int | np.integer | slice) or isinstance(ind, bool):
            raise IndexError("unsupported iterator index")

    def __getitem__(self, ind: Any) -> ndarray:
        self._check(ind)
        return wrap(np.asarray(self._base._a.flat[ind]))

    def __setitem__(self, ind: Any, value: Any) -> None:
        self._check(ind)
        if _is_host_data(value):
            value = host_to_device(value, "cupy.flatiter.__setitem__", self._base.dtype)
        self._base._a.flat[ind] = unwrap(value, "cupy.flatiter.__setitem__")

    def __iter__(self) -> flatiter:
        return self

    def __next__(self) -> ndarray:
        if self._index >= len(self):
            raise StopIteration
        self._index += 1
        return self[self._index - 1]

    def copy(self) -> ndarray:
        return ndarray._from(self._base._a.flatten())


flatiter.__module__ = "cupy"


def _rebuild(a: np.ndarray) -> ndarray:
    count_to_device("unpickling", a, implicit=True)
    return ndarray._from(a)
