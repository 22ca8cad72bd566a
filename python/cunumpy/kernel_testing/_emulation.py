"""Testing CUDA kernels without a GPU: the CPU emulator and the emulated device backend
(re-exported by ``cunumpy.kernel_testing``).

``emulate_cuda_kernel(kernel, *args, ...)`` runs a :class:`~cunumpy.kernels.CudaKernel` on
NumPy arrays on the CPU. The kernel source is compiled as host C++ with a prelude that provides
the CUDA built-ins (threads as fibers at barriers and warp intrinsics, shuffles, votes,
atomics, shared memory, the math library); arguments go through the same checks and the same
packed argument buffer as a GPU launch. Out-of-bounds accesses through pointer arguments raise
:class:`~cunumpy.exceptions.EmulatedOutOfBoundsError` naming the kernel, the parameter and the
index; ``shuffle_seed`` runs the threads of a block in a seeded random order to expose races.
``emulate_metal_kernel(kernel, *args, out=...)`` does the same for a
:class:`~cunumpy.kernels.MetalKernel` on the emulated Metal device.

``install_fake_cupy()`` (or ``CUNUMPY_FAKE_CUPY=1`` before ``import cunumpy``) installs a CuPy
stand-in backed by host memory; on it every ``CudaKernel`` launch runs in the emulator.

This module does not import pytest.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import numpy as np

from .. import _backend, _core
from .. import _fake_cupy as _fake
from .._emulate import compile_for_emulation, emulate_cuda_kernel
from ..exceptions import InvalidArgumentTypeError
from ..kernels._metal_kernel import emulate_metal_kernel

__all__ = [
    "shuffled_threads",
    "compile_for_emulation",
    "emulate_cuda_kernel",
    "emulate_metal_kernel",
    "emulation_cache_dir",
    "emulation_compiler",
    "fake_cupy_active",
    "host_buffer",
    "install_fake_cupy",
    "uninstall_fake_cupy",
]


def emulation_compiler() -> str | None:
    """The host C++ compiler the emulator uses (``$CXX``, else ``c++``/``g++``/``clang++``),
    or ``None`` when there is none."""
    return _core._emulation_compiler()


def emulation_cache_dir() -> str | None:
    """The emulator's disk cache: ``$CUNUMPY_EMULATION_CACHE`` (``0/off/false/no`` or empty
    disable it: ``None``), else ``$XDG_CACHE_HOME/cunumpy/emulation``, else
    ``~/.cache/cunumpy/emulation``."""
    found = _core._emulation_cache_dir()
    return None if found is None else str(found)


def install_fake_cupy() -> ModuleType:
    """Installs the fake CuPy (the emulated device backend) and returns it; afterwards
    ``xp.set_backend("cupy")`` selects it and ``CudaKernel`` launches run in the emulator.
    Raises ``RuntimeError`` when the real CuPy is already imported."""
    return _backend.install_fake_cupy()


def uninstall_fake_cupy() -> None:
    """Removes the fake CuPy (switching the backend back to NumPy if needed)."""
    _backend.uninstall_fake_cupy()


def fake_cupy_active() -> bool:
    """Whether the fake CuPy is installed."""
    return _fake.is_active()


def host_buffer(array: Any) -> np.ndarray:
    """The NumPy array behind a fake-CuPy array (the same memory, not a copy)."""
    if not isinstance(array, _fake.ndarray):
        raise InvalidArgumentTypeError(
            f"host_buffer() takes a fake-CuPy array, got {type(array).__name__}"
        )
    return array._a


@contextlib.contextmanager
def shuffled_threads(seed: int | None, *, detect_races: bool = True) -> Iterator[None]:
    """Within the block, ``CudaKernel`` launches on the emulated device (the fake CuPy) run the
    threads of each block in an order drawn from ``seed`` (``None``: the serial order),
    switching threads at barriers, warp intrinsics and every access through a pointer
    argument, so that a result that depends on the order of threads changes with the seed.

    ``detect_races`` (on by default, as outside the block) reports two threads writing one
    element of an array argument with nothing ordering them
    (:class:`~cunumpy.exceptions.EmulatedRaceError`). The setting is process-wide and restored
    on exit. On a GPU it does nothing: the hardware picks the order."""
    valid = isinstance(seed, int) and not isinstance(seed, bool) and seed >= 0
    if seed is not None and not valid:
        raise TypeError(f"shuffled_threads: seed must be a non-negative int or None, got {seed!r}")
    previous = _core._set_emulated_launch_order(seed, detect_races)
    try:
        yield
    finally:
        _core._set_emulated_launch_order(*previous)
