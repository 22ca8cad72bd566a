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


def _timer(arrays: Mapping[str, Any]) -> Any:
    """Milliseconds of one call of ``run()``: CUDA events where the arrays are CuPy's, else the
    host clock (the emulated device runs a launch before returning)."""
    cupy = sys.modules.get("cupy")
    on_gpu = cupy is not None and not getattr(cupy, "__cunumpy_fake__", False)
    if on_gpu and any(isinstance(a, cupy.ndarray) for a in arrays.values()):

        def gpu_ms(run: Any) -> float:
            start, stop = cupy.cuda.Event(), cupy.cuda.Event()
            start.record()
            run()
            stop.record()
            stop.synchronize()
            return float(cupy.cuda.get_elapsed_time(start, stop))

        return gpu_ms

    def host_ms(run: Any) -> float:
        start = time.perf_counter()
        run()
        return (time.perf_counter() - start) * 1e3

    return host_ms


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
    """``(label, kernel, median ms by label)``: each candidate build of ``source`` launched
    ``repeats`` times on ``args`` (after one untimed launch), the written arrays put back
    before every launch and after the last; ``kernel`` is the fastest build."""
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

    measure = _timer(written)
    builds = candidate_builds(source, candidates, **options)
    # all at once: a heavy kernel's compile takes minutes, and each lets go of the GIL
    compile_kernels(builds, jobs=len(builds))
    times: dict[str, float] = {}
    try:
        for label, kernel in builds.items():
            put_back()
            kernel(*args, **(launch or {}))  # the first launch: not timed
            runs = []
            for _ in range(repeats):
                put_back()
                runs.append(measure(lambda k=kernel: k(*args, **(launch or {}))))
            times[label] = statistics.median(runs)
    finally:
        put_back()
    best = min(times, key=times.__getitem__)
    return best, builds[best], times
