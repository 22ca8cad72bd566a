"""SciPy's host solvers with callbacks on the device: the glue of ``xp.optimize``/``xp.integrate``.

SciPy's MINPACK/QUADPACK/LSODA run on the host. When the user's data is on the device, each
callback gets its arrays copied to the device and its result copied back (both counted), and the
arrays of the result go back to the device. With host data nothing is copied.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np

from ._conversions import is_cupy_array, to_cupy, to_numpy
from .exceptions import ScipyUnavailableError


def scipy_module(name: str, caller: str) -> ModuleType:
    try:
        return importlib.import_module(f"scipy.{name}")
    except ImportError as err:
        raise ScipyUnavailableError(
            f"{caller} runs scipy.{name} on the host and needs SciPy: pip install scipy"
        ) from err


def host(value: Any) -> Any:
    """`value` with its device arrays copied to the host (counted), inside tuples and lists."""
    if is_cupy_array(value):
        return to_numpy(value)
    if type(value) is tuple:
        return tuple(host(v) for v in value)
    if isinstance(value, list):
        return [host(v) for v in value]
    return value


def device(value: Any) -> Any:
    """`value` with its host arrays copied to the device (counted), inside tuples and lists;
    SciPy's result objects (dict-like) get their array entries moved."""
    if isinstance(value, np.ndarray):
        return to_cupy(value)
    if type(value) is tuple:
        return tuple(device(v) for v in value)
    if isinstance(value, list):
        return [device(v) for v in value]
    if isinstance(value, dict):
        for key, item in list(value.items()):
            if isinstance(item, np.ndarray):
                value[key] = to_cupy(item)
        return value
    return value


def on_device(callback: Callable[..., Any] | None, arrays: int = 1) -> Callable[..., Any] | None:
    """`callback` called with its first `arrays` positional arguments on the device and its
    result brought back to the host."""
    if callback is None or not callable(callback):
        return callback

    def call(*args: Any, **kwargs: Any) -> Any:
        moved = [to_cupy(a) if isinstance(a, np.ndarray) else a for a in args[:arrays]]
        return host(callback(*moved, *args[arrays:], **kwargs))

    return call


def wants_device(x0: Any) -> bool:
    """Whether callbacks and results belong on the device: `x0` is a CuPy array."""
    return is_cupy_array(x0)
