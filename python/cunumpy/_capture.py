"""What a graph capture refuses (``cunumpy.cuda.graph``): inside a captured step, host work,
copies through host memory and host synchronizations are refused at the call, before they
run, naming the call and the user's line (a GPU would otherwise fail later in the driver, or
the emulated device would run them once at capture and never at a replay)."""

from __future__ import annotations

from . import _core
from ._where import call_site

#: Ledger event kinds that cannot happen inside a captured step, and what they are.
REFUSED_KINDS = {
    "to_host": "a copy to host memory",
    "to_device": "a copy from host memory",
    "kernel_conversion": "a host kernel's copies of device arrays",
    "fallback": "a host fallback",
    "sync": "a host synchronization",
}


#: Captures open in the process (any thread): the guards below cost one truth test while 0.
open_captures = 0


def capturing() -> bool:
    """Whether a graph is being captured on this thread."""
    return bool(open_captures) and bool(_core._graph_capturing())


def refuse(what: str, why: str) -> None:
    """Raises :class:`~cunumpy.exceptions.GraphCaptureError` for ``what`` when a graph is
    being captured on this thread (a no-op otherwise)."""
    if open_captures and _core._graph_capturing():
        from .exceptions import GraphCaptureError

        raise GraphCaptureError(f"cannot capture {what} at {call_site()} into a graph: {why}")


def refuse_event(kind: str, description: str) -> None:
    """The ledger's check: an event of a refused kind inside a capture raises."""
    if open_captures and kind in REFUSED_KINDS and _core._graph_capturing():
        refuse(
            f"{description!r} ({REFUSED_KINDS[kind]})",
            "a graph replays device work only; move it out of the captured step",
        )
