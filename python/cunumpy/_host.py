"""Host-only code with arguments of either backend: ``host_call``, ``evaluate_on_host``,
``setup_on_host``.

Setup code often needs a host-only library (SciPy, a file reader, an external code) while the
simulation's arrays live on the device. These helpers make the round trip explicit and counted:
device arrays go to the host once, the function runs on the NumPy backend, and array results
come back to the device.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from ._backend import use_backend
from ._conversions import is_cupy_array, to_cupy, to_numpy

__all__ = ["evaluate_on_host", "host_call", "setup_on_host"]


def _has_device_array(value: Any) -> bool:
    if is_cupy_array(value):
        return True
    if isinstance(value, tuple | list):
        return any(_has_device_array(v) for v in value)
    return False


def _to_host(value: Any, memo: dict[int, Any]) -> Any:
    """Device arrays (also inside tuples and lists) as NumPy arrays; an array passed twice is
    copied once and stays one array on the host."""
    if is_cupy_array(value):
        found = memo.get(id(value))
        if found is None:
            found = memo[id(value)] = to_numpy(value)
        return found
    if isinstance(value, tuple | list):
        return type(value)(_to_host(v, memo) for v in value)
    return value


def _to_device(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return to_cupy(value)
    if isinstance(value, tuple | list):
        return type(value)(_to_device(v) for v in value)
    return value


def host_call(fun: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Calls the host-only function ``fun`` with arguments of either backend.

    ``fun`` always runs on the NumPy backend. When a device (CuPy) array is among the
    arguments (directly or inside tuples and lists), each one is copied to the host once, and
    the array results (an ndarray, or tuples and lists of them) are copied back to the device;
    every copy is counted by :func:`~cunumpy.profiling.count_transfers`. Without device
    arguments ``fun`` is called as it is and its results stay on the host.

    >>> import cunumpy as xp
    >>> xp.host_call(lambda x: x.sum(), xp.arange(4.0))
    np.float64(6.0)
    """
    on_device = _has_device_array(args) or _has_device_array(tuple(kwargs.values()))
    with use_backend("numpy"):
        if not on_device:
            return fun(*args, **kwargs)
        memo: dict[int, Any] = {}
        host_args = _to_host(args, memo)
        host_kwargs = {k: _to_host(v, memo) for k, v in kwargs.items()}
        result = fun(*host_args, **host_kwargs)
    return _to_device(result)


def evaluate_on_host(method: Callable[..., Any]) -> Callable[..., Any]:
    """Decorates a host-only method ``method(self, *args, **kwargs)`` so that every call goes
    through :func:`host_call`: device arguments are copied to the host, the method runs on the
    NumPy backend and its array results come back to the device.

    >>> import numpy as np
    >>> class Profile:
    ...     @evaluate_on_host
    ...     def cumulative(self, x):
    ...         return np.cumsum(x)
    """

    @functools.wraps(method)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        return host_call(method, self, *args, **kwargs)

    return wrapper


def setup_on_host(init: Callable[..., Any]) -> Callable[..., Any]:
    """Decorates an ``__init__`` so it runs on the NumPy backend: the object holds host data
    (NumPy arrays, SciPy objects) whatever the active backend; host-only evaluation can then
    go through :func:`evaluate_on_host`."""

    @functools.wraps(init)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> None:
        with use_backend("numpy"):
            init(self, *args, **kwargs)

    return wrapper
