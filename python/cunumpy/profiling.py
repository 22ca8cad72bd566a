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
    "TransferBudget",
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

    _trace_kind = "transfers"  # what `_trace.chrome_trace` reads from it

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
    def graph_launches(self) -> int:
        """Replays of captured graphs (``cunumpy.cuda.graph``): one launch each."""
        return self.count("graph_launch")

    @property
    def graph_kernels(self) -> int:
        """Kernels run by those graph launches."""
        return int(self._counter.graph_kernels())

    @property
    def total(self) -> int:
        """Every event except ``sync``, ``launch`` and ``graph_launch``."""
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
    allowed = {"device_copy", "launch", "graph_launch"} | (set() if syncs else {"sync"})
    if any(e.kind not in allowed for e in counter.events):
        from .exceptions import TransferBudgetExceeded

        raise TransferBudgetExceeded(
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


_LIMITS = ("max_nbytes", "max_count", "max_total_bytes", "blocking", "implicit")


class TransferBudget:
    """Count transfers per phase of a program and check a rule for each phase.

    E.g. the time step must not copy between host and device, the diagnostics may copy a few
    scalars, the output each saved array once. Mark phases with :meth:`phase` or :meth:`count`,
    set rules with :meth:`require` and call :meth:`check`. A phase's events accumulate over its
    calls. Phases nest: an event is counted in the innermost phase only, and a phase re-entered
    inside itself (recursion) counts each event and call once. ``launch`` events (kernel
    launches, which 0.7.1 did not record) are never checked unless a rule allows them.

    Parameters
    ----------
    started : bool, optional
        Count from the start (default); with False, phases run uncounted until :meth:`start`.

    Attributes
    ----------
    phases : dict of str to TransferCounter
        The events of each phase, accumulated over its calls.
    calls : dict of str to int
        How many times each phase was entered while counting.
    started : bool
        Whether phases are counted.

    Examples
    --------
    >>> budget = xp.profiling.TransferBudget()
    >>> for step in range(3):
    ...     with budget.phase("step"):
    ...         x = 2.0 * xp.ones(4)
    >>> budget.require("step", allow={"to_host": {"max_nbytes": 8}}, calls=3)
    >>> budget.check()
    >>> budget.violations()
    []
    """

    def __init__(self, *, started: bool = True) -> None:
        self.phases: dict[str, TransferCounter] = {}
        self.calls: dict[str, int] = {}
        self.started = bool(started)
        self._rules: dict[str, tuple[dict[str, dict[str, Any]], tuple[str, ...], int | None]] = {}
        self._open: list[str] = []  # the phases entered, innermost last

    def __getitem__(self, phase: str) -> TransferCounter:
        """The counter of `phase` (empty if it has not run)."""
        return self.phases.setdefault(phase, TransferCounter())

    def start(self) -> None:
        """Count the phases from now on."""
        self.started = True

    def stop(self) -> None:
        """Stop counting; phases run uncounted until :meth:`start`."""
        self.started = False

    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[TransferCounter]:
        """Count the transfers of the block in phase `name` (accumulating over calls).

        Yields
        ------
        TransferCounter
            The counter of the phase (``budget[name]``).
        """
        counter = self[name]
        if not self.started or (self._open and self._open[-1] == name):
            yield counter  # uncounted, or recursion straight into the same phase
            return
        outer = self[self._open[-1]] if self._open else None
        if name not in self._open:
            self.calls[name] = self.calls.get(name, 0) + 1
        if outer is not None:
            outer._exit()  # the innermost phase alone gets the events
        self._open.append(name)
        counter._enter()
        try:
            yield counter
        finally:
            counter._exit()
            self._open.pop()
            if outer is not None:
                outer._enter()

    def count(self, name: str) -> Callable[[F], F]:
        """A decorator that counts every call of a function in phase `name`, e.g.
        ``step = budget.count("step")(step)``."""

        def decorate(func: F) -> F:
            @functools.wraps(func)
            def wrapper(*args: Any, **kwargs: Any) -> Any:
                with self.phase(name):
                    return func(*args, **kwargs)

            return wrapper  # type: ignore[return-value]

        return decorate

    def require(
        self,
        phase: str,
        allow: dict[str, dict[str, Any] | None] | None = None,
        *,
        ignore: tuple[str, ...] | list[str] = ("device_copy", "sync"),
        calls: int | None = None,
    ) -> None:
        """Set the rule of `phase`, checked by :meth:`check`.

        Parameters
        ----------
        phase : str
            The phase.
        allow : mapping, optional
            The event kinds the phase may have, each with its limits (None or ``{}``: any
            number); every other kind is forbidden unless in `ignore`. Limits: ``max_nbytes``
            (each event; an unknown size breaks it), ``max_count`` and ``max_total_bytes`` (the
            whole phase), ``blocking`` and ``implicit`` (the required value of the event's
            field), e.g. ``{"to_host": {"max_nbytes": 8, "blocking": False}}``.
        ignore : sequence of str, optional
            Kinds not checked unless in `allow`; ``device_copy`` and ``sync`` by default.
        calls : int, optional
            How many times the phase must have been entered.

        Raises
        ------
        TransferRuleError
            For an unknown kind or limit (a ``ValueError``).
        """
        from .exceptions import TransferRuleError

        rules: dict[str, dict[str, Any]] = {}
        for kind, limits in (allow or {}).items():
            if kind not in KINDS:
                raise TransferRuleError(
                    f"TransferBudget.require({phase!r}): unknown event kind {kind!r}; expected "
                    f"one of {', '.join(KINDS)}"
                )
            unknown = set(limits or {}) - set(_LIMITS)
            if unknown:
                raise TransferRuleError(
                    f"TransferBudget.require({phase!r}): unknown limit(s) {sorted(unknown)} for "
                    f"{kind!r}; expected {', '.join(_LIMITS)}"
                )
            rules[kind] = dict(limits or {})
        for kind in ignore:
            if kind not in KINDS:
                raise TransferRuleError(
                    f"TransferBudget.require({phase!r}): unknown kind {kind!r} in ignore"
                )
        self._rules[phase] = (rules, tuple(ignore), calls)

    def violations(self) -> list[str]:
        """The broken rules, one line each, naming the offending event and its call site."""
        found: list[str] = []
        for phase, (rules, ignore, calls) in self._rules.items():
            counter = self[phase]
            events = counter.events
            for e in events:
                limits = rules.get(e.kind)
                if limits is None:
                    if e.kind not in ignore and e.kind != "launch":
                        found.append(f"phase {phase!r}: {e.kind} is not allowed: {e}")
                    continue
                cap = limits.get("max_nbytes")
                if cap is not None and (e.nbytes is None or e.nbytes > cap):
                    found.append(f"phase {phase!r}: {e.kind} of {e.nbytes} bytes > {cap}: {e}")
                for field in ("blocking", "implicit"):
                    if field in limits and getattr(e, field) != limits[field]:
                        found.append(
                            f"phase {phase!r}: {e.kind} with {field}={getattr(e, field)}: {e}"
                        )
            for kind, limits in rules.items():
                n = sum(1 for e in events if e.kind == kind)
                if limits.get("max_count") is not None and n > limits["max_count"]:
                    found.append(
                        f"phase {phase!r}: {n} {kind} events > max_count {limits['max_count']}"
                    )
                total = sum(e.nbytes or 0 for e in events if e.kind == kind)
                if limits.get("max_total_bytes") is not None and total > limits["max_total_bytes"]:
                    found.append(
                        f"phase {phase!r}: {total} {kind} bytes > max_total_bytes "
                        f"{limits['max_total_bytes']}"
                    )
            if calls is not None and self.calls.get(phase, 0) != calls:
                found.append(
                    f"phase {phase!r}: entered {self.calls.get(phase, 0)} time(s), expected {calls}"
                )
        return found

    def report(self) -> str:
        """Every phase's :meth:`TransferCounter.report`, then the :meth:`violations`."""
        lines = []
        for phase, counter in self.phases.items():
            lines.append(f"phase {phase!r} ({self.calls.get(phase, 0)} call(s)):")
            lines.extend("  " + line for line in counter.report().splitlines())
        broken = self.violations()
        lines.append(f"{len(broken)} broken rule(s)" + (":" if broken else ""))
        lines.extend("  " + line for line in broken)
        return "\n".join(lines)

    def check(self) -> None:
        """Raise :class:`~cunumpy.exceptions.TransferBudgetExceeded` (an ``AssertionError``)
        if a rule is broken; the message is :meth:`report`."""
        from .exceptions import TransferBudgetExceeded

        if self.violations():
            raise TransferBudgetExceeded("transfer budget exceeded:\n" + self.report())

    def __repr__(self) -> str:
        return f"TransferBudget(phases={sorted(self.phases)}, started={self.started})"
