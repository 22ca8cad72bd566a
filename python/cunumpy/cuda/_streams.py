"""Streams, events and pinned memory: CuPy's on the GPU (and the emulated device), synchronous
host stand-ins on NumPy so that the same program runs on both.

On NumPy every operation has already finished when it returns, so a :class:`HostStream` has
nothing to order and a :class:`HostEvent` is always complete: the ordering a program asks for
holds trivially, as it does on the emulated device, whose streams are synchronous too.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _backend
from ..exceptions import StagingTypeError

__all__ = [
    "HostEvent",
    "HostStream",
    "create_event",
    "create_stream",
    "pin_memory",
    "record_event",
    "wait_event",
]


class HostEvent:
    """An already-completed event with the completion interface of ``cupy.cuda.Event``.

    Returned by :func:`create_event` on the NumPy backend; host events measure no time.

    Examples
    --------
    >>> xp.cuda.create_event().done  # a HostEvent on NumPy
    True
    """

    @property
    def done(self) -> bool:
        """Always True: host work is finished when it returns."""
        return True

    def record(self, stream: Any = None) -> None:
        """Record on a host stream: nothing to do.

        Raises
        ------
        StagingTypeError
            If `stream` is a CuPy stream rather than a :class:`HostStream`.
        """
        if stream is not None and not isinstance(stream, HostStream):
            raise StagingTypeError(
                f"HostEvent.record: stream must be a HostStream, got {type(stream).__name__}"
            )

    def synchronize(self) -> None:
        """Wait for the event: returns at once."""

    def __repr__(self) -> str:
        return "HostEvent(done=True)"


class HostStream:
    """A synchronous CPU stream with the interface of ``cupy.cuda.Stream``.

    Returned by :func:`create_stream` on the NumPy backend; reusable and nestable as a context
    manager (``with s:``), which does nothing.

    Examples
    --------
    >>> s = xp.cuda.create_stream()  # a HostStream on NumPy
    >>> with s:
    ...     y = xp.ones(3)
    >>> s.record().done
    True
    """

    @property
    def done(self) -> bool:
        """Always True."""
        return True

    def synchronize(self) -> None:
        """Wait for the stream's work: returns at once."""

    def record(self, event: Any = None) -> HostEvent:
        """Record an event on this stream (a new :class:`HostEvent` by default)."""
        if event is None:
            return HostEvent()
        _host_event("HostStream.record", event)
        return event

    def wait_event(self, event: Any) -> None:
        """Order later work after `event`: nothing to do on the host.

        Raises
        ------
        StagingTypeError
            If `event` is not a :class:`HostEvent`.
        """
        _host_event("HostStream.wait_event", event)

    def __enter__(self) -> HostStream:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None

    def __repr__(self) -> str:
        return "HostStream()"


def _host_event(where: str, event: Any) -> None:
    if not isinstance(event, HostEvent):
        raise StagingTypeError(f"{where}: event must be a HostEvent, got {type(event).__name__}")


def _cupy() -> Any:
    if _backend.get_backend() != "cupy":
        return None
    import cupy

    return cupy


def create_stream(*, non_blocking: bool = True) -> Any:
    """Allocate a reusable stream: ``cupy.cuda.Stream`` on CuPy, a :class:`HostStream` on NumPy.

    A CUDA stream belongs to the device current when it is created; keep that device current
    while using it.

    Parameters
    ----------
    non_blocking : bool, optional
        A stream that does not synchronize with the legacy default stream (True by default).

    Returns
    -------
    cupy.cuda.Stream or HostStream
        The stream, usable with :func:`cunumpy.cuda.stream` and as a context manager.

    Examples
    --------
    >>> s = xp.cuda.create_stream()
    >>> with xp.cuda.stream(s):
    ...     y = xp.ones(3) * 2
    >>> s.synchronize()
    """
    cupy = _cupy()
    if cupy is None:
        return HostStream()
    return cupy.cuda.Stream(non_blocking=bool(non_blocking))


def create_event(*, timing: bool = False) -> Any:
    """Allocate a reusable completion event: ``cupy.cuda.Event`` on CuPy, a :class:`HostEvent`
    on NumPy.

    Parameters
    ----------
    timing : bool, optional
        Enable CUDA timing (for ``cupy.cuda.get_elapsed_time``); False by default, which
        makes recording and waiting cheaper.

    Returns
    -------
    cupy.cuda.Event or HostEvent
        The event.

    Examples
    --------
    >>> xp.cuda.create_event().done
    True
    """
    cupy = _cupy()
    if cupy is None:
        return HostEvent()
    return cupy.cuda.Event(block=False, disable_timing=not timing)


def record_event(event: Any = None, *, stream: Any = None) -> Any:
    """Record a completion event on `stream` (the current stream by default).

    Recording an event again moves its completion point: enqueue every wait on one recording
    before reusing the event.

    Parameters
    ----------
    event : event, optional
        The event to record; a new one from :func:`create_event` by default.
    stream : stream, optional
        The producer stream; the current stream by default.

    Returns
    -------
    event
        The recorded event.

    Raises
    ------
    StagingTypeError
        If host and CUDA streams and events are mixed.

    Examples
    --------
    >>> producer, consumer = xp.cuda.create_stream(), xp.cuda.create_stream()
    >>> event = xp.cuda.record_event(stream=producer)
    >>> xp.cuda.wait_event(event, stream=consumer)
    """
    cupy = _cupy()
    if cupy is None:
        host_stream = HostStream() if stream is None else stream
        if not isinstance(host_stream, HostStream):
            raise StagingTypeError(
                "record_event: on the NumPy backend the stream must be a HostStream, got "
                f"{type(stream).__name__}"
            )
        return host_stream.record(event)
    _not_host("record_event", event=event, stream=stream)
    if event is None:
        event = create_event()
    event.record(stream if stream is not None else cupy.cuda.get_current_stream())
    return event


def wait_event(event: Any, *, stream: Any = None) -> None:
    """Order future work on `stream` (the current stream by default) after `event`, without
    blocking the CPU.

    Parameters
    ----------
    event : event
        An event recorded with :func:`record_event`.
    stream : stream, optional
        The consumer stream; the current stream by default.

    Raises
    ------
    StagingTypeError
        If host and CUDA streams and events are mixed.

    Examples
    --------
    >>> event = xp.cuda.record_event(stream=xp.cuda.create_stream())
    >>> xp.cuda.wait_event(event)
    """
    cupy = _cupy()
    if cupy is None:
        if stream is not None and not isinstance(stream, HostStream):
            raise StagingTypeError(
                "wait_event: on the NumPy backend the stream must be a HostStream, got "
                f"{type(stream).__name__}"
            )
        (HostStream() if stream is None else stream).wait_event(event)
        return
    _not_host("wait_event", event=event, stream=stream)
    (stream if stream is not None else cupy.cuda.get_current_stream()).wait_event(event)


def _not_host(where: str, **objects: Any) -> None:
    for name, value in objects.items():
        if isinstance(value, HostStream | HostEvent):
            raise StagingTypeError(
                f"{where}: {name} is a {type(value).__name__} (made on the NumPy backend) but "
                "the active backend is CuPy; create it again with create_stream/create_event"
            )


def pin_memory(array: Any) -> np.ndarray:
    """Copy a host array into pinned (page-locked) host memory, which the GPU copies to and
    from faster than pageable memory and can copy asynchronously.

    Parameters
    ----------
    array : array_like
        A host array; use :func:`~cunumpy.to_numpy` first if it may be on the device.

    Returns
    -------
    numpy.ndarray
        A copy of `array` backed by pinned memory (plain host memory on the emulated device).

    Raises
    ------
    CupyUnavailableError
        Without a working CuPy (an ``ImportError``).

    Examples
    --------
    >>> pinned = xp.cuda.pin_memory(np.zeros(1000))  # doctest: +SKIP
    """
    from .._conversions import _require_cupy, is_cupy_array

    _require_cupy()
    import cupyx

    if is_cupy_array(array):
        raise StagingTypeError(
            "pin_memory: array is on the device; copy it with xp.to_numpy() first (counted)"
        )
    source = np.asarray(array)
    pinned = cupyx.empty_pinned(source.shape, dtype=source.dtype)
    np.copyto(pinned, source)
    return pinned
