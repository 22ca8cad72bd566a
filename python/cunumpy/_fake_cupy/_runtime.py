"""The fake ``cupy.cuda``: one device (id 0), streams and events that are already complete
(work in the fake runs synchronously on the host), and the runtime queries cunumpy uses."""

from __future__ import annotations

import threading
import time
from typing import Any

DEVICE_NAME = "cunumpy fake device"
TOTAL_MEMORY = 16 * 1024**3

_local = threading.local()


class Device:
    """``cupy.cuda.Device(id)``: only device 0 exists."""

    def __init__(self, device: Any = None) -> None:
        if device is None:
            device = getattr(_local, "device", 0)
        device = int(getattr(device, "id", device))
        if device != 0:
            raise ValueError(f"the cunumpy fake CuPy has only device 0, got {device}")
        self.id = device
        self._previous: list[int] = []

    def use(self) -> None:
        _local.device = self.id

    def synchronize(self) -> None:
        """Nothing to wait for: the fake runs everything synchronously."""

    @property
    def compute_capability(self) -> str:
        return "90"

    def __enter__(self) -> Device:
        self._previous.append(getattr(_local, "device", 0))
        self.use()
        return self

    def __exit__(self, *exc: object) -> None:
        _local.device = self._previous.pop()

    def __eq__(self, other: object) -> bool:
        return getattr(other, "id", None) == self.id

    def __hash__(self) -> int:
        return self.id

    def __repr__(self) -> str:
        return f"<CUDA Device {self.id} (cunumpy fake)>"


class Stream:
    """``cupy.cuda.Stream``: a handle (``ptr``) that work in the fake ignores."""

    _next_ptr = 1
    null: Stream

    def __init__(self, null: bool = False, non_blocking: bool = False, ptds: bool = False) -> None:
        if null:
            self.ptr = 0
        else:
            self.ptr = Stream._next_ptr
            Stream._next_ptr += 1
        self.non_blocking = non_blocking
        self._previous: list[Stream] = []

    def synchronize(self) -> None:
        """Nothing to wait for."""

    def done(self) -> bool:
        return True

    def use(self) -> Stream:
        _local.stream = self
        return self

    def record(self, event: Event | None = None) -> Event:
        event = event if event is not None else Event()
        event.record(self)
        return event

    def wait_event(self, event: Event) -> None:
        """Events are complete when recorded."""

    def __enter__(self) -> Stream:
        self._previous.append(get_current_stream())
        self.use()
        return self

    def __exit__(self, *exc: object) -> None:
        self._previous.pop().use()

    def __eq__(self, other: object) -> bool:
        return getattr(other, "ptr", None) == self.ptr

    def __hash__(self) -> int:
        return self.ptr

    def __repr__(self) -> str:
        return f"<Stream {self.ptr} (cunumpy fake)>"


Stream.null = Stream(null=True)
ExternalStream = Stream


def get_current_stream(device: Any = None) -> Stream:
    return getattr(_local, "stream", Stream.null)


class Event:
    """``cupy.cuda.Event``: records the host time, so elapsed times are host times."""

    def __init__(
        self, block: bool = False, disable_timing: bool = False, interprocess: bool = False
    ) -> None:
        self.time: float | None = None
        self.ptr = id(self)

    def record(self, stream: Any = None) -> None:
        self.time = time.perf_counter()

    def synchronize(self) -> None:
        """Complete once recorded."""

    @property
    def done(self) -> bool:
        return True


def get_elapsed_time(start: Event, end: Event) -> float:
    """Milliseconds between two recorded events (host time)."""
    if start.time is None or end.time is None:
        raise RuntimeError("both events must be recorded")
    return (end.time - start.time) * 1e3


# CUDA's names for the error codes the fake can raise.
_ERROR_NAMES = {
    1: ("cudaErrorInvalidValue", "invalid argument"),
    2: ("cudaErrorMemoryAllocation", "out of memory"),
    101: ("cudaErrorInvalidDevice", "invalid device ordinal"),
}


class CUDARuntimeError(RuntimeError):  # noqa: N818 - CuPy's name
    """``cupy.cuda.runtime.CUDARuntimeError``: a CUDA runtime call failed (``status`` is the
    ``cudaError_t`` code)."""

    def __init__(self, status: int) -> None:
        self.status = int(status)
        name, text = _ERROR_NAMES.get(self.status, (f"cudaError {self.status}", "unknown error"))
        super().__init__(f"{name}: {text}")

    def __reduce__(self) -> Any:
        return (type(self), (self.status,))


class CUDADriverError(RuntimeError):  # noqa: N818 - CuPy's name
    """``cupy.cuda.driver.CUDADriverError``: a CUDA driver call failed."""

    def __init__(self, status: int) -> None:
        self.status = int(status)
        super().__init__(f"CUDA_ERROR {self.status}")

    def __reduce__(self) -> Any:
        return (type(self), (self.status,))


def _check_device(device: Any) -> int:
    device = int(getattr(device, "id", device))
    if device != 0:
        raise CUDARuntimeError(101)
    return device


class _Driver:
    """``cupy.cuda.driver``: the queries a program makes of the driver."""

    CUDADriverError = CUDADriverError

    @staticmethod
    def get_build_version() -> int:
        return 0

    @staticmethod
    def driverGetVersion() -> int:  # noqa: N802 - CUDA's names
        return 0

    @staticmethod
    def deviceGetCount() -> int:  # noqa: N802
        return 1

    @staticmethod
    def ctxSynchronize() -> None:  # noqa: N802
        """Nothing to wait for."""


driver = _Driver()


class _Runtime:
    """``cupy.cuda.runtime``."""

    cudaSuccess = 0  # noqa: N815 - CUDA's name
    CUDARuntimeError = CUDARuntimeError
    is_hip = False

    @staticmethod
    def get_build_version() -> int:
        return 0

    @staticmethod
    def getDevice() -> int:  # noqa: N802 - CUDA's names
        return getattr(_local, "device", 0)

    @staticmethod
    def setDevice(device: int) -> None:  # noqa: N802
        Device(_check_device(device)).use()

    @staticmethod
    def getDeviceCount() -> int:  # noqa: N802
        return 1

    @staticmethod
    def memGetInfo() -> tuple[int, int]:  # noqa: N802
        return TOTAL_MEMORY, TOTAL_MEMORY

    @staticmethod
    def deviceSynchronize() -> None:  # noqa: N802
        """Nothing to wait for."""

    @staticmethod
    def driverGetVersion() -> int:  # noqa: N802
        return 0

    @staticmethod
    def runtimeGetVersion() -> int:  # noqa: N802
        return 0

    @staticmethod
    def getDeviceProperties(device: int) -> dict[str, Any]:  # noqa: N802
        _check_device(device)
        return {
            "name": DEVICE_NAME.encode(),
            "major": 9,
            "minor": 0,
            "multiProcessorCount": 1,
            "totalGlobalMem": TOTAL_MEMORY,
            "sharedMemPerBlock": 48 * 1024,
            "sharedMemPerBlockOptin": 227 * 1024,
            "maxThreadsPerBlock": 1024,
            "maxThreadsDim": (1024, 1024, 64),
            "maxGridSize": (2**31 - 1, 65535, 65535),
            "warpSize": 32,
            "clockRate": 0,
        }


runtime = _Runtime()


class _Nvtx:
    """``cupy.cuda.nvtx``: ranges are accepted and dropped."""

    available = True

    @staticmethod
    def RangePush(name: str, color: Any = None) -> None:  # noqa: N802 - NVTX's names
        """Dropped."""

    @staticmethod
    def RangePop() -> None:  # noqa: N802
        """Dropped."""

    @staticmethod
    def Mark(name: str, color: Any = None) -> None:  # noqa: N802
        """Dropped."""


nvtx = _Nvtx()


class MemoryPool:
    """``cupy.get_default_memory_pool()``: host memory is freed by NumPy, so counts are 0."""

    def free_all_blocks(self, stream: Any = None) -> None:
        """Nothing is cached."""

    def used_bytes(self) -> int:
        return 0

    def total_bytes(self) -> int:
        return 0

    def free_bytes(self) -> int:
        return 0

    def n_free_blocks(self) -> int:
        return 0

    def set_limit(self, size: Any = None, fraction: Any = None) -> None:
        """Ignored."""

    def get_limit(self) -> int:
        return 0


class PinnedMemoryPool(MemoryPool):
    """``cupy.get_default_pinned_memory_pool()``."""


_memory_pool = MemoryPool()
_pinned_pool = PinnedMemoryPool()


def alloc_pinned_memory(size: int) -> Any:
    raise NotImplementedError("the cunumpy fake CuPy has no pinned memory")
