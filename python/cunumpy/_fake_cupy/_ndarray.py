"""The fake ``cupy.ndarray``: a NumPy array in host memory that behaves like device memory.

It is not an ``np.ndarray``, refuses implicit conversion to NumPy, and its data pointer is the
host address of its buffer (what the CPU emulator of CUDA kernels dereferences).
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from .._ledger import record

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
    record(
        "sync",
        f"{what} of a {a.dtype} array of shape {a.shape} (device to host)",
        int(a.nbytes),
        blocking=True,
        implicit=True,
    )


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
    __array_ufunc__ = None  # NumPy defers to us (and we refuse host arrays)
    __array_priority__ = 1000

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
        """A host copy (NumPy array)."""
        if out is not None:
            if not isinstance(out, np.ndarray) or out.shape != self.shape:
                raise ValueError("out must be a NumPy array of the same shape")
            np.copyto(out, self._a)
            return out
        return np.array(self._a, order=order, copy=True)

    def set(self, arr: Any, stream: Any = None) -> None:
        """Copies host data into this array (shapes must match)."""
        src = np.asarray(arr)
        if src.shape != self.shape:
            raise ValueError(f"Shape mismatch. Old shape: {self.shape}, new shape: {src.shape}")
        np.copyto(self._a, src, casting="unsafe")

    def item(self, *args: Any) -> Any:
        _sync_event("item()", self)
        return self._a.item(*args)

    def tolist(self) -> Any:
        _sync_event("tolist()", self)
        return self._a.tolist()

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
        return "array(" + repr(self._a)[6:] if repr(self._a).startswith("array(") else repr(self._a)

    def __str__(self) -> str:
        return str(self._a)

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
        return wrap(self._a[unwrap(key, "cupy.ndarray.__getitem__")])

    def __setitem__(self, key: Any, value: Any) -> None:
        self._a[unwrap(key, "cupy.ndarray.__setitem__")] = unwrap(value, "cupy.ndarray.__setitem__")

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


def _rebuild(a: np.ndarray) -> ndarray:
    return ndarray._from(a)
