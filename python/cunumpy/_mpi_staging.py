"""Host staging storage for device buffers that go through a non-CUDA-aware MPI.

A small per-process pool of host byte buffers, pinned when CuPy can pin (so that the device
copies run at full speed), handed out for the duration of one ``mpi_buffer`` block and then
kept for the next one: a time-step loop that exchanges the same buffers allocates once.
Kept separate from ``xp.mpi`` so that it can later be unified with the general staging API.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["HostBuffer", "StagingPool", "POOL"]

# Free buffers kept per device; more in flight at once are allocated and then dropped.
MAX_FREE_PER_DEVICE = 16


def _allocate(nbytes: int) -> tuple[np.ndarray, bool]:
    """``nbytes`` of host memory as a uint8 array, and whether it is pinned."""
    try:
        import cupy

        memory = cupy.cuda.alloc_pinned_memory(max(nbytes, 1))
        return np.frombuffer(memory, np.uint8, nbytes), True
    except Exception:  # noqa: BLE001 - no CuPy, the fake CuPy, no pinnable memory: pageable
        return np.empty(nbytes, np.uint8), False


def _capacity(nbytes: int) -> int:
    # Powers of two (from 4 KiB) so that buffers of slowly changing sizes are reused.
    return max(4096, 1 << max(nbytes - 1, 0).bit_length())


@dataclass(eq=False)
class HostBuffer:
    """One host buffer of the pool: ``raw`` bytes, ``pinned`` or pageable."""

    raw: np.ndarray
    pinned: bool
    device: int

    def view(self, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        """The first bytes as a C-contiguous array of ``shape`` and ``dtype``."""
        count = int(np.prod(shape, dtype=np.int64))
        return self.raw[: count * dtype.itemsize].view(dtype).reshape(shape)


class StagingPool:
    """Reused host buffers, by device (see the module doc). Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._free: dict[int, list[HostBuffer]] = {}
        self.allocations = 0
        self.reuses = 0
        self.allocated_bytes = 0
        self.copy_seconds = 0.0

    def acquire(self, nbytes: int, device: int) -> HostBuffer:
        """A buffer of at least ``nbytes`` for ``device``, reused when one is free."""
        with self._lock:
            free = self._free.setdefault(device, [])
            fitting = [b for b in free if b.raw.nbytes >= nbytes]
            if fitting:
                best = min(fitting, key=lambda b: b.raw.nbytes)
                free.remove(best)
                self.reuses += 1
                return best
            capacity = _capacity(nbytes)
            self.allocations += 1
            self.allocated_bytes += capacity
        raw, pinned = _allocate(capacity)
        return HostBuffer(raw, pinned, device)

    def release(self, buffer: HostBuffer) -> None:
        """Gives ``buffer`` back for reuse."""
        with self._lock:
            free = self._free.setdefault(buffer.device, [])
            if len(free) < MAX_FREE_PER_DEVICE:
                free.append(buffer)

    def add_copy_time(self, seconds: float) -> None:
        """Adds the wall time of staging copies (for the per-step share in benchmarks)."""
        with self._lock:
            self.copy_seconds += seconds

    def clear(self) -> None:
        """Drops the free buffers (their memory goes back when nothing uses them)."""
        with self._lock:
            self._free.clear()

    def info(self) -> dict[str, Any]:
        """Counts for tests and reports: allocations, reuses, bytes allocated, free buffers,
        and the seconds spent in staging copies."""
        with self._lock:
            return {
                "allocations": self.allocations,
                "reuses": self.reuses,
                "allocated_bytes": self.allocated_bytes,
                "free_buffers": sum(len(v) for v in self._free.values()),
                "copy_seconds": self.copy_seconds,
            }


#: The process's pool, used by ``xp.mpi.mpi_buffer`` when no ``MPIStaging`` is given.
POOL = StagingPool()
