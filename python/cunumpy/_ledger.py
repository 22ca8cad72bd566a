"""Records events in the Rust ledger, computing the call site only when someone listens."""

from __future__ import annotations

from . import _core
from ._where import call_site

is_recording = _core.is_recording


def record(
    kind: str,
    description: str,
    nbytes: int | None = None,
    *,
    blocking: bool = True,
    implicit: bool = False,
) -> None:
    """Records one event; costs one call into Rust when no counter is open."""
    if _core.is_recording():
        _core.record_event(kind, description, call_site(), nbytes, blocking, implicit)
