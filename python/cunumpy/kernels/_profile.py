"""The kernel profile: per ``Kernel``, how often it ran, by which path, for how long, and how
many bytes its host fallback copied. Off by default; when off a call pays one truth test."""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

__all__ = ["KernelProfile", "KernelStats", "kernel_profile"]

PATHS = ("cuda", "host", "fallback")

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


class KernelProfile:
    """What :func:`kernel_profile` collected. :meth:`report` is a table sorted by total time;
    :meth:`as_dict` gives the same numbers as plain data."""

    def __init__(self) -> None:
        self._stats: dict[tuple[str, str], KernelStats] = {}

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
            raise KeyError(f"kernel {name!r} was not called while profiling")
        return found

    def __contains__(self, name: object) -> bool:
        return any(n == name for n, _ in self._stats)

    def as_dict(self) -> dict[str, dict[str, dict[str, float | int]]]:
        """``{kernel: {path: {"calls", "seconds", "mean_seconds", "bytes"}}}``."""
        out: dict[str, dict[str, dict[str, float | int]]] = {}
        for s in self.stats():
            out.setdefault(s.name, {})[s.path] = {
                "calls": s.calls,
                "seconds": s.seconds,
                "mean_seconds": s.mean_seconds,
                "bytes": s.nbytes,
            }
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
        falling = self.fallbacks
        if falling:
            lines.append("still falling back to the host: " + ", ".join(falling))
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.report()

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
    ``host``, ``fallback``), time (CUDA events around launches, ``perf_counter`` on the host)
    and bytes copied by fallbacks. Nested profiles each see every call."""
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
    """Runs ``fn(*args, **kw)`` and adds it to every active profile."""
    events = _cuda_events(kw.get("stream")) if path == "cuda" else None
    if events is not None:
        stream = kw.get("stream")
        events[0].record(stream)
        result = fn(*args, **kw)
        events[1].record(stream)
        for profile in list(active):
            entry = profile._entry(name, path)
            entry.calls += 1
            entry._events.append(events)
        return result
    start = time.perf_counter()
    result = fn(*args, **kw)
    elapsed = time.perf_counter() - start
    owner = getattr(fn, "__self__", fn)  # a bound PyccelKernel method knows what it copied
    nbytes = int(getattr(owner, "last_call_nbytes", 0) or 0) if path == "fallback" else 0
    for profile in list(active):
        entry = profile._entry(name, path)
        entry.calls += 1
        entry.host_seconds += elapsed
        entry.nbytes += nbytes
    return result
