"""Chrome/Perfetto trace export of the ledger and the kernel profile (the JSON "Trace Event
Format": https://docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from typing import Any

from .exceptions import InvalidArgumentTypeError

HOST_PID = 1  # the Python process: one track per thread
DEVICE_PID = 2  # the GPU: one track per stream


def chrome_trace(*sources: Any) -> dict[str, Any]:
    """The trace of ``sources`` (``TransferCounter``s and ``KernelProfile``s) as a dict."""
    events: list[dict[str, Any]] = []
    threads: set[int] = set()
    streams: dict[str, int] = {}
    for source in sources:
        # each source class names its kind, so this module imports neither (no import loop)
        kind = getattr(type(source), "_trace_kind", None)
        if kind == "transfers":
            for e in source.events:
                threads.add(e.thread)
                events.append(_ledger_event(e))
        elif kind == "kernels":
            for call in source.calls:
                threads.add(call.thread)
                events.extend(_call_events(call, streams))
        else:
            raise InvalidArgumentTypeError(
                "chrome_trace() takes TransferCounter and KernelProfile objects, got "
                f"{type(source).__name__}"
            )
    meta: list[dict[str, Any]] = [_meta("process_name", HOST_PID, 0, name="cunumpy (host)")]
    meta += [_meta("thread_name", HOST_PID, t, name=f"thread {t}") for t in sorted(threads)]
    if streams:
        meta.append(_meta("process_name", DEVICE_PID, 0, name="GPU"))
        meta += [_meta("thread_name", DEVICE_PID, tid, name=s) for s, tid in streams.items()]
    events.sort(key=lambda e: (e["ts"], e["pid"], e["tid"]))
    return {"traceEvents": meta + events, "displayTimeUnit": "ms"}


def write_chrome_trace(path: str | os.PathLike[str], *sources: Any) -> str:
    """Writes the trace of ``sources`` to ``path`` (open it at https://ui.perfetto.dev or in
    ``chrome://tracing``) and returns the path."""
    with open(path, "w", encoding="utf-8") as f:
        json.dump(chrome_trace(*sources), f)
    return os.fspath(path)


def _us(ns: int) -> float:
    return ns / 1e3


def _meta(kind: str, pid: int, tid: int, **args: Any) -> dict[str, Any]:
    return {"ph": "M", "name": kind, "pid": pid, "tid": tid, "args": args}


def _ledger_event(e: Any) -> dict[str, Any]:
    # the ledger records a copy or launch when it is made, without its duration: an instant
    args: dict[str, Any] = {"source": e.where, "description": e.label}
    if e.nbytes is not None:
        args["bytes"] = e.nbytes
    return {
        "ph": "i",
        "s": "t",
        "name": f"{e.kind}: {e.description}",
        "cat": e.kind,
        "ts": _us(e.time_ns),
        "pid": HOST_PID,
        "tid": e.thread,
        "args": args,
    }


def _call_events(call: Any, streams: dict[str, int]) -> Iterable[dict[str, Any]]:
    args: dict[str, Any] = {"path": call.path, "source": call.site}
    if call.nbytes:
        args["bytes copied"] = call.nbytes
    if call.stream is not None:
        args["stream"] = call.stream
    yield {
        "ph": "X",
        "name": call.name,
        "cat": f"kernel.{call.path}",
        "ts": _us(call.start_ns),
        "dur": _us(max(call.end_ns - call.start_ns, 0)),
        "pid": HOST_PID,
        "tid": call.thread,
        "args": args,
    }
    span = call.device_span_ns()
    if span is not None:
        tid = streams.setdefault(call.stream or "current", len(streams) + 1)
        yield {
            "ph": "X",
            "name": call.name,
            "cat": "kernel.device",
            "ts": _us(span[0]),
            "dur": _us(span[1]),
            "pid": DEVICE_PID,
            "tid": tid,
            "args": {"source": call.site, "stream": call.stream or "current"},
        }
