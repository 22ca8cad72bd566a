"""Device-to-host copies that run in the background: ``HostStaging`` (reused pinned buffers for
arrays copied every step) and ``to_host_async`` (a one-off small copy, e.g. a residual norm).

On CuPy the copy is queued on a side stream after the producer's queued work, into page-locked
memory, and the caller learns completion through an event; each copy is counted as a
``to_host`` with ``blocking=False``, and a wait that actually blocks as a ``sync``. On NumPy
host arrays are copied at once. The emulated device runs the same code as a GPU on its
synchronous streams, so the counts are the same.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._conversions import is_cupy_array
from ._ledger import record, recorded_by_caller
from .cuda._streams import HostEvent, HostStream
from .exceptions import InvalidArgumentError, StagingError, StagingTypeError

__all__ = ["HostCopy", "HostStaging", "StagedCopy", "to_host_async"]


def _cupy() -> Any:
    import cupy

    return cupy


def _producer(where: str, cupy: Any, stream: Any, event: Any) -> Any:
    """The stream the copy is ordered on: `stream`, or the current stream after `event`."""
    if stream is not None and event is not None:
        raise InvalidArgumentError(f"{where}: pass at most one of stream and event, got both")
    for name, value in (("stream", stream), ("event", event)):
        if isinstance(value, HostStream | HostEvent):
            raise StagingTypeError(
                f"{where}: {name} is a {type(value).__name__} but the array is on the device; "
                "use a CUDA stream/event (xp.cuda.create_stream/create_event on CuPy)"
            )
    current = cupy.cuda.get_current_stream()
    if event is not None:
        current.wait_event(event)
    return stream if stream is not None else current


class _Slot:
    """One pinned host buffer, its device snapshot and the event of its last copy."""

    def __init__(self, shape: tuple[int, ...], dtype: np.dtype) -> None:
        self.shape, self.dtype = shape, dtype
        self.host = np.empty(shape, dtype)  # replaced by pinned memory on the first GPU copy
        self.pinned = False
        self.device: Any = None
        self.event: Any = None
        self.generation = 0


class StagedCopy:
    """A background copy started by :meth:`HostStaging.copy` (not created directly).

    Its host buffer is valid until the staging reuses it, ``buffers`` copies later.
    """

    def __init__(self, slot: _Slot, generation: int) -> None:
        self._slot = slot
        self._generation = generation

    def _check(self, what: str) -> _Slot:
        if self._slot.generation != self._generation:
            raise StagingError(
                f"StagedCopy.{what}: the staging buffer was reused by a later copy; keep "
                "result().copy() to hold a result longer than `buffers` copies"
            )
        return self._slot

    def ready(self) -> bool:
        """Whether the copy has finished (never waits).

        Raises
        ------
        StagingError
            If the buffer was already reused (a ``RuntimeError``).
        """
        slot = self._check("ready")
        return slot.event is None or bool(slot.event.done)

    def result(self) -> np.ndarray:
        """Wait for the copy (counted as a ``sync`` if it has not finished) and return the host
        buffer itself, valid until it is reused; keep ``result().copy()`` to hold it longer.

        Raises
        ------
        StagingError
            If the buffer was already reused (a ``RuntimeError``).
        """
        slot = self._check("result")
        if slot.event is not None and not slot.event.done:
            slot.event.synchronize()
            record("sync", "StagedCopy.result(): waited for the copy")
        return slot.host

    def __repr__(self) -> str:
        state = "reused" if self._slot.generation != self._generation else "current"
        return f"StagedCopy(shape={self._slot.shape}, dtype={self._slot.dtype}, {state})"


class HostStaging:
    """Page-locked host buffers that device arrays are copied to in the background.

    :meth:`copy` snapshots the array on the device (so later steps may overwrite it), then
    copies the snapshot to the next of `buffers` pinned host buffers on the staging's own
    stream, and returns at once. It waits only when that buffer's previous copy is still
    running, so the program runs at most `buffers` copies ahead. Host arrays are copied at once
    into the same buffers. Device copies are counted as ``to_host`` with ``blocking=False``.

    Parameters
    ----------
    shape : int or tuple of int
        Shape of the arrays to copy.
    dtype : dtype-like
        Their dtype (not object).
    buffers : int, optional
        How many copies may be in flight (2 by default: one copy runs while the previous
        result is written out).

    Raises
    ------
    ValueError
        If `buffers` < 1 or `shape` has a negative extent.
    StagingTypeError
        For an object dtype (a ``TypeError``).

    Examples
    --------
    >>> staging = xp.memory.HostStaging((2, 3), np.float64)
    >>> copy = staging.copy(np.ones((2, 3)))  # returns at once on a GPU
    >>> copy.ready()
    True
    >>> copy.result()
    array([[1., 1., 1.],
           [1., 1., 1.]])
    """

    def __init__(self, shape: tuple[int, ...] | int, dtype: Any, buffers: int = 2) -> None:
        shape = (int(shape),) if isinstance(shape, int | np.integer) else tuple(map(int, shape))
        if any(extent < 0 for extent in shape):
            raise InvalidArgumentError(f"HostStaging: shape must not be negative, got {shape}")
        if isinstance(buffers, bool) or not isinstance(buffers, int) or buffers < 1:
            raise InvalidArgumentError(f"HostStaging: buffers must be an int >= 1, got {buffers!r}")
        dt = np.dtype(dtype)
        if dt.hasobject:
            raise StagingTypeError(
                f"HostStaging: dtype {dt} holds Python objects; it cannot be staged"
            )
        self._shape, self._dtype = shape, dt
        self._slots = [_Slot(shape, dt) for _ in range(buffers)]
        self._next = 0
        self._stream: Any = None
        self._device_id: int | None = None

    @property
    def shape(self) -> tuple[int, ...]:
        """The fixed shape of every copy."""
        return self._shape

    @property
    def dtype(self) -> np.dtype:
        """The fixed dtype of every copy."""
        return self._dtype

    @property
    def buffers(self) -> int:
        """How many buffers are used in turn."""
        return len(self._slots)

    def copy(self, array: Any, *, stream: Any = None, event: Any = None) -> StagedCopy:
        """Start copying `array` to the host and return at once.

        Parameters
        ----------
        array : array
            A NumPy or CuPy array of the staging's shape and dtype. Later work on the snapshot's
            stream is ordered after the snapshot; another stream must wait for it before it
            overwrites the array.
        stream : cupy.cuda.Stream, optional
            The producer stream to snapshot on; the current stream by default.
        event : cupy.cuda.Event, optional
            A producer event the current stream waits for before the snapshot. Pass at most
            one of `stream` and `event`; host copies ignore both.

        Returns
        -------
        StagedCopy
            ``ready()`` tells whether the copy has finished, ``result()`` waits for it.

        Raises
        ------
        ValueError
            For another shape or dtype, both `stream` and `event`, or a device other than the
            one the staging is bound to (its first).
        StagingTypeError
            For a host stream or event with a device array.
        """
        if tuple(array.shape) != self._shape or np.dtype(array.dtype) != self._dtype:
            raise InvalidArgumentError(
                f"HostStaging.copy: expected shape {self._shape} and dtype {self._dtype}, got "
                f"{tuple(array.shape)} {array.dtype}"
            )
        slot = self._slots[self._next]
        self._next = (self._next + 1) % len(self._slots)
        if slot.event is not None and not slot.event.done:
            slot.event.synchronize()  # that buffer's previous copy is still running
            record("sync", "HostStaging.copy: waited for a buffer's previous copy")
        if not is_cupy_array(array):
            np.copyto(slot.host, np.asarray(array))
            slot.event = None
            slot.generation += 1
            return StagedCopy(slot, slot.generation)
        cupy = _cupy()
        device_id = int(array.device.id)
        if self._device_id is None:
            self._device_id = device_id
            self._stream = cupy.cuda.Stream(non_blocking=True)
        if device_id != self._device_id or cupy.cuda.Device().id != device_id:
            raise InvalidArgumentError(
                f"HostStaging.copy: the staging is bound to device {self._device_id}; the array "
                f"is on device {device_id} and device {cupy.cuda.Device().id} is current"
            )
        producer = _producer("HostStaging.copy", cupy, stream, event)
        if slot.device is None:
            slot.device = cupy.empty(self._shape, self._dtype)
        if not slot.pinned:
            import cupyx

            slot.host = cupyx.empty_pinned(self._shape, self._dtype)
            slot.pinned = True
        with producer:
            slot.device[...] = array  # the snapshot, ordered after the producer's work
            snapshot_done = producer.record()
        self._stream.wait_event(snapshot_done)
        with recorded_by_caller():
            slot.device.get(stream=self._stream, out=slot.host, blocking=False)
        slot.event = self._stream.record()
        slot.generation += 1
        record(
            "to_host",
            f"HostStaging.copy: {self._dtype} array of shape {self._shape}",
            int(slot.host.nbytes),
            blocking=False,
        )
        return StagedCopy(slot, slot.generation)

    def synchronize(self) -> None:
        """Wait for every copy in flight (one ``sync`` if any had not finished)."""
        pending = [s.event for s in self._slots if s.event is not None and not s.event.done]
        for e in pending:
            e.synchronize()
        if pending:
            record("sync", "HostStaging.synchronize()")

    def __repr__(self) -> str:
        return f"HostStaging(shape={self._shape}, dtype={self._dtype}, buffers={self.buffers})"


class HostCopy:
    """A device-to-host copy started by :func:`~cunumpy.to_host_async` (not created directly).

    Parameters
    ----------
    host : numpy.ndarray
        The host buffer the copy writes into.
    event : cupy.cuda.Event, optional
        Recorded after the copy; None for a finished (host) copy.
    source : array, optional
        The device array, kept alive until the copy has finished.
    """

    def __init__(self, host: np.ndarray, event: Any = None, source: Any = None) -> None:
        self._host = host
        self._event = event
        self._source = source

    def ready(self) -> bool:
        """Whether the copy has finished (never waits)."""
        return self._event is None or bool(self._event.done)

    def result(self) -> Any:
        """The value on the host, waiting (counted as a ``sync``) only if the copy has not
        finished: a NumPy scalar for a 0-d array, else the (pinned on a GPU) array."""
        if self._event is not None:
            if not self._event.done:
                self._event.synchronize()
                record("sync", "HostCopy.result(): waited for the copy")
            self._event = None
            self._source = None
        return self._host[()] if self._host.ndim == 0 else self._host

    def __repr__(self) -> str:
        return f"HostCopy(shape={self._host.shape}, dtype={self._host.dtype}, ready={self.ready()})"


def to_host_async(array: Any) -> HostCopy:
    """Start copying a device scalar or small array to the host without waiting.

    The copy runs on a side stream into page-locked memory, after the work queued so far on the
    current stream, so the host keeps queueing kernels (e.g. a convergence test read one
    iteration late). The value is the array's once the queued work is done, even if later
    kernels overwrite it (the copy reads a snapshot). A host array is copied at once. Counted as
    a ``to_host`` with ``blocking=False``.

    Parameters
    ----------
    array : array
        A NumPy or CuPy array or scalar.

    Returns
    -------
    HostCopy
        ``ready()`` tells whether the copy has finished (never waits); ``result()`` returns
        the value.

    See Also
    --------
    cunumpy.memory.HostStaging : For large arrays copied repeatedly.

    Examples
    --------
    >>> pending = xp.to_host_async(np.float64(3.5))  # e.g. a residual norm
    >>> pending.ready()
    True
    >>> pending.result()
    np.float64(3.5)
    """
    if not is_cupy_array(array):
        return HostCopy(np.array(array, copy=True))
    cupy = _cupy()
    import cupyx

    current = cupy.cuda.get_current_stream()
    snapshot = array.copy()  # on the current stream: later kernels may overwrite `array`
    ready = current.record()
    side = cupy.cuda.Stream(non_blocking=True)
    side.wait_event(ready)
    host = cupyx.empty_pinned(array.shape, array.dtype)
    with recorded_by_caller():
        snapshot.get(stream=side, out=host, blocking=False)
    done = side.record()
    record(
        "to_host",
        f"to_host_async: {array.dtype} array of shape {tuple(array.shape)}",
        int(array.nbytes),
        blocking=False,
    )
    return HostCopy(host, done, (snapshot, side))
