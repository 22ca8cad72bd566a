"""Choosing a generated kernel's build by timing: the same source built a few ways (the reserve
checks with or without their message, a register cap), each launched on the caller's arguments
with the arrays the kernel writes put back before every launch and after the last, and the
fastest returned. Why measured and not predicted: on the H200 each of three builds was the
fastest for some of struphy's kernels, and no register count told which
(benches/results/generated-cuda-struphy-h200-2026-12-03-s14)."""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Mapping, Sequence
from typing import Any

from ..exceptions import InvalidArgumentError
from ._cuda_kernel import compile_kernels

#: The builds tried by default, by label: ``CudaKernel`` options added to the caller's.
CANDIDATES: dict[str, dict[str, Any]] = {
    "shipped": {},
    "trap-only checks": {"options": ["-DCUNUMPY_PORT_CAP_TRAP_ONLY"]},
    "trap-only checks, 80 registers": {
        "options": ["-DCUNUMPY_PORT_CAP_TRAP_ONLY"],
        "max_registers": 80,
    },
}


def written_arrays(source: Any, args: Sequence[Any]) -> dict[str, Any]:
    """The arrays in device memory that ``source``'s kernel writes, by name
    (``args_markers.markers`` for a struct field), taken from positional ``args``."""
    by_name = dict(zip(source.params, args, strict=False))
    found: dict[str, Any] = {}
    for name, _line, how in source.writes:
        if how == "private" or name in found:  # a thread's own scratch: not in device memory
            continue
        head, _, field = name.partition(".")
        if head not in by_name:
            raise InvalidArgumentError(
                f"{source.kernel}: tuning needs argument {head!r} (the kernel writes {name!r}); "
                f"expected {len(source.params)} positional arguments, got {len(args)}"
            )
        arg = by_name[head]
        if field:
            fields = getattr(arg, "values", None)
            if hasattr(arg, "__cuda_struct__") and isinstance(fields, dict):
                arg = fields.get(field)
            else:
                arg = getattr(arg, field, None)
        if not hasattr(arg, "copy") or not hasattr(arg, "shape"):
            raise InvalidArgumentError(
                f"{source.kernel}: tuning puts back what the kernel writes; expected an array "
                f"for {name!r}, got {type(arg).__name__}"
            )
        found[name] = arg
    return found


#: On a GPU, the launches of one timed round: as many as take about this many milliseconds...
ROUND_MS = 2.0
#: ... and at most this many.
ROUND_LAUNCHES_CAP = 200


def _round_timer(arrays: Mapping[str, Any]) -> tuple[Any, Any]:
    """``(launches_per_round(run), ms_per_launch(run, launches))``. Where the arrays are
    CuPy's: a round is a batch of launches queued behind a spin kernel
    (``_device_timing.queued_ms``), so the events time the kernels and not the host's work to
    launch them (on struphy's pushers that work is as long as the kernel, and timing single
    launches between events chose builds 20% slower on the H200: benches/results/
    generated-cuda-struphy-h200-2026-12-04-s17). Elsewhere (the emulated device runs a launch
    before returning) one launch on the host clock."""
    cupy = sys.modules.get("cupy")
    on_gpu = cupy is not None and not getattr(cupy, "__cunumpy_fake__", False)
    if on_gpu and any(isinstance(a, cupy.ndarray) for a in arrays.values()):
        from ._device_timing import queued_ms

        def launches(run: Any) -> int:
            one_ms = max(queued_ms(cupy, run, 1)[0], 1e-4)
            return max(1, min(ROUND_LAUNCHES_CAP, round(ROUND_MS / one_ms)))

        return launches, lambda run, n: queued_ms(cupy, run, n)[0]

    def host_ms(run: Any, n: int) -> float:
        start = time.perf_counter()
        for _ in range(n):
            run()
        return (time.perf_counter() - start) * 1e3 / n

    return (lambda run: 1), host_ms


def candidate_builds(
    source: Any, candidates: Mapping[str, Mapping[str, Any]] | None = None, **options: Any
) -> dict[str, Any]:
    """The ``CudaKernel`` of each candidate build of ``source`` by label, not yet compiled: the
    candidate's options added to ``options`` (its compile options after the caller's)."""
    builds: dict[str, Any] = {}
    for label, extra in (CANDIDATES if candidates is None else candidates).items():
        settings = {**options, **extra}
        settings["options"] = [*options.get("options", ()), *extra.get("options", ())]
        builds[label] = source.cuda_kernel(**settings)
    return builds


def fastest_build(
    source: Any,
    args: Sequence[Any],
    *,
    candidates: Mapping[str, Mapping[str, Any]] | None = None,
    repeats: int = 5,
    launch: Mapping[str, Any] | None = None,
    **options: Any,
) -> tuple[str, Any, dict[str, float]]:
    """``(label, kernel, median ms a launch by label)``: each candidate build of ``source``
    launched on ``args`` once untimed, then timed in ``repeats`` rounds, the candidates in turn
    (the first of a round moves on each round, so none always meets a device that idled); a
    round is one launch, or on a GPU a batch of launches queued behind a spin kernel. The
    arrays the kernel writes are put back before every round and after the last; ``kernel``
    is the fastest build."""
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise InvalidArgumentError(
            f"{source.kernel}: tuning's repeats: expected an int >= 1, got {repeats!r}"
        )
    candidates = CANDIDATES if candidates is None else candidates
    if not candidates:
        raise InvalidArgumentError(f"{source.kernel}: tuning needs at least one candidate build")
    written = written_arrays(source, args)
    saved = {name: array.copy() for name, array in written.items()}

    def put_back() -> None:
        for name, array in written.items():
            array[...] = saved[name]

    launches_per_round, ms_per_launch = _round_timer(written)
    builds = candidate_builds(source, candidates, **options)
    # all at once: a heavy kernel's compile takes minutes, and each lets go of the GIL
    compile_kernels(builds, jobs=len(builds))
    runs = {
        label: (lambda k=kernel: k(*args, **(launch or {}))) for label, kernel in builds.items()
    }
    labels = list(runs)
    rounds: dict[str, list[float]] = {label: [] for label in labels}
    try:
        for label in labels:  # the first launch: not timed (it loads the module)
            put_back()
            runs[label]()
        put_back()
        n = launches_per_round(runs[labels[0]])
        for r in range(repeats):
            for label in labels[r % len(labels) :] + labels[: r % len(labels)]:
                put_back()
                rounds[label].append(ms_per_launch(runs[label], n))
    finally:
        put_back()
    times = {label: statistics.median(ms) for label, ms in rounds.items()}
    best = min(times, key=times.__getitem__)
    return best, builds[best], times
