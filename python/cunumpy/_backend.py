"""The process-wide array backend: NumPy or CuPy names behind the ``cunumpy`` namespace."""

from __future__ import annotations

import contextlib
import importlib
import threading
import warnings
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

from . import _config, _counted_creation, _device_clip
from .exceptions import BackendError, BackendUnavailableError

#: The backends ``set_backend`` accepts.
BACKENDS = ("numpy", "cupy")
#: The oldest CuPy release the CuPy backend accepts.
MIN_CUPY_VERSION = "14.0.0"

_lock = threading.RLock()
_state: dict[str, Any] = {"backend": "numpy", "module": None}
_namespace: dict[str, Any] = {}
_own_names: frozenset[str] = frozenset()
_exported: set[str] = set()
_listeners: list[Callable[[ModuleType], None]] = []
_cupy_probe: dict[str, Any] = {}
_warned: set[str] = set()


def _normalise(name: object, *, source: str) -> str:
    if not isinstance(name, str) or name.strip().lower() not in BACKENDS:
        raise BackendError(f"{source} must be 'numpy' or 'cupy', got {name!r}")
    return name.strip().lower()


# -- CuPy probe ---------------------------------------------------------------------------------
def cupy_version_supported(cupy_version: str) -> bool:
    """Whether a CuPy version string is at least :data:`MIN_CUPY_VERSION` (pre-releases of the
    minimum count as older)."""
    import re

    match = re.match(r"(\d+)\.(\d+)\.(\d+)(.*)", cupy_version)
    if not match:
        return False
    numbers = tuple(int(x) for x in match.groups()[:3])
    minimum = tuple(int(x) for x in MIN_CUPY_VERSION.split("."))
    if numbers != minimum:
        return numbers > minimum
    rest = match.group(4)
    return not re.match(r"\.?(a|b|rc|dev)", rest)


def cupy_available() -> bool:
    """Whether CuPy imports and sees a CUDA device (probed once per process)."""
    if not _cupy_probe:
        with _lock:
            if not _cupy_probe:
                _cupy_probe.update(_probe_cupy())
    return bool(_cupy_probe["ok"])


def cupy_unavailable_reason() -> str | None:
    """Why CuPy cannot be used, or ``None`` when it can."""
    cupy_available()
    return _cupy_probe.get("reason")


def _probe_cupy() -> dict[str, Any]:
    try:
        import cupy
    except Exception as exc:  # ImportError, or a broken CUDA install raising anything
        return {"ok": False, "reason": f"{type(exc).__name__}: {exc}"}
    try:
        ok = bool(cupy.is_available())
    except Exception as exc:
        return {"ok": False, "reason": f"{type(exc).__name__}: {exc}"}
    if not ok:
        return {"ok": False, "reason": "CuPy is installed but sees no CUDA device"}
    version = getattr(cupy, "__version__", "0")
    if not getattr(cupy, "__cunumpy_fake__", False) and not cupy_version_supported(version):
        warnings.warn(
            f"cunumpy is tested with CuPy >= {MIN_CUPY_VERSION}; found {version}",
            RuntimeWarning,
            stacklevel=3,
        )
    return {"ok": True, "reason": None}


def _compat_module(backend: str) -> ModuleType:
    return importlib.import_module(f"array_api_compat.{backend}")


# -- the namespace ------------------------------------------------------------------------------
def install_namespace(namespace: dict[str, Any], own_names: set[str]) -> None:
    """Called once by ``cunumpy/__init__``: the module dict to fill with backend names."""
    global _namespace, _own_names
    _namespace = namespace
    _own_names = frozenset(own_names)


def _public_names(module: ModuleType) -> list[str]:
    names = getattr(module, "__all__", None) or dir(module)
    return [n for n in names if not n.startswith("_")]


def _switch_namespace(module: ModuleType) -> None:
    new_names = {n for n in _public_names(module) if n not in _own_names}
    for stale in _exported - new_names:
        _namespace.pop(stale, None)
    for name in new_names:
        _namespace[name] = getattr(module, name)
    if module.__name__ == "array_api_compat.cupy":  # host data to the device: counted
        for name in _counted_creation.COUNTED:
            if name in new_names:
                _namespace[name] = _counted_creation.counted(getattr(module, name), name)
        if "clip" in new_names:  # scalar bounds: one kernel, no copies to the device
            _namespace["clip"] = _device_clip.device_clip(module.clip)
    _exported.clear()
    _exported.update(new_names)


def _activate(backend: str) -> None:
    module = _compat_module(backend)
    with _lock:
        changed = module is not _state["module"]
        _state["backend"] = backend
        _state["module"] = module
        if changed:
            _switch_namespace(module)
            listeners = list(_listeners)
        else:
            listeners = []
    for listener in listeners:
        listener(module)


def _unavailable_message(request: str, reason: str | None) -> str:
    return (
        f"{request} asks for the CuPy backend, but CuPy cannot work on this machine "
        f"({reason}). Install CuPy for your CUDA version (pip install cupy-cuda12x), set "
        "CUNUMPY_FAKE_CUPY=1 for the emulated device, or ask for 'numpy'; "
        "set_backend('cupy', strict=False) falls back to NumPy with a warning"
    )


def set_backend(backend: str, *, strict: bool = True) -> str:
    """Selects the array backend for the whole process and returns the one now active.

    ``"cupy"`` on a machine where CuPy cannot work raises
    :class:`~cunumpy.exceptions.BackendUnavailableError` (a ``RuntimeError``) saying what is
    missing, and leaves the backend unchanged: an explicit request is never silently turned
    into a NumPy run. ``strict=False`` asks for the fallback instead: it warns once (a
    ``RuntimeWarning`` with the reason) and keeps NumPy. Arrays that already exist never move.
    """
    name = _normalise(backend, source="the array backend")
    if name == "cupy" and not cupy_available():
        reason = cupy_unavailable_reason()
        if strict:
            raise BackendUnavailableError(_unavailable_message(f"set_backend({backend!r})", reason))
        if reason not in _warned:
            _warned.add(str(reason))
            warnings.warn(
                f"the CuPy backend was requested with strict=False but cannot work "
                f"({reason}); using NumPy",
                RuntimeWarning,
                stacklevel=2,
            )
        name = "numpy"
    _activate(name)
    return name


@contextlib.contextmanager
def use_backend(backend: str, *, strict: bool = True) -> Iterator[str]:
    """Selects a backend for the duration of a block and restores the previous one, also when
    the block raises (``strict`` as for :func:`set_backend`)."""
    previous = get_backend()
    active = set_backend(backend, strict=strict)
    try:
        yield active
    finally:
        _activate(previous)


def get_backend() -> str:
    """``"numpy"`` or ``"cupy"``: the backend in effect."""
    return _state["backend"]


def current_module() -> ModuleType:
    """The array_api_compat module of the active backend."""
    module = _state["module"]
    if module is None:
        module = _compat_module(_state["backend"])
    return module


def add_listener(listener: Callable[[ModuleType], None]) -> None:
    """Calls ``listener(module)`` now and after every backend change."""
    with _lock:
        _listeners.append(listener)
    listener(current_module())


def install_fake_cupy() -> ModuleType:
    """Installs the fake CuPy (the emulated device backend) and returns it; a CuPy probe
    made earlier (which found no CuPy) is forgotten, so ``set_backend("cupy")`` selects it.

    Raises ``RuntimeError`` when the real CuPy is already imported.
    """
    from . import _fake_cupy

    module = _fake_cupy.install()
    _cupy_probe.clear()
    return module


def uninstall_fake_cupy() -> None:
    """Removes the fake CuPy, switching the backend back to NumPy first when it is CuPy."""
    from . import _fake_cupy

    if not _fake_cupy.is_active():
        return
    if get_backend() == "cupy":
        set_backend("numpy")
    _fake_cupy.uninstall()
    _cupy_probe.clear()


def initialize_from_environment() -> None:
    """Reads ``CUNUMPY_FAKE_CUPY`` (true installs the fake CuPy and, unless
    ``CUNUMPY_BACKEND`` says otherwise, selects it: the emulated device) and
    ``CUNUMPY_BACKEND`` (``numpy`` or ``cupy``, any case; unset or empty = numpy, or the
    emulated device with ``CUNUMPY_FAKE_CUPY``).

    An unknown name is an error: a typo must not silently run everything on the CPU; so is
    ``cupy`` on a machine where CuPy cannot work
    (:class:`~cunumpy.exceptions.BackendUnavailableError`, saying what is missing).
    """
    fake = _config.fake_cupy()
    if fake:
        install_fake_cupy()  # the emulated device backend, before any CuPy probe
    raw = _config.backend()
    if raw.strip() == "":
        if fake:
            set_backend("cupy")
        else:
            _activate("numpy")
        return
    name = _normalise(raw, source="CUNUMPY_BACKEND")
    if name == "cupy" and not cupy_available():
        raise BackendUnavailableError(
            _unavailable_message(f"CUNUMPY_BACKEND={raw!r}", cupy_unavailable_reason())
        )
    set_backend(name)


def backend_info() -> dict[str, Any]:
    """A JSON-able description of the backend, versions and the CUDA device in use."""
    import numpy

    from . import __version__

    def version_of(dist: str) -> str | None:
        try:
            from importlib.metadata import version

            return version(dist)
        except Exception:
            return None

    available = cupy_available()
    info: dict[str, Any] = {
        "backend": get_backend(),
        "cupy_available": available,
        "cuda_unavailable_reason": cupy_unavailable_reason(),
        "versions": {
            "cunumpy": __version__,
            "numpy": numpy.__version__,
            "array-api-compat": version_of("array-api-compat"),
            "cupy": None,
        },
        "min_cupy_version": MIN_CUPY_VERSION,
        "device": None,
        "cuda_visible_devices": _config.cuda_visible_devices(),
    }
    if available:
        try:
            import cupy

            info["versions"]["cupy"] = cupy.__version__
            info["device"] = _device_description(cupy)
        except Exception as exc:  # a broken driver must not break the report
            info["cuda_inspection_error"] = f"{type(exc).__name__}: {exc}"
    return info


def _device_description(cupy: Any) -> dict[str, Any]:
    runtime = cupy.cuda.runtime
    device_id = cupy.cuda.Device().id
    props = runtime.getDeviceProperties(device_id)
    name = props["name"]
    return {
        "id": device_id,
        "name": name.decode() if isinstance(name, bytes) else str(name),
        "compute_capability": f"{props['major']}.{props['minor']}",
        "multiprocessors": int(props.get("multiProcessorCount", 0)),
        "total_memory": int(props.get("totalGlobalMem", 0)),
        "device_count": runtime.getDeviceCount(),
        "driver_version": runtime.driverGetVersion(),
        "runtime_version": runtime.runtimeGetVersion(),
    }
