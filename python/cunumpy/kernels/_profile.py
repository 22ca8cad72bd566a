"""The kernel profile: per ``Kernel``, how often it ran, by which path, for how long, and how
many bytes its host fallback copied. Off by default; when off a call pays one truth test."""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from .. import _capture, _core
from .._where import call_site
from ..exceptions import InvalidArgumentKeyError

__all__ = ["KernelCall", "KernelProfile", "KernelStats", "kernel_profile"]

PATHS = ("cuda", "metal", "host", "fallback", "graph")

#: The profiles collecting now; ``Kernel.__call__`` tests this list before doing anything.
active: list[KernelProfile] = []
_lock = threading.Lock()


@dataclass
class KernelStats:
    """One kernel on one path: calls, seconds (CUDA launches: read from events lazily) and bytes
    copied by host fallbacks."""

    name: str
    path: str
    calls: int = 0
    host_seconds: float = 0.0
    nbytes: int = 0
    #: Graph replays (path ``graph``): kernels they ran, and the host launch time they saved
    #: against issuing the same launches one by one (``CudaGraph.launch_seconds_saved``).
    kernels: int = 0
    saved_seconds: float = 0.0
    _events: list[tuple[Any, Any]] = field(default_factory=list, repr=False)

    @property
    def seconds(self) -> float:
        """Total time; for CUDA launches the device time between the recorded events (this
        waits for the last launch to finish, once)."""
        if self._events:
            pending, self._events = self._events, []
            pending[-1][1].synchronize()
            import cupy

            for start, stop in pending:
                self.host_seconds += cupy.cuda.get_elapsed_time(start, stop) / 1e3
        return self.host_seconds

    @property
    def mean_seconds(self) -> float:
        return self.seconds / self.calls if self.calls else 0.0


@dataclass
class KernelCall:
    """One profiled call: on the ledger's clock (``_core.clock_ns``), the calling thread's ledger
    key, the stream it was launched on (CUDA path) and the user's source line."""

    name: str
    path: str
    thread: int
    start_ns: int
    end_ns: int
    site: str
    stream: str | None = None
    nbytes: int = 0
    _events: tuple[Any, Any] | None = field(default=None, repr=False)
    _reference: tuple[Any, int] | None = field(default=None, repr=False)

    def device_span_ns(self) -> tuple[int, int] | None:
        """``(start_ns, duration_ns)`` of the launch on the device, on the ledger's clock, from
        its CUDA events (``None`` on the host or without events; waits for the launch)."""
        if self._events is None:
            return None
        import cupy

        start, stop = self._events
        stop.synchronize()
        duration = int(cupy.cuda.get_elapsed_time(start, stop) * 1e6)
        begin = self.start_ns
        if self._reference is not None:  # device time since an event recorded at a known host time
            ref_event, ref_ns = self._reference
            try:
                begin = ref_ns + int(cupy.cuda.get_elapsed_time(ref_event, start) * 1e6)
            except Exception:  # events of another device: keep the launch time on the host
                begin = self.start_ns
        return begin, duration


class KernelProfile:
    """What :func:`kernel_profile` collected. :meth:`report` is a table sorted by total time;
    :meth:`as_dict` gives the same numbers as plain data; :attr:`calls` lists every call on a
    timeline (:func:`cunumpy.profiling.write_chrome_trace` saves it for Perfetto) and
    :meth:`plot` draws where the time went."""

    _trace_kind = "kernels"  # what `_trace.chrome_trace` reads from it

    def __init__(self) -> None:
        self._stats: dict[tuple[str, str], KernelStats] = {}
        #: Every call, in the order they finished.
        self.calls: list[KernelCall] = []
        self._reference: tuple[Any, int] | None = None

    def _entry(self, name: str, path: str) -> KernelStats:
        key = (name, path)
        stats = self._stats.get(key)
        if stats is None:
            with _lock:
                stats = self._stats.setdefault(key, KernelStats(name, path))
        return stats

    def stats(self) -> list[KernelStats]:
        """Every (kernel, path) entry, the most expensive first."""
        return sorted(self._stats.values(), key=lambda s: (-s.seconds, s.name, s.path))

    @property
    def fallbacks(self) -> list[str]:
        """Names of the kernels that ran their host version on device data, most expensive
        first: the order in which to port them."""
        return [s.name for s in self.stats() if s.path == "fallback"]

    def __getitem__(self, name: str) -> dict[str, KernelStats]:
        found = {p: s for (n, p), s in self._stats.items() if n == name}
        if not found:
            raise InvalidArgumentKeyError(f"kernel {name!r} was not called while profiling")
        return found

    def __contains__(self, name: object) -> bool:
        return any(n == name for n, _ in self._stats)

    def as_dict(self) -> dict[str, dict[str, dict[str, float | int]]]:
        """``{kernel: {path: {"calls", "seconds", "mean_seconds", "bytes"}}}``."""
        out: dict[str, dict[str, dict[str, float | int]]] = {}
        for s in self.stats():
            entry: dict[str, float | int] = {
                "calls": s.calls,
                "seconds": s.seconds,
                "mean_seconds": s.mean_seconds,
                "bytes": s.nbytes,
            }
            if s.path == "graph":
                entry["kernels"] = s.kernels
                entry["saved_seconds"] = s.saved_seconds
            out.setdefault(s.name, {})[s.path] = entry
        return out

    def report(self) -> str:
        """A table, one line per kernel and path, sorted by total time; the kernels that still
        fall back are named at the end."""
        rows = self.stats()
        if not rows:
            return "kernel profile: no kernel calls"
        width = max(6, *(len(s.name) for s in rows))
        lines = [
            f"kernel profile: {sum(s.calls for s in rows)} call(s) of {len({s.name for s in rows})}"
            " kernel(s), by total time",
            f"  {'kernel':<{width}}  {'path':<8}  {'calls':>7}  {'total ms':>10}  "
            f"{'mean us':>10}  {'copied':>10}",
        ]
        for s in rows:
            lines.append(
                f"  {s.name:<{width}}  {s.path:<8}  {s.calls:>7}  {s.seconds * 1e3:>10.3f}  "
                f"{s.mean_seconds * 1e6:>10.1f}  {_bytes(s.nbytes):>10}"
            )
        graphs = [s for s in rows if s.path == "graph"]
        if graphs:
            replays = sum(s.calls for s in graphs)
            kernels = sum(s.kernels for s in graphs)
            saved = sum(s.saved_seconds for s in graphs)
            lines.append(
                f"graph replays: {replays} launch(es) ran {kernels} kernel(s); about "
                f"{saved * 1e3:.3f} ms of launch time saved against launching them one by one"
            )
        falling = self.fallbacks
        if falling:
            lines.append("still falling back to the host: " + ", ".join(falling))
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.report()

    def plot(self, path: Any = None, *, transfers: Any = None) -> Any:
        """Draws where the time went: total time per kernel and path, host against device time,
        and (with ``transfers``, a :class:`~cunumpy.profiling.TransferCounter`) the bytes copied
        per direction. Needs matplotlib; writes a PNG (or any format matplotlib knows from the
        suffix) when ``path`` is given, and returns the figure."""
        from .._plot import plot_profile

        return plot_profile(self, path, transfers=transfers)

    def __repr__(self) -> str:
        return f"KernelProfile({len(self._stats)} entries, {len(self.fallbacks)} falling back)"


def _bytes(n: int) -> str:
    if n == 0:
        return "-"
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return str(n)


@contextlib.contextmanager
def kernel_profile(into: KernelProfile | None = None) -> Iterator[KernelProfile]:
    """Profiles every ``Kernel`` call of the block (all threads): calls, path (``cuda``,
    ``metal``, ``host``, ``fallback``), time (CUDA events around launches, ``perf_counter`` on
    the host) and bytes copied by fallbacks. Nested profiles each see every call."""
    profile = into if into is not None else KernelProfile()
    active.append(profile)
    try:
        yield profile
    finally:
        active.remove(profile)


# -- what Kernel.__call__ uses while a profile is active ------------------------------------------
def _cuda_events(stream: Any) -> tuple[Any, Any] | None:
    cupy = sys.modules.get("cupy")
    if cupy is None or getattr(cupy, "__cunumpy_fake__", False):
        return None
    try:
        start, stop = cupy.cuda.Event(), cupy.cuda.Event()
    except Exception:  # no context yet or events unsupported: time on the host
        return None
    return start, stop


def timed_call(name: str, path: str, fn: Any, args: tuple[Any, ...], kw: dict[str, Any]) -> Any:
    """Runs ``fn(*args, **kw)`` and adds it to every active profile (not while a graph is
    captured: a captured launch does not run; its replays are profiled)."""
    if _capture.capturing():
        return fn(*args, **kw)
    events = _cuda_events(kw.get("stream")) if path == "cuda" else None
    site = call_site()
    thread = _core.thread_key()
    if events is not None:
        stream = kw.get("stream")
        profiles = list(active)
        for profile in profiles:
            if profile._reference is None:  # a device-time origin for the timeline
                reference = events[0].__class__()
                reference.record(stream)
                profile._reference = (reference, _core.clock_ns())
        start_ns = _core.clock_ns()
        events[0].record(stream)
        result = fn(*args, **kw)
        events[1].record(stream)
        end_ns = _core.clock_ns()
        for profile in profiles:
            entry = profile._entry(name, path)
            entry.calls += 1
            entry._events.append(events)
            profile.calls.append(
                KernelCall(
                    name,
                    path,
                    thread,
                    start_ns,
                    end_ns,
                    site,
                    _stream_name(stream),
                    0,
                    events,
                    profile._reference,
                )
            )
        return result
    start_ns = _core.clock_ns()
    result = fn(*args, **kw)
    end_ns = _core.clock_ns()
    elapsed = (end_ns - start_ns) / 1e9
    owner = getattr(fn, "__self__", fn)  # a bound PyccelKernel method knows what it copied
    nbytes = int(getattr(owner, "last_call_nbytes", 0) or 0) if path == "fallback" else 0
    stream = _stream_name(kw.get("stream")) if path == "cuda" else None
    for profile in list(active):
        entry = profile._entry(name, path)
        entry.calls += 1
        entry.host_seconds += elapsed
        entry.nbytes += nbytes
        profile.calls.append(KernelCall(name, path, thread, start_ns, end_ns, site, stream, nbytes))
    return result


def timed_graph_replay(graph: Any, run: Any, stream: Any) -> None:
    """Runs one replay of ``graph`` (``run()``) and adds it to every active profile as a call
    of ``graph:<name>`` on the ``graph`` path, with the kernels it ran and the launch time it
    saved (the step's host time at capture minus this replay's)."""
    name = f"graph:{graph.name}"
    events = _cuda_events(stream)
    site = call_site()
    thread = _core.thread_key()
    start_ns = _core.clock_ns()
    if events is not None:
        events[0].record(stream)
        run()
        events[1].record(stream)
    else:
        run()
    end_ns = _core.clock_ns()
    host = (end_ns - start_ns) / 1e9
    saved = max(0.0, graph._capture_seconds - host)
    for profile in list(active):
        entry = profile._entry(name, "graph")
        entry.calls += 1
        entry.kernels += graph.kernels
        entry.saved_seconds += saved
        if events is not None:
            entry._events.append(events)
        else:
            entry.host_seconds += host
        profile.calls.append(
            KernelCall(
                name,
                "graph",
                thread,
                start_ns,
                end_ns,
                site,
                _stream_name(stream),
                0,
                events,
                profile._reference,
            )
        )


def _stream_name(stream: Any) -> str:
    """A stable label of a stream argument: ``current`` when none was given, else its handle."""
    if stream is None:
        return "current"
    handle = getattr(stream, "ptr", None)
    if handle is None:
        handle = getattr(stream, "cuda_stream", stream)
    return f"stream {handle:#x}" if isinstance(handle, int) else f"stream {handle}"
