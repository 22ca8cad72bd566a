"""Records events in the Rust ledger, computing the call site only when someone listens."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

from . import _core
from ._capture import refuse_event
from ._where import call_site

is_recording = _core.is_recording

_local = threading.local()


def record(
    kind: str,
    description: str,
    nbytes: int | None = None,
    *,
    blocking: bool = True,
    implicit: bool = False,
) -> None:
    """Records one event; costs one call into Rust when no counter is open. Inside a graph
    capture an event of a kind a graph cannot hold raises instead (``_capture``)."""
    refuse_event(kind, description)
    if _core.is_recording():
        _core.record_event(kind, description, call_site(), nbytes, blocking, implicit)


@contextlib.contextmanager
def recorded_by_caller() -> Iterator[None]:
    """Marks a block whose copies the caller records itself (once, with its own label), so the
    emulated device does not record them a second time. Also usable as a decorator."""
    _local.depth = getattr(_local, "depth", 0) + 1
    try:
        yield
    finally:
        _local.depth -= 1


def record_device_copy(
    kind: str, description: str, nbytes: int, *, implicit: bool = False, blocking: bool = True
) -> None:
    """Records a copy made by the emulated device itself (``.get()``, ``cupy.asarray`` of host
    data, ...), unless a :func:`recorded_by_caller` block records it already."""
    if _core.is_recording() and not getattr(_local, "depth", 0):
        _core.record_event(kind, description, call_site(), nbytes, blocking, implicit)
