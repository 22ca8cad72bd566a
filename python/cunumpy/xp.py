"""``cunumpy.xp``: the backend module of cunumpy 0.7, kept for programs that import it.

``cunumpy.xp.array_backend`` is the process-wide backend (an :class:`ArrayBackend`), and the
backend and conversion functions of the top level are available here too
(``cunumpy.xp.to_numpy(array=a)``). ``cunumpy.xp.xp`` is the array_api_compat module of the
active backend. New code can use the top level (``import cunumpy as xp``) for all of it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

from . import _backend
from ._backend import (
    MIN_CUPY_VERSION,
    backend_info,
    cupy_available,
    cupy_version_supported,
    get_backend,
    set_backend,
    use_backend,
)
from ._conversions import (
    as_device_array,
    assert_same_backend,
    get_array_backend,
    get_array_module,
    is_cpu,
    is_gpu,
    same_backend,
    synchronize,
    to_cunumpy,
    to_cupy,
    to_numpy,
)
from ._toplevel import default_float_dtype

__all__ = [
    "MIN_CUPY_VERSION",
    "ArrayBackend",
    "array_backend",
    "as_device_array",
    "assert_same_backend",
    "backend_info",
    "cupy_available",
    "cupy_version_supported",
    "default_float_dtype",
    "get_array_backend",
    "get_array_module",
    "get_backend",
    "is_cpu",
    "is_gpu",
    "same_backend",
    "set_backend",
    "synchronize",
    "to_cunumpy",
    "to_cupy",
    "to_numpy",
    "use_backend",
]


class ArrayBackend:
    """A backend choice: ``backend`` (``"numpy"`` or ``"cupy"``) and ``xp``, its
    array_api_compat module.

    :data:`array_backend` is the process-wide one that ``cunumpy`` follows; setting it is
    :func:`cunumpy.set_backend`. An instance made here is independent of it: asking for
    ``"cupy"`` where CuPy cannot work raises
    :class:`~cunumpy.exceptions.BackendUnavailableError`, as :func:`cunumpy.set_backend` does
    (``set(..., strict=False)`` keeps NumPy instead; ``verbose=True`` prints why).
    """

    def __init__(self, backend: str = "numpy", verbose: bool = False) -> None:
        self._verbose = bool(verbose)
        self._backend = "numpy"
        self._listeners: list[Callable[[ModuleType], None]] = []
        self.set(backend)

    @property
    def backend(self) -> str:
        """``"numpy"`` or ``"cupy"``: the backend in effect."""
        return self._backend

    @property
    def xp(self) -> ModuleType:
        """The array_api_compat module of :attr:`backend`."""
        return _backend._compat_module(self._backend)

    def set(self, backend: str, *, strict: bool = True) -> None:
        """Selects ``backend``; ``"cupy"`` without a working CuPy raises
        :class:`~cunumpy.exceptions.BackendUnavailableError`, or keeps NumPy with
        ``strict=False``."""
        name = _backend._normalise(backend, source="the array backend")
        if name == "cupy" and not cupy_available():
            reason = _backend.cupy_unavailable_reason()
            if strict:
                from .exceptions import BackendUnavailableError

                raise BackendUnavailableError(
                    _backend._unavailable_message(f"ArrayBackend.set({backend!r})", reason)
                )
            if self._verbose:
                print(f"CuPy cannot work here ({reason}); using NumPy")
            name = "numpy"
        changed = name != self._backend
        self._backend = name
        if changed:
            for listener in list(self._listeners):
                listener(self.xp)

    @contextlib.contextmanager
    def use_backend(self, backend: str, *, strict: bool = True) -> Iterator[None]:
        """Selects ``backend`` for a block and restores the previous one afterwards."""
        previous = self._backend
        self.set(backend, strict=strict)
        try:
            yield
        finally:
            self.set(previous)

    def add_listener(self, listener: Callable[[ModuleType], None]) -> None:
        """Calls ``listener(module)`` now and whenever the module changes."""
        self._listeners.append(listener)
        listener(self.xp)

    def __repr__(self) -> str:
        return f"ArrayBackend(backend={self.backend!r}, module={self.xp.__name__!r})"


class _ProcessBackend(ArrayBackend):
    """The process-wide backend: a view of :func:`cunumpy.get_backend` and friends."""

    def __init__(self) -> None:  # no state of its own
        pass

    @property
    def backend(self) -> str:
        return get_backend()

    @property
    def xp(self) -> ModuleType:
        return _backend.current_module()

    def set(self, backend: str, *, strict: bool = True) -> None:
        set_backend(backend, strict=strict)

    @contextlib.contextmanager
    def use_backend(self, backend: str, *, strict: bool = True) -> Iterator[None]:
        with use_backend(backend, strict=strict):
            yield

    def add_listener(self, listener: Callable[[ModuleType], None]) -> None:
        _backend.add_listener(listener)


#: The process-wide backend that ``cunumpy`` follows.
array_backend: ArrayBackend = _ProcessBackend()


def __getattr__(name: str) -> Any:
    if name == "xp":
        return _backend.current_module()
    raise AttributeError(f"module 'cunumpy.xp' has no attribute {name!r}", name=name)
