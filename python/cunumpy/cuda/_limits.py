"""Device queries that code choosing a GPU strategy needs everywhere: the shared-memory budget
of a block and whether CuPy targets HIP. Without CuPy they give CUDA's defaults."""

from __future__ import annotations

from typing import Any

from .. import _backend
from ..exceptions import InvalidArgumentError

#: Shared memory per block every CUDA device gives without opting in (48 KiB).
DEFAULT_SHARED_MEMORY_PER_BLOCK: int = 48 * 1024


def _working_cupy() -> Any:
    if not _backend.cupy_available():
        return None
    import cupy

    return cupy


def max_shared_memory_per_block(device: int | None = None, *, opt_in: bool = False) -> int:
    """Bytes of shared memory a block may use on ``device`` (the current one by default).

    ``opt_in=True`` gives the larger limit a kernel can opt in to (``sharedMemPerBlockOptin``,
    e.g. 227 KiB on an H100/H200); launches above 48 KiB opt in automatically. Without CuPy it
    is :data:`DEFAULT_SHARED_MEMORY_PER_BLOCK`, so strategy choices run everywhere.

    >>> import cunumpy as xp
    >>> xp.cuda.max_shared_memory_per_block() >= 48 * 1024
    True
    """
    if device is not None and (
        not isinstance(device, int) or isinstance(device, bool) or device < 0
    ):
        raise InvalidArgumentError(
            f"max_shared_memory_per_block: device is a non-negative int, got {device!r}"
        )
    cupy = _working_cupy()
    if cupy is None:
        return DEFAULT_SHARED_MEMORY_PER_BLOCK
    dev = int(cupy.cuda.runtime.getDevice()) if device is None else device
    props = cupy.cuda.runtime.getDeviceProperties(dev)
    base = int(props.get("sharedMemPerBlock", DEFAULT_SHARED_MEMORY_PER_BLOCK))
    if opt_in:
        return max(base, int(props.get("sharedMemPerBlockOptin", 0)))
    return base


def is_hip() -> bool:
    """Whether the CuPy in use is a ROCm/HIP build (``False`` for CUDA or without CuPy)."""
    cupy = _working_cupy()
    if cupy is None:
        return False
    return bool(getattr(cupy.cuda.runtime, "is_hip", False))
