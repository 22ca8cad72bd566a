"""Transfer accounting and timing: see what cunumpy copies, where, and how long a region takes.

Every host/device copy, conversion, kernel fallback, synchronisation and kernel launch that
cunumpy makes is recorded in one thread-safe ledger (in Rust). :func:`count_transfers`
collects the events of the calling thread (or of all threads) while it is open.
:func:`write_chrome_trace` saves counters and kernel profiles as one timeline for Perfetto;
``KernelProfile.plot()`` draws where the time went.
"""

from __future__ import annotations

import contextlib
import functools
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

from . import _core
from ._plot import plot_profile
from ._trace import chrome_trace, write_chrome_trace
from .kernels._profile import KernelCall, KernelProfile, KernelStats, kernel_profile

__all__ = [
    "KINDS",
    "TransferEvent",
    "TransferCounter",
    "count_transfers",
    "assert_no_transfers",
    "Timing",
    "timed_region",
    "nvtx_range",
    "kernel_profile",
    "KernelProfile",
    "KernelStats",
    "KernelCall",
    "chrome_trace",
    "write_chrome_trace",
    "plot_profile",
]

#: Event kinds, in report order. ``launch`` events are reported but are not transfers.
KINDS: tuple[str, ...] = tuple(_core.event_kinds())

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class TransferEvent:
    """One recorded event: what happened, where in user code, and how many bytes moved."""

    kind: str
    description: str
    where: str
    nbytes: int | None = None
    blocking: bool = True
    implicit: bool = False
    #: When it was recorded, in nanoseconds on the ledger's clock (``_core.clock_ns``).
    time_ns: int = 0
    #: The recording thread (a small integer per OS thread, not ``threading.get_ident()``).
    thread: int = 0

    @property
    def label(self) -> str:
        """The description plus ``[async]`` and/or ``[implicit]``."""
        label = self.description
        if not self.blocking:
            label += " [async]"
        if self.implicit:
            label += " [implicit]"
        return label

    def __str__(self) -> str:
        return f"{self.where}: {self.kind}: {self.label}"


class TransferCounter:
    """The events seen while a :func:`count_transfers` block was open.

    Counts exclude nothing; :attr:`total` counts every transfer event except ``sync`` and
    ``launch``.
    """

    def __init__(self, *, all_threads: bool = False) -> None:
        self._counter = _core.EventCounter(all_threads)
        self._depth = 0

    # -- collecting -------------------------------------------------------------------------
    def _enter(self) -> None:
        if self._depth == 0:
            self._counter.open()
        self._depth += 1

    def _exit(self) -> None:
        self._depth -= 1
        if self._depth == 0:
            self._counter.close()

    @property
    def active(self) -> bool:
        """Whether the counter is receiving events now."""
        return self._counter.is_open

    def clear(self) -> None:
        """Forgets the events collected so far."""
        self._counter.clear()

    # -- reading ----------------------------------------------------------------------------
    @property
    def events(self) -> list[TransferEvent]:
        """The events in the order they happened."""
        return [TransferEvent(*e) for e in self._counter.events()]

    def count(self, kind: str) -> int:
        """Number of events of ``kind`` (one of :data:`KINDS`)."""
        return self._counter.count(kind)

    def bytes(self, kind: str) -> int:
        """Bytes moved by events of ``kind`` (events of unknown size count as 0)."""
        return self._counter.nbytes(kind)

    @property
    def to_host(self) -> int:
        return self.count("to_host")

    @property
    def to_device(self) -> int:
        return self.count("to_device")

    @property
    def kernel_conversions(self) -> int:
        return self.count("kernel_conversion")

    @property
    def kernel_conversion_calls(self) -> list[TransferEvent]:
        return [e for e in self.events if e.kind == "kernel_conversion"]

    @property
    def fallbacks(self) -> int:
        return self.count("fallback")

    @property
    def device_copies(self) -> int:
        return self.count("device_copy")

    @property
    def syncs(self) -> int:
        return self.count("sync")

    @property
    def launches(self) -> int:
        return self.count("launch")

    @property
    def total(self) -> int:
        """Every event except ``sync`` and ``launch``."""
        return self._counter.total()

    @property
    def bytes_to_host(self) -> int:
        return self.bytes("to_host")

    @property
    def bytes_to_device(self) -> int:
        return self.bytes("to_device")

    def report(self) -> str:
        """A header with the counts per kind, then the events grouped by call site."""
        return self._counter.report()

    def __repr__(self) -> str:
        counts = ", ".join(f"{k}={self.count(k)}" for k in KINDS)
        return f"TransferCounter({counts})"


class count_transfers(contextlib.ContextDecorator):  # noqa: N801 - public name of 0.7.1
    """Counts the transfers of a block (``with``) or of every call (decorator).

    By default only events of the calling thread are seen, so threads can measure their own
    work at the same time; ``all_threads=True`` sees every thread. Blocks nest: every open
    counter receives each event. ``into`` reuses an existing :class:`TransferCounter`.
    """

    def __init__(self, into: TransferCounter | None = None, *, all_threads: bool = False):
        self._into = into
        self._all_threads = all_threads
        self._stack: list[TransferCounter] = []

    def __enter__(self) -> TransferCounter:
        counter = self._into or TransferCounter(all_threads=self._all_threads)
        counter._enter()
        self._stack.append(counter)
        return counter

    def __exit__(self, *exc: object) -> None:
        self._stack.pop()._exit()

    def __call__(self, func: F) -> F:  # a fresh counter per call, like the block form
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with count_transfers(self._into, all_threads=self._all_threads):
                return func(*args, **kwargs)

        return wrapper  # type: ignore[return-value]


@contextlib.contextmanager
def assert_no_transfers(*, syncs: bool = False) -> Iterator[TransferCounter]:
    """Raises ``AssertionError`` with the report if the block copied anything.

    ``device_copy`` events and kernel launches are always allowed; ``sync`` events fail the
    block only with ``syncs=True``.
    """
    with count_transfers() as counter:
        yield counter
    allowed = {"device_copy", "launch"} | (set() if syncs else {"sync"})
    if any(e.kind not in allowed for e in counter.events):
        raise AssertionError(
            "host/device transfers inside a block that must not transfer:\n" + counter.report()
        )


@dataclass
class Timing:
    """The result of :func:`timed_region`: wall time in seconds, and whether it synchronised."""

    name: str
    elapsed: float | None = None
    synced: bool = False


@contextlib.contextmanager
def timed_region(name: str, *, sync: bool = True) -> Iterator[Timing]:
    """Times a block with ``perf_counter``; on CuPy it synchronises first and (``sync``) last,
    so the time covers the device work launched inside. The time is kept if the block raises.
    """
    from ._backend import get_backend
    from ._conversions import synchronize

    timing = Timing(name)
    on_device = get_backend() == "cupy"
    with nvtx_range(name):
        if on_device:
            synchronize()
        start = time.perf_counter()
        try:
            yield timing
        finally:
            if on_device and sync:
                synchronize()
                timing.synced = True
            timing.elapsed = time.perf_counter() - start


class nvtx_range(contextlib.ContextDecorator):  # noqa: N801 - public name of 0.7.1
    """Marks a range for Nsight Systems on the CuPy backend; does nothing elsewhere."""

    def __init__(self, name: str, color: int | None = None) -> None:
        self.name = name
        self.color = color
        self._pushed: list[Any] = []

    def __enter__(self) -> nvtx_range:
        nvtx = _nvtx_module()
        if nvtx is not None:
            if self.color is None:
                nvtx.RangePush(self.name)
            else:
                nvtx.RangePush(self.name, self.color)
        self._pushed.append(nvtx)
        return self

    def __exit__(self, *exc: object) -> None:
        nvtx = self._pushed.pop()
        if nvtx is not None:
            nvtx.RangePop()


def _nvtx_module() -> Any:
    from ._backend import get_backend

    if get_backend() != "cupy":
        return None
    try:
        from cupy.cuda import nvtx
    except Exception:  # NVTX absent from this CuPy build
        return None
    if not getattr(nvtx, "available", True):
        return None
    return nvtx
