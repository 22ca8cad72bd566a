"""Explicit, counted moves between NumPy and CuPy, and questions about where arrays live."""

from __future__ import annotations

import sys
from types import ModuleType
from typing import Any

import numpy as np

from . import _backend, _capture
from ._ledger import record, recorded_by_caller
from .exceptions import (
    CupyUnavailableError,
    InvalidArgumentError,
    InvalidStateError,
    MixedBackendError,
)


def _cupy_module() -> ModuleType | None:
    """CuPy if it has been imported (no CuPy array can exist otherwise)."""
    return sys.modules.get("cupy")


def is_cupy_array(a: object) -> bool:
    cupy = _cupy_module()
    return cupy is not None and isinstance(a, cupy.ndarray)


def _require_cupy() -> ModuleType:
    if not _backend.cupy_available():
        raise CupyUnavailableError(
            "CuPy is not available or not functional: " + str(_backend.cupy_unavailable_reason())
        )
    import cupy

    return cupy


def _describe(a: Any) -> str:
    return f"{getattr(a, 'dtype', type(a).__name__)} array of shape {getattr(a, 'shape', ())}"


def to_numpy(array: Any) -> np.ndarray:
    """A NumPy array with the data of ``array``; a CuPy array is copied to the host (counted as
    ``to_host``, keeping F order), a NumPy array is returned as it is."""
    if type(array) is np.ndarray:
        return array
    if is_cupy_array(array):
        _capture.refuse(
            f"to_numpy({_describe(array)})", "a copy to the host cannot be part of a graph"
        )
        with recorded_by_caller():
            out = array.get(order="A")
        record("to_host", f"to_numpy: {_describe(array)}", int(array.nbytes))
        return out
    return np.asarray(array)


def to_cupy(array: Any) -> Any:
    """A CuPy array with the data of ``array``. Host data is copied (``to_device``); a CuPy array on
    the current device is returned as it is; one on another device is copied (``device_copy``).
    Raises :class:`~cunumpy.exceptions.CupyUnavailableError` without a working CuPy."""
    cupy = _require_cupy()
    if isinstance(array, cupy.ndarray):
        out = cupy.asarray(array)
        if out.data.ptr != array.data.ptr:
            record(
                "device_copy", f"to_cupy: {_describe(array)} from another device", int(array.nbytes)
            )
        return out
    _capture.refuse(
        f"to_cupy({_describe(array)})", "a copy from the host cannot be part of a graph"
    )
    with recorded_by_caller():
        out = cupy.asarray(array)
    record("to_device", f"to_cupy: {_describe(out)}", int(out.nbytes))
    return out


def to_cunumpy(array: Any) -> Any:
    """``array`` on the active backend: :func:`to_cupy` on CuPy, :func:`to_numpy` on NumPy."""
    if _backend.get_backend() == "cupy":
        return to_cupy(array)
    return to_numpy(array)


def as_device_array(
    value: Any, dtype: Any = None, ndim: int | None = None, *, name: str | None = None
) -> Any:
    """Reference or copy once: returns ``value`` itself when it already is a C-contiguous CuPy
    array of the right dtype, else one counted copy. Meant for building device argument objects;
    on the NumPy backend it raises, since nothing is ever copied to the device there."""
    label = f"device argument {name!r}" if name else "device argument"
    if _backend.get_backend() != "cupy":
        raise InvalidStateError(
            f"{label}: the active backend is 'numpy'; arrays are never copied to the device "
            "behind your back. Select the CuPy backend first."
        )
    cupy = _require_cupy()
    if ndim is not None and getattr(value, "ndim", np.ndim(value)) != ndim:
        raise InvalidArgumentError(
            f"{label} must have {ndim} dimension(s), got {np.ndim(value)} "
            f"(shape {getattr(value, 'shape', np.shape(value))})"
        )
    want = None if dtype is None else np.dtype(dtype)
    if (
        isinstance(value, cupy.ndarray)
        and value.flags.c_contiguous
        and (want is None or value.dtype == want)
    ):
        return value
    with recorded_by_caller():
        out = cupy.ascontiguousarray(cupy.asarray(value, dtype=want))
    kind = "device_copy" if isinstance(value, cupy.ndarray) else "to_device"
    record(kind, f"as_device_array: {label} {_describe(out)}", int(out.nbytes))
    return out


def get_array_backend(array: Any) -> str:
    """``"cupy"`` for a CuPy array, ``"numpy"`` for anything else."""
    return "cupy" if is_cupy_array(array) else "numpy"


def get_array_module(array: Any) -> ModuleType:
    """The array_api_compat module of the backend ``array`` lives on."""
    return _backend._compat_module(get_array_backend(array))


def is_gpu(array: Any) -> bool:
    """Whether ``array`` is a device (CuPy) array."""
    return is_cupy_array(array)


def is_cpu(array: Any) -> bool:
    """Whether ``array`` is not a device array."""
    return not is_cupy_array(array)


def same_backend(*arrays: Any) -> bool:
    """Whether all arrays live on one backend (True for zero or one array)."""
    return len({get_array_backend(a) for a in arrays}) <= 1


def assert_same_backend(*arrays: Any) -> None:
    """Raises :class:`~cunumpy.exceptions.MixedBackendError` (a ``TypeError``) naming each
    array's backend when they differ."""
    if not same_backend(*arrays):
        found = [f"{i}: {get_array_backend(a)} {_describe(a)}" for i, a in enumerate(arrays)]
        raise MixedBackendError(
            "Arrays are on mismatched backends: ["
            + "; ".join(found)
            + "]. Use xp.to_cunumpy() (or to_numpy/to_cupy) to move them explicitly."
        )


def synchronize() -> None:
    """Waits for all work on the current device (a no-op on NumPy); recorded as ``sync``."""
    if _backend.get_backend() != "cupy":
        return
    _capture.refuse("synchronize()", "a graph cannot wait for the host; synchronize after a replay")
    import cupy

    cupy.cuda.Device().synchronize()
    record("sync", "synchronize()")
