"""Host implementations of a kernel (``pyccel``, ``numba``, ``numpy``, ``python``) and the
process-wide choice between them (``CUNUMPY_HOST_KERNEL_IMPLEMENTATION``)."""

from __future__ import annotations

import contextlib
import importlib
import threading
import warnings
from collections.abc import Callable, Iterator, Mapping
from types import ModuleType
from typing import Any

from .. import _config
from ..exceptions import InvalidArgumentError, KernelImplementationError

__all__ = [
    "HOST_IMPLEMENTATIONS",
    "DEVICE_IMPLEMENTATIONS",
    "HostImplementations",
    "CompiledHostKernel",
    "set_host_kernel_implementation",
    "get_host_kernel_implementation",
    "use_host_kernel_implementation",
    "set_device_kernel_implementation",
    "get_device_kernel_implementation",
    "use_device_kernel_implementation",
]

#: Host implementations in order of preference when none is chosen.
HOST_IMPLEMENTATIONS: tuple[str, ...] = ("pyccel", "numba", "numpy", "python")
#: Device implementations.
DEVICE_IMPLEMENTATIONS: tuple[str, ...] = ("cuda", "metal")

_choice: dict[str, str | None] = {"host": None, "device": None}


def _validate(value: Any, allowed: tuple[str, ...], what: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or value not in allowed:
        raise InvalidArgumentError(f"{what} must be one of {allowed} or None, got {value!r}")
    return value


def set_host_kernel_implementation(name: str | None) -> None:
    """Makes every kernel run the host implementation ``name`` (``None``: each kernel's best
    available one). A kernel that lacks the chosen one raises ``LookupError`` when called."""
    _choice["host"] = _validate(name, HOST_IMPLEMENTATIONS, "the host kernel implementation")


def get_host_kernel_implementation() -> str | None:
    """The host implementation chosen for every kernel, or ``None``."""
    return _choice["host"]


@contextlib.contextmanager
def use_host_kernel_implementation(name: str | None) -> Iterator[str | None]:
    """Chooses the host implementation for the duration of a block."""
    previous = _choice["host"]
    set_host_kernel_implementation(name)
    try:
        yield name
    finally:
        _choice["host"] = previous


def set_device_kernel_implementation(name: str | None) -> None:
    """``"cuda"`` requires the CUDA version of every kernel on the device (no host fallback);
    ``"metal"`` runs the Metal version of every kernel that has one when it is called on the
    host side (the others run their host version); ``None`` restores each kernel's
    ``missing_cuda`` behaviour."""
    _choice["device"] = _validate(name, DEVICE_IMPLEMENTATIONS, "the device kernel implementation")


def get_device_kernel_implementation() -> str | None:
    """The device implementation chosen for every kernel, or ``None``."""
    return _choice["device"]


@contextlib.contextmanager
def use_device_kernel_implementation(name: str | None) -> Iterator[str | None]:
    """Chooses the device implementation for the duration of a block."""
    previous = _choice["device"]
    set_device_kernel_implementation(name)
    try:
        yield name
    finally:
        _choice["device"] = previous


def _from_environment(variable: str, raw: str, allowed: tuple[str, ...]) -> str | None:
    if not raw:
        return None
    if raw not in allowed:
        raise InvalidArgumentError(f"{variable} must be one of {allowed} (or empty), got {raw!r}")
    return raw


_choice["host"] = _from_environment(
    "CUNUMPY_HOST_KERNEL_IMPLEMENTATION",
    _config.host_kernel_implementation(),
    HOST_IMPLEMENTATIONS,
)
_choice["device"] = _from_environment(
    "CUNUMPY_DEVICE_KERNEL_IMPLEMENTATION",
    _config.device_kernel_implementation(),
    DEVICE_IMPLEMENTATIONS,
)


class HostImplementations:
    """The host implementations of one kernel, each loaded on first use.

    ``HostImplementations(name, loaders)``: ``loaders`` maps implementation names (from
    :data:`HOST_IMPLEMENTATIONS`; ``"python"`` is required) to zero-argument callables that
    return the function. Calling the object runs :meth:`selected`. A loader that fails is
    remembered in :attr:`errors` and is not retried until :meth:`reset`.
    """

    def __init__(self, name: str, loaders: Mapping[str, Callable[[], Callable[..., Any]]]) -> None:
        unknown = sorted(set(loaders) - set(HOST_IMPLEMENTATIONS))
        if unknown:
            raise InvalidArgumentError(
                f"kernel {name!r}: unknown host implementation(s) {unknown}; "
                f"known: {HOST_IMPLEMENTATIONS}"
            )
        if "python" not in loaders:
            raise InvalidArgumentError(f"kernel {name!r}: a 'python' implementation is required")
        self.name = name
        self._loaders = dict(loaders)
        self._loaded: dict[str, Callable[..., Any]] = {}
        self.errors: dict[str, BaseException] = {}
        self._lock = threading.Lock()
        self._warned = False

    @property
    def names(self) -> tuple[str, ...]:
        """The implementations this kernel has, in preference order."""
        return tuple(n for n in HOST_IMPLEMENTATIONS if n in self._loaders)

    @property
    def python(self) -> Callable[..., Any]:
        """The plain Python function (also what ``inspect.signature`` reads)."""
        return self.get("python")

    def get(self, name: str) -> Callable[..., Any]:
        """Implementation ``name``, loading it now if needed; ``LookupError`` if the kernel lacks
        it or its loader failed (the load error is chained)."""
        fn = self._loaded.get(name)
        if fn is not None:
            return fn
        if name not in self._loaders:
            raise KernelImplementationError(
                f"kernel {self.name!r} has no {name!r} implementation (it has {self.names})"
            )
        error = self.errors.get(name)
        if error is None:
            with self._lock:
                if name in self._loaded:
                    return self._loaded[name]
                try:
                    fn = self._loaders[name]()
                except Exception as exc:  # kept, reported by every later lookup
                    self.errors[name] = error = exc
                else:
                    self._loaded[name] = fn
                    return fn
        raise KernelImplementationError(
            f"kernel {self.name!r}: the {name!r} implementation failed to load: "
            f"{type(error).__name__}: {error}"
        ) from error

    def available(self, name: str) -> bool:
        """Whether implementation ``name`` exists and loads."""
        try:
            self.get(name)
        except LookupError:
            return False
        return True

    def selected(self) -> str:
        """The implementation a call runs now: the global choice if one is set, else the first
        of pyccel, numba, numpy that loads, else python (with a warning once). Decided on every
        call, so a global change or :meth:`reset` takes effect at once."""
        chosen = _choice["host"]
        if chosen is not None:
            return chosen
        for name in HOST_IMPLEMENTATIONS[:-1]:
            if name in self._loaded:
                return name
        for name in HOST_IMPLEMENTATIONS[:-1]:
            if name in self._loaders and name not in self.errors and self.available(name):
                return name
        if len(self._loaders) > 1 and not self._warned:
            self._warned = True
            failed = ", ".join(f"{n}: {type(e).__name__}: {e}" for n, e in self.errors.items())
            warnings.warn(
                f"kernel {self.name!r}: no compiled host implementation could be loaded "
                f"({failed}); running the Python version",
                RuntimeWarning,
                stacklevel=3,
            )
        return "python"

    def build(self) -> str:
        """Loads (and compiles) the implementation a call would run; returns its name."""
        name = self.selected()
        self.get(name)
        return name

    def reset(self) -> None:
        """Forgets loaded implementations and load failures (for example after installing
        Numba or fixing a Pyccel build)."""
        with self._lock:
            self._loaded.clear()
            self.errors.clear()
            self._warned = False

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.get(self.selected())(*args, **kwargs)

    def __repr__(self) -> str:
        return f"HostImplementations({self.name!r}, {list(self.names)})"


class CompiledHostKernel:
    """Function ``name`` of ``module`` (a module or its dotted name) compiled by
    ``compiler(module)`` (for example a :class:`PyccelCache`) on the first call, on
    :meth:`build` or on reading :attr:`compiled`, once.

    If compiling fails the error is kept in :attr:`error` and calls run ``fallback``, or else
    the uncompiled Python function with a one-time ``RuntimeWarning``.
    """

    def __init__(
        self,
        module: ModuleType | str,
        name: str,
        compiler: Callable[[ModuleType], Any],
        fallback: Callable[..., Any] | None = None,
    ) -> None:
        if isinstance(module, str):
            module = importlib.import_module(module)
        self._module = module
        self.name = name
        self.__name__ = name
        self.compiler = compiler
        self._fallback = fallback
        self._python: Callable[..., Any] = getattr(module, name)
        self._function: Callable[..., Any] | None = None
        self.error: BaseException | None = None
        self._built = False
        self._lock = threading.Lock()
        self._warned = False

    @property
    def module(self) -> ModuleType:
        """The (uncompiled) module that defines the kernel."""
        return self._module

    @property
    def python(self) -> Callable[..., Any]:
        """The uncompiled Python function (its signature, reference results)."""
        return self._python

    @property
    def fallback(self) -> Callable[..., Any] | None:
        """What runs when compiling fails (``None``: the Python function, with a warning)."""
        return self._fallback

    @property
    def compiled(self) -> bool:
        """Whether the compiled function is available (compiles on first access)."""
        return self.build() is not None

    def build(self) -> Callable[..., Any] | None:
        """Compiles now (once); returns the compiled function or ``None`` if it failed."""
        if not self._built:
            with self._lock:
                if not self._built:
                    try:
                        self._function = getattr(self.compiler(self._module), self.name)
                    except Exception as exc:  # kept; calls fall back
                        self.error = exc
                    self._built = True
        return self._function

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        compiled = self._function if self._built else self.build()
        if compiled is not None:
            return compiled(*args, **kwargs)
        if self._fallback is not None:
            return self._fallback(*args, **kwargs)
        if not self._warned:
            self._warned = True
            warnings.warn(
                f"host kernel {self.name!r} could not be compiled ({self.error}); "
                "running its uncompiled Python version",
                RuntimeWarning,
                stacklevel=2,
            )
        return self._python(*args, **kwargs)

    def __repr__(self) -> str:
        state = "not built" if not self._built else ("compiled" if self._function else "failed")
        return f"CompiledHostKernel({self.name!r}, {state})"
