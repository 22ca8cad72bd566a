"""A time step as one CUDA graph (``xp.cuda.graph``): capture once, check once, replay.

The recorded launch list and every check of a replay's values are Rust's
(``cunumpy_runtime::graph``); this module opens and closes the capture around the user's
callable (CuPy's stream capture on a GPU), flattens the arguments into the graph's parameters,
and launches the graph (CuPy's ``Graph.launch``), or on the emulated device runs the recorded
launches in order.

Which arguments are replay parameters: the callable's positional arguments, by identity. A
value passed to ``graph(step, *args)`` that reaches a kernel as itself (the very object) is
that kernel's parameter in every replay; ``g(*new_args)`` puts the new values there, checked
like a launch. A value computed from a parameter inside the step (``t + dt``, ``x[1:]``) is a
constant of the graph: the capture notices arithmetic on scalar parameters (their capture-time
values remember them) and views of array parameters (shared memory) reaching a kernel, and a
replay that would change such a parameter is refused rather than silently ignored.
"""

from __future__ import annotations

import inspect
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import _backend, _capture, _core
from ..exceptions import (
    GraphCaptureError,
    GraphError,
    GraphRecaptureError,
    InvalidArgumentTypeError,
)

__all__ = ["CudaGraph", "graph"]


_ARITHMETIC = (
    "__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__", "__truediv__",
    "__rtruediv__", "__floordiv__", "__rfloordiv__", "__mod__", "__rmod__", "__pow__",
    "__rpow__", "__neg__", "__pos__", "__abs__",
)  # fmt: skip


def _derived(result: Any, operands: tuple[Any, ...]) -> Any:
    """``result`` of arithmetic on parameter values, remembering which parameters it came
    from (a kernel that receives it marks them as ones a replay cannot change)."""
    params = tuple(sorted({p for o in operands for p in getattr(o, "_cunumpy_graph_params", ())}))
    if type(result) is float:
        out: Any = _DerivedFloat(result)
    elif type(result) is int:
        out = _DerivedInt(result)
    else:
        return result
    out._cunumpy_graph_params = params
    return out


def _tracking(base: type) -> dict[str, Any]:
    """Arithmetic methods of ``base`` whose results remember the parameters they came from."""

    def method(name: str) -> Any:
        plain = getattr(base, name)

        def op(self: Any, *other: Any) -> Any:
            result = plain(self, *other)
            return result if result is NotImplemented else _derived(result, (self, *other))

        op.__name__ = name
        return op

    return {name: method(name) for name in _ARITHMETIC if hasattr(base, name)}


class _DerivedFloat(float):
    """A float computed from graph parameters in the captured step (``t + dt``)."""

    _cunumpy_graph_params: tuple[int, ...] = ()


class _DerivedInt(int):
    """An int computed from graph parameters in the captured step (``2 * n``)."""

    _cunumpy_graph_params: tuple[int, ...] = ()


for _cls, _base in ((_DerivedFloat, float), (_DerivedInt, int)):
    for _name, _op in _tracking(_base).items():
        setattr(_cls, _name, _op)


class _GraphFloat(_DerivedFloat):
    """A float parameter at capture: a fresh object, so only this very value (not an equal
    literal elsewhere in the step) is matched to kernel arguments; arithmetic on it gives a
    value that remembers it."""


class _GraphInt(_DerivedInt):
    """An int parameter at capture (small ints are shared objects in Python; this is not)."""


_UNBOUND = object()  # a flattened value no kernel argument can be (scalar struct members)


def _is_scalar(value: Any) -> bool:
    return isinstance(value, (int, float, complex, np.generic))


def _capture_value(value: Any, index: int) -> Any:
    """The object the step receives at capture for a parameter value (flat index ``index``)."""
    if isinstance(value, bool) or isinstance(value, np.bool_):
        return value  # cannot be made unique; refused before the capture
    marker: Any
    if type(value) is float:
        marker = _GraphFloat(value)
    elif type(value) is int:
        marker = _GraphInt(value)
    elif isinstance(value, np.generic):
        return np.array(value)[()]  # a fresh NumPy scalar of the same dtype
    else:
        return value
    marker._cunumpy_graph_params = (index,)
    return marker


def _members(value: Any) -> tuple[Any, ...] | None:
    """The values a kernel flattens an argument object into (``__cuda_args__``), or None."""
    if _is_scalar(value) or hasattr(value, "__cuda_array_interface__"):
        return None
    method = getattr(type(value), "__cuda_args__", None)
    if method is None:
        return None
    return tuple(method(value))


def _cupy_graphs() -> Any:
    """CuPy when the backend is a real GPU's, else None (NumPy backend or emulated device)."""
    if _backend.get_backend() != "cupy":
        return None
    cupy = sys.modules.get("cupy")
    if cupy is None or getattr(cupy, "__cunumpy_fake__", False):
        return None
    return cupy


class CudaGraph:
    """A captured time step (made by :func:`graph`): ``g()`` or ``g(*new_args)`` replays it.

    On a GPU a replay is one CUDA graph launch (the kernels' nodes updated in place first when
    arguments changed); on the emulated device it runs the recorded launches in order. The
    step's Python code does not run again: a replay returns :attr:`output`, what the step
    returned at capture (arrays it allocated are kept, and written again by each replay).
    """

    def __init__(
        self,
        name: str,
        captured: Any,
        cupy_graph: Any,
        labels: list[str],
        groups: list[tuple[int, int]],
        values: list[Any],
        output: Any,
        capture_seconds: float,
        unbound: list[int],
        capture_memory: Any = None,
    ) -> None:
        self._name = name
        self._captured = captured
        self._cupy_graph = cupy_graph
        self._launch = cupy_graph.launch if cupy_graph is not None else None
        # Every block CuPy allocated during the capture (the step's temporaries too: captured
        # kernels write them at every replay), and the capture stream, are kept for the graph's
        # lifetime: nothing a replay touches is freed or handed to anyone else.
        self._capture_memory = capture_memory
        self._labels = labels
        self._groups = groups
        self._values = values  # the flattened values the kernels hold now
        # (what, bound, updatable, why not) per flattened value
        self._params = captured.parameters()
        self._kernels = int(captured.kernels)
        self._dirty = False
        self._unbound = set(unbound)
        #: What the step returned at capture; every replay returns it (and rewrites it).
        self.output = output
        self._capture_seconds = capture_seconds

    @property
    def name(self) -> str:
        """The graph's name (the step's, unless ``name=`` was given)."""
        return self._name

    @property
    def kernels(self) -> int:
        """Kernels one replay runs."""
        return self._kernels

    @property
    def launches(self) -> list[tuple[str, str]]:
        """``(kernel, "file:line")`` of every captured launch, in order."""
        return [tuple(x) for x in self._captured.launches()]  # type: ignore[misc]

    @property
    def emulated(self) -> bool:
        """Whether the graph runs on the emulated device (``CUNUMPY_FAKE_CUPY=1``)."""
        return bool(self._captured.emulated)

    @property
    def parameters(self) -> list[dict[str, Any]]:
        """One entry per flattened argument of the step: its label, what it was at capture,
        whether a kernel takes it as itself (``bound``) and whether a replay can change it."""
        return [
            {"label": label, "captured": what, "bound": bound, "updatable": updatable}
            for label, (what, bound, updatable, _) in zip(self._labels, self._params, strict=True)
        ]

    def replay(self, *args: Any, stream: Any = None) -> Any:
        """Replays the step on ``stream`` (CuPy's current stream by default). New ``args``
        (all of the step's positional arguments, or none) are checked like a launch's and
        written into the captured kernels in place; one that cannot be raises
        :class:`~cunumpy.exceptions.GraphRecaptureError` saying why, and nothing runs."""
        if args:
            self._take(args)
        captured = self._captured
        if self._launch is None:
            if _profile_active():
                _timed_replay(self, lambda: captured._replay_emulated(), None)
            else:
                captured._replay_emulated()
        else:
            if self._dirty:
                captured._apply_updates()
                self._dirty = False
            if _profile_active():
                _timed_replay(self, lambda: self._launch(stream), stream)
            else:
                self._launch(stream)
        if _core.is_recording():
            captured._record_replay(self._name)
        return self.output

    #: ``g(*args)`` is ``g.replay(*args)``.
    __call__ = replay

    def _take(self, args: tuple[Any, ...]) -> None:
        if len(args) != len(self._groups):
            raise GraphRecaptureError(
                f"graph '{self._name}': a replay takes all {len(self._groups)} argument(s) of "
                f"the captured step (or none), got {len(args)}; capture the graph again for "
                "another argument list"
            )
        flat = _flatten(args)
        if [b - a for a, b in self._groups] != [b - a for a, b in _groups_of(args)]:
            raise GraphRecaptureError(
                f"graph '{self._name}': an argument object flattens to another number of "
                "values than at capture; capture the graph again"
            )
        # check every value before changing any: a refused replay changes nothing
        changes = []
        for i, value in enumerate(flat):
            last = self._values[i]
            if value is last or (_is_scalar(value) and type(value) is type(last) and value == last):
                continue
            if self._params[i][3] is not None:
                raise GraphRecaptureError(
                    f"graph parameter {self._labels[i]}: {self._params[i][3]}, which a replay "
                    "cannot recompute (it writes new values into kernel arguments only); "
                    "capture the graph again"
                )
            if not self._params[i][2]:
                why = self._values_fixed_reason(i) or (
                    f"was {self._params[i][0]} at capture (not a scalar, array or struct value "
                    "a kernel takes), so a replay cannot change it; capture the graph again"
                )
                raise GraphRecaptureError(f"graph parameter {self._labels[i]}: {why}")
            if not self._params[i][1]:
                raise GraphRecaptureError(
                    f"graph parameter {self._labels[i]}: no kernel of the step takes it as "
                    "itself (a value computed from it inside the step was captured as a "
                    "constant), so a replay cannot change it; pass it to the kernels directly "
                    "or capture the graph again"
                )
            changes.append((i, value))
        if changes:
            self._captured._update([(i, self._labels[i], value) for i, value in changes])
            for i, value in changes:
                self._values[i] = value
            self._dirty = True

    def _values_fixed_reason(self, i: int) -> str | None:
        if i in self._unbound:
            return (
                "a scalar member of an argument object is a constant of the graph; capture the "
                "graph again for another value"
            )
        return None

    def launch_seconds_saved(self, replays: int) -> float:
        """Estimated host time ``replays`` replays saved against running the step eagerly:
        the step's host time at capture (issuing its launches one by one, less the time spent
        compiling kernels) minus a replay's, times ``replays``."""
        return max(0.0, self._capture_seconds - self._replay_seconds()) * replays

    def _replay_seconds(self) -> float:
        return getattr(self, "_measured_replay", 0.0)

    def __repr__(self) -> str:
        where = "emulated device" if self.emulated else "GPU"
        return (
            f"CudaGraph({self._name!r}, {self._kernels} kernel(s), "
            f"{len(self._labels)} parameter value(s), {where})"
        )


def _profile_active() -> bool:
    return bool(_profile().active)


def _profile() -> Any:
    """``cunumpy.kernels._profile`` (imported on first use: ``kernels`` imports ``cuda``)."""
    global _PROFILE
    if _PROFILE is None:
        from ..kernels import _profile as module

        _PROFILE = module
    return _PROFILE


_PROFILE: Any = None


def _timed_replay(g: CudaGraph, run: Callable[[], Any], stream: Any) -> None:
    start = time.perf_counter()
    _profile().timed_graph_replay(g, run, stream)
    g._measured_replay = time.perf_counter() - start  # type: ignore[attr-defined]


def _keeping(cupy: Any, allocations: list[Any]) -> Callable[[int], Any]:
    """CuPy's current allocator, keeping every block it hands out in ``allocations``."""
    get = getattr(cupy.cuda, "get_allocator", None)
    base = get() if get is not None else None
    if base is None:
        base = cupy.get_default_memory_pool().malloc

    def allocate(size: int) -> Any:
        block = base(size)
        allocations.append(block)
        return block

    return allocate


def _groups_of(args: tuple[Any, ...]) -> list[tuple[int, int]]:
    groups, n = [], 0
    for a in args:
        members = _members(a)
        size = 1 if members is None else len(members)
        groups.append((n, n + size))
        n += size
    return groups


def _flatten(args: tuple[Any, ...]) -> list[Any]:
    flat: list[Any] = []
    for a in args:
        members = _members(a)
        if members is None:
            flat.append(a)
        else:
            flat.extend(members)
    return flat


def _labels(fn: Callable[..., Any], args: tuple[Any, ...]) -> list[str]:
    try:
        names = [
            p.name
            for p in inspect.signature(fn).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]
    except (TypeError, ValueError):
        names = []
    labels = []
    for i, a in enumerate(args):
        base = f"{i} ({names[i]})" if i < len(names) else str(i)
        members = _members(a)
        if members is None:
            labels.append(base)
        else:
            labels.extend(f"{base} member {k}" for k in range(len(members)))
    return labels


def graph(
    fn: Callable[..., Any], *args: Any, stream: Any = None, name: str | None = None
) -> CudaGraph:
    """Captures ``fn(*args)`` (a time step) into a graph and returns it, without running it.

    Every ``CudaKernel``, ``Kernel`` (CUDA side) and fused launch of the step is checked once,
    here, as an eager launch would be, and recorded. What a graph cannot hold raises
    :class:`~cunumpy.exceptions.GraphCaptureError` at that call, before it runs, naming it and
    your line: a host kernel (``PyccelKernel``, a ``Kernel`` fallback), a copy through host
    memory, a host synchronization, a launch on another stream.

    ``args`` are the graph's parameters: ``g(*new_args)`` replays with new values, each
    written into the kernels that took the old value as an argument. Scalars of the same kind
    and arrays of the same dtype, shape and strides are updated in place, checked like a
    launch; anything else raises :class:`~cunumpy.exceptions.GraphRecaptureError` saying why.
    An argument object with ``__cuda_args__`` (a struct of arrays) counts as its values.

    On a GPU the step is captured on ``stream`` (a new non-blocking CuPy stream by default) with
    CuPy's stream capture; a replay is one graph launch. On the emulated device
    (``CUNUMPY_FAKE_CUPY=1``) a replay runs the recorded launches in order. The NumPy backend
    has no device to capture for: it raises :class:`~cunumpy.exceptions.GraphCaptureError`.

    >>> g = xp.cuda.graph(step, x, 0.0)    # doctest: +SKIP
    >>> for n in range(steps):             # doctest: +SKIP
    ...     g(x, n * dt)
    """
    label = name or getattr(fn, "__name__", None) or type(fn).__name__
    if not callable(fn):
        raise InvalidArgumentTypeError(f"graph: fn must be callable, got {type(fn).__name__}")
    if _backend.get_backend() != "cupy":
        raise GraphCaptureError(
            f"graph '{label}': the NumPy backend has no device to capture a graph on; use the "
            "CuPy backend (a GPU, or CUNUMPY_FAKE_CUPY=1 for the emulated device)"
        )
    if _capture.capturing():
        raise GraphCaptureError(
            f"graph '{label}': a graph is being captured on this thread already (graphs do "
            "not nest); call the inner step directly"
        )
    for i, a in enumerate(args):
        if isinstance(a, (bool, np.bool_)):
            raise GraphCaptureError(
                f"graph '{label}': argument {i} is a bool, which cannot be told apart from "
                "other True/False values of the step; pass it as an int (0 or 1)"
            )
    step_args = tuple(
        _capture_value(a, start) for a, (start, _) in zip(args, _groups_of(args), strict=True)
    )
    flat: list[Any] = []
    for a in step_args:
        members = _members(a)
        if members is None:
            flat.append(a)
        else:  # a struct member that is a scalar may be an object shared with the step's code
            flat.extend(_UNBOUND if _is_scalar(v) else v for v in members)
    labels = _labels(fn, args)
    cupy = _cupy_graphs()
    cupy_graph = capture_stream = None
    allocations: list[Any] | None = None
    _capture.open_captures += 1
    try:
        if cupy is None:
            _core._graph_begin(flat, None)
            start, compiled = time.perf_counter(), _core._compile_ns()
            try:
                output = fn(*step_args)
            finally:
                elapsed = time.perf_counter() - start - (_core._compile_ns() - compiled) / 1e9
                captured = _core._graph_end()
        else:
            capture_stream = stream if stream is not None else cupy.cuda.Stream(non_blocking=True)
            if capture_stream.ptr == 0:
                raise GraphCaptureError(
                    f"graph '{label}': the default stream cannot be captured; pass a stream "
                    "made with cupy.cuda.Stream(non_blocking=True), or none"
                )
            allocations = []
            with capture_stream, cupy.cuda.using_allocator(_keeping(cupy, allocations)):
                _core._graph_begin(flat, int(capture_stream.ptr))
                start, compiled = time.perf_counter(), _core._compile_ns()
                try:
                    capture_stream.begin_capture()
                    try:
                        output = fn(*step_args)
                    except BaseException as exc:
                        try:
                            capture_stream.end_capture()
                        except Exception:  # an invalidated capture also ends with an error
                            pass
                        if isinstance(exc, Exception) and not isinstance(exc, GraphError):
                            if "captur" in str(exc).lower():
                                raise GraphCaptureError(
                                    f"graph '{label}': the step did something a CUDA graph "
                                    f"capture does not allow ({type(exc).__name__}: {exc}); a "
                                    "CuPy operation that waits for the device or copies to the "
                                    "host must move out of the captured step"
                                ) from exc
                        raise
                    cupy_graph = capture_stream.end_capture()
                finally:
                    elapsed = time.perf_counter() - start - (_core._compile_ns() - compiled) / 1e9
                    captured = _core._graph_end()
            exec_handle = int(getattr(cupy_graph, "graphExec", 0) or 0)
            captured._set_exec(exec_handle)
    finally:
        _capture.open_captures -= 1
    if captured is None:
        raise GraphCaptureError(f"graph '{label}': the capture was closed by another call")
    return CudaGraph(
        label,
        captured,
        cupy_graph,
        labels,
        _groups_of(args),
        _flatten(args),
        output,
        elapsed,
        [i for i, v in enumerate(flat) if v is _UNBOUND],
        (capture_stream, allocations),
    )
