"""Device mirrors of buffers that a host library owns.

A host library (a particle code, a field solver) often owns a NumPy array that it keeps
reading, for example a charge-density grid. :class:`DeviceMirror` gives kernels a device copy
of it and writes results back **into the same NumPy object**, so the library sees them:

    mirror = DeviceMirror(owner.rho)
    mirror.zero()                    # device buffer cleared (no copy)
    deposit(x, q, mirror.device)     # kernel scatter-adds with cunumpy/atomic.cuh
    mirror.to_host()                 # one device->host copy, in place into owner.rho

On the NumPy backend ``device`` *is* the host array and nothing is copied. Every copy is
recorded in the transfer ledger (``cunumpy.profiling``).
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from ._backend import get_backend
from ._ledger import record, recorded_by_caller
from ._staging import HostCopy, HostStaging, StagedCopy  # noqa: E402  (staged copies)
from .exceptions import DeviceMirrorError, InvalidArgumentTypeError

__all__ = ["DeviceMirror", "HostCopy", "HostStaging", "StagedCopy"]


def _address(a: np.ndarray) -> int:
    return int(a.__array_interface__["data"][0])


class DeviceMirror:
    """A device buffer mirroring a NumPy array owned by someone else (see the module doc).

    ``host`` must be a NumPy array; its shape, dtype and data address are bound at
    construction (and by :meth:`rebind`). If the host array is reallocated (``resize``,
    a new shape or dtype), every operation raises :class:`~cunumpy.exceptions.DeviceMirrorError`
    until :meth:`rebind` is called. Every method returns ``self`` so calls chain.
    """

    def __init__(self, host: np.ndarray) -> None:
        if not isinstance(host, np.ndarray):
            raise InvalidArgumentTypeError(
                f"DeviceMirror needs a NumPy array as host buffer, got {type(host).__name__}"
            )
        self._device: Any = None
        self._device_id: int | None = None
        self._bind(host)

    def _bind(self, host: np.ndarray) -> None:
        self._host = host
        self._shape = host.shape
        self._dtype = host.dtype
        self._address = _address(host)

    # -- properties ----------------------------------------------------------------------------
    @property
    def host(self) -> np.ndarray:
        """The host array (the very object given)."""
        return self._host

    @property
    def shape(self) -> tuple[int, ...]:
        return self._shape

    @property
    def dtype(self) -> np.dtype:
        return self._dtype

    @property
    def on_device(self) -> bool:
        """Whether the mirror lives in GPU memory (CuPy backend)."""
        return get_backend() == "cupy"

    def _check(self) -> None:
        host = self._host
        if (
            host.shape != self._shape
            or host.dtype != self._dtype
            or _address(host) != self._address
        ):
            raise DeviceMirrorError(
                f"the host array was reallocated (bound to shape {self._shape}, dtype "
                f"{self._dtype} at 0x{self._address:x}; now shape {host.shape}, dtype "
                f"{host.dtype} at 0x{_address(host):x}); call rebind(host)"
            )
        if self._device is not None and self._device_id is not None:
            current = int(sys.modules["cupy"].cuda.runtime.getDevice())
            if current != self._device_id:
                raise DeviceMirrorError(
                    f"the mirror's device buffer is on device {self._device_id}, but device "
                    f"{current} is current"
                )

    def _cupy(self) -> Any:
        import cupy

        return cupy

    def _describe(self) -> str:
        return f"DeviceMirror {self._dtype}{list(self._shape)}"

    # -- the device buffer ---------------------------------------------------------------------
    @property
    def device(self) -> Any:
        """The device buffer: the host array itself on NumPy; on CuPy a device array allocated
        (and filled from the host, one counted copy) at first use."""
        self._check()
        if not self.on_device:
            return self._host
        if self._device is None:
            self.to_device()
        return self._device

    def zero(self) -> DeviceMirror:
        """Fills the device buffer with zeros (on NumPy: the host array). Allocating it for
        this copies nothing from the host."""
        self._check()
        if not self.on_device:
            self._host.fill(0)
            return self
        if self._device is None:
            cp = self._cupy()
            self._device = cp.zeros(self._shape, dtype=self._dtype)
            self._device_id = int(cp.cuda.runtime.getDevice())
        else:
            self._device.fill(0)
        return self

    def to_device(self) -> DeviceMirror:
        """Copies the host array into the device buffer (allocating it the first time); one
        counted ``to_device``. A no-op on NumPy."""
        self._check()
        if not self.on_device:
            return self
        cp = self._cupy()
        if self._device is None:
            self._device = cp.empty(self._shape, dtype=self._dtype)
            self._device_id = int(cp.cuda.runtime.getDevice())
        with recorded_by_caller():
            self._device.set(self._host)
        record("to_device", f"{self._describe()}.to_device()", int(self._host.nbytes))
        return self

    def to_host(self, *, stream: Any = None, event: Any = None) -> DeviceMirror:
        """Copies the device buffer into the host array **in place** (the same NumPy object)
        and waits for the copy; one counted ``to_host``. A no-op on NumPy or before the device
        buffer exists.

        ``stream`` copies on that producer stream (after its queued work) instead of the
        current one; ``event`` makes the current stream wait for a producer's event first.
        Pass at most one (``ValueError``); a ``HostStream``/``HostEvent`` with a device buffer
        raises :class:`~cunumpy.exceptions.StagingTypeError`."""
        self._check()
        if not self.on_device or self._device is None:
            return self
        from ._staging import _producer

        cupy = self._cupy()
        producer = _producer("DeviceMirror.to_host", cupy, stream, event)
        host = self._host
        with producer, recorded_by_caller():
            if host.flags.c_contiguous:
                self._device.get(out=host, stream=producer)
            else:
                host[...] = self._device.get(stream=producer)
            producer.synchronize()
        record("to_host", f"{self._describe()}.to_host()", int(host.nbytes))
        return self

    def rebind(self, host: np.ndarray | None = None) -> DeviceMirror:
        """Binds the mirror to ``host`` (default: the current host object, after its
        reallocation). The device buffer is kept, not refreshed, when shape and dtype are
        unchanged, and dropped otherwise."""
        host = self._host if host is None else host
        if not isinstance(host, np.ndarray):
            raise InvalidArgumentTypeError(
                f"DeviceMirror needs a NumPy array as host buffer, got {type(host).__name__}"
            )
        if host.shape != self._shape or host.dtype != self._dtype:
            self._device = None
            self._device_id = None
        self._bind(host)
        return self

    def __repr__(self) -> str:
        where = (
            "device" if self._device is not None else ("host" if not self.on_device else "none yet")
        )
        return f"DeviceMirror(shape={self._shape}, dtype={self._dtype}, buffer={where})"
