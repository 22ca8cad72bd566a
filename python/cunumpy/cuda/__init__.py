"""Device helpers (``xp.cuda``): neutral on the NumPy backend, CuPy's runtime on the GPU.

Importing cunumpy makes ``xp.cuda`` this module, not CuPy's ``cupy.cuda``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from .. import _backend
from ..exceptions import InvalidArgumentError
from ._debug import cuda_debug, get_cuda_debug, set_cuda_debug
from ._graph import CudaGraph, graph
from ._limits import DEFAULT_SHARED_MEMORY_PER_BLOCK, is_hip, max_shared_memory_per_block
from ._ranks import bind_local_device, set_device_for_rank
from ._source import (
    DEBUG_OPTIONS,
    CudaParameter,
    ctype_of,
    cuda_include_dir,
    cuda_kernel_names,
    include_hash,
    parse_cuda_signature,
    resolve_includes,
)
from ._streams import (
    HostEvent,
    HostStream,
    create_event,
    create_stream,
    pin_memory,
    record_event,
    wait_event,
)

__all__ = [
    "DEBUG_OPTIONS",
    "CudaParameter",
    "ctype_of",
    "cuda_debug",
    "cuda_include_dir",
    "cuda_kernel_names",
    "get_cuda_debug",
    "include_hash",
    "parse_cuda_signature",
    "resolve_includes",
    "set_cuda_debug",
    "device_count",
    "set_device",
    "memory_info",
    "free_memory",
    "stream",
    "HostEvent",
    "HostStream",
    "create_event",
    "create_stream",
    "pin_memory",
    "record_event",
    "wait_event",
    "CudaGraph",
    "graph",
    "DEFAULT_SHARED_MEMORY_PER_BLOCK",
    "is_hip",
    "max_shared_memory_per_block",
    "bind_local_device",
    "set_device_for_rank",
]


def _cupy() -> Any:
    if _backend.get_backend() != "cupy":
        return None
    import cupy

    return cupy


def device_count() -> int:
    """Number of visible CUDA devices (0 when CuPy cannot work)."""
    if not _backend.cupy_available():
        return 0
    import cupy

    return int(cupy.cuda.runtime.getDeviceCount())


def set_device(device_id: int) -> None:
    """Makes ``device_id`` current for this thread. On NumPy only device 0 exists (a no-op)."""
    device = device_id
    if not isinstance(device, int) or isinstance(device, bool) or device < 0:
        raise InvalidArgumentError(f"set_device: a device id is a non-negative int, got {device!r}")
    cupy = _cupy()
    if cupy is None:
        if device != 0:
            raise InvalidArgumentError(f"set_device({device}): the NumPy backend has only device 0")
        return
    count = device_count()
    if device >= count:
        raise InvalidArgumentError(
            f"set_device({device}): there are {count} visible CUDA device(s)"
        )
    cupy.cuda.Device(device).use()


def memory_info() -> tuple[int, int] | None:
    """``(free, total)`` bytes of the current device, or ``None`` on NumPy."""
    cupy = _cupy()
    if cupy is None:
        return None
    free, total = cupy.cuda.runtime.memGetInfo()
    return int(free), int(total)


def free_memory() -> None:
    """Returns CuPy's cached blocks to the device (a no-op on NumPy)."""
    cupy = _cupy()
    if cupy is not None:
        cupy.get_default_memory_pool().free_all_blocks()
        cupy.get_default_pinned_memory_pool().free_all_blocks()


@contextlib.contextmanager
def stream(existing: Any = None) -> Iterator[Any]:
    """A CUDA stream made current for the block (a new non-blocking one unless ``existing`` is
    given); yields ``None`` on NumPy, where work is synchronous anyway."""
    cupy = _cupy()
    if cupy is None:
        yield existing  # None, or a HostStream from create_stream: work is synchronous
        return
    if isinstance(existing, HostStream):
        from ..exceptions import StagingTypeError

        raise StagingTypeError(
            "cuda.stream: existing is a HostStream (made on the NumPy backend) but the active "
            "backend is CuPy; create the stream again with create_stream()"
        )
    s = existing if existing is not None else cupy.cuda.Stream(non_blocking=True)
    with s:
        yield s


def __getattr__(name: str) -> Any:
    from .._removed import missing_attribute

    raise missing_attribute("cunumpy.cuda", name)
