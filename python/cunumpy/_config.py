"""Every setting the Python package reads from the environment, read here and nowhere else.

``crates/cunumpy-core/src/config.rs`` is the Rust twin, and ``docs/environment-variables.md``
lists every variable. One spelling of true and false for every switch: ``1``, ``true``,
``yes``, ``on`` are true and ``0``, ``false``, ``no``, ``off`` are false, in any case, around
any whitespace; an unset or empty variable means "the default".
"""

from __future__ import annotations

import os

__all__ = [
    "FALSE",
    "TRUE",
    "backend",
    "cuda_debug",
    "cuda_visible_devices",
    "device_kernel_implementation",
    "fake_cupy",
    "fake_metal",
    "flag",
    "host_kernel_implementation",
    "pyccel_kernel_cache",
    "pyccel_openmp",
    "raw",
    "require_cuda",
    "text",
]

TRUE = frozenset({"1", "true", "yes", "on"})
FALSE = frozenset({"0", "false", "no", "off"})


def raw(name: str) -> str | None:
    """``name``'s value as given (``None`` when unset): for variables of other tools (MPI
    launchers, CuPy) read as those tools read them."""
    return os.environ.get(name)


def text(name: str) -> str:
    """``name``'s value, stripped ("" when unset)."""
    return os.environ.get(name, "").strip()


def flag(name: str, default: bool = False) -> bool:
    """A switch in the one spelling; ``default`` when unset, empty or neither true nor false."""
    value = text(name).lower()
    if value in TRUE:
        return True
    if value in FALSE:
        return False
    return default


def fake_cupy() -> bool:
    """``CUNUMPY_FAKE_CUPY``: install the fake CuPy (the emulated device) at import."""
    return flag("CUNUMPY_FAKE_CUPY")


def fake_metal() -> bool:
    """``CUNUMPY_FAKE_METAL``: ``MetalKernel`` calls run on the emulated Metal device (the CPU
    emulator) and ``metal_available()`` is true; read at each call."""
    return flag("CUNUMPY_FAKE_METAL")


def backend() -> str:
    """``CUNUMPY_BACKEND`` as given ("" when unset: numpy)."""
    return os.environ.get("CUNUMPY_BACKEND", "")


def cuda_debug() -> bool:
    """``CUNUMPY_CUDA_DEBUG``: debug mode for CUDA kernels from the start."""
    return flag("CUNUMPY_CUDA_DEBUG")


def require_cuda() -> bool:
    """``CUNUMPY_REQUIRE_CUDA``: a test that needs a GPU fails instead of skipping."""
    return flag("CUNUMPY_REQUIRE_CUDA")


def host_kernel_implementation() -> str:
    """``CUNUMPY_HOST_KERNEL_IMPLEMENTATION``, lower case ("" when unset)."""
    return text("CUNUMPY_HOST_KERNEL_IMPLEMENTATION").lower()


def device_kernel_implementation() -> str:
    """``CUNUMPY_DEVICE_KERNEL_IMPLEMENTATION``, lower case ("" when unset)."""
    return text("CUNUMPY_DEVICE_KERNEL_IMPLEMENTATION").lower()


def pyccel_kernel_cache(prefix: str) -> str:
    """``<PREFIX>_KERNEL_CACHE``: a Pyccel cache's folder ("" when unset)."""
    return text(f"{prefix}_KERNEL_CACHE")


def pyccel_openmp(prefix: str) -> bool:
    """``<PREFIX>_OPENMP``: false turns a Pyccel cache's OpenMP builds off."""
    return flag(f"{prefix}_OPENMP", default=True)


def cuda_visible_devices() -> str | None:
    """``CUDA_VISIBLE_DEVICES`` as given (reported by ``backend_info``)."""
    return os.environ.get("CUDA_VISIBLE_DEVICES")
