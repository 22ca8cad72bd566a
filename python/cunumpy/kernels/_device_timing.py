"""Timing kernel launches on a GPU by what the device spends on them: launches queued behind a
spin kernel, so that CUDA events around them time the kernels and not the host's work to launch
them. Shared by the tuner (``_tune``) and the benchmarks (``benches/gpu_timing.py``). Why:
a launch with struct arguments costs the host 0.01-0.09 ms (H200 machine), as long as many of
struphy's kernels run, so between plain events the device would mostly wait for the host, and a
build that is faster on the device would not show it."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from ..exceptions import CudaRuntimeError

_SPIN = r"""
extern "C" __global__ void spin(long long cycles) {
    const long long start = clock64();
    while (clock64() - start < cycles) {
    }
}
"""

#: the spin kernel, by CuPy device id (a RawKernel loads its module per device)
_spin_kernels: dict[int, Any] = {}


def _spin(cupy: Any) -> Any:
    device = cupy.cuda.Device().id
    if device not in _spin_kernels:
        _spin_kernels[device] = cupy.RawKernel(_SPIN, "spin")
    return _spin_kernels[device]


def queued_ms(cupy: Any, run: Callable[[], Any], reps: int) -> tuple[float, float]:
    """(device ms, host ms) per launch of ``run``, over ``reps`` launches queued behind a
    one-thread kernel that spins for longer than the host takes to queue them (measured first,
    from one untimed launch and ``reps`` plain ones), so the device runs them back to back. The
    spin is doubled up to three times where the host was still queuing when it ended."""
    import numpy as np

    spin = _spin(cupy)
    clock_khz = cupy.cuda.Device().attributes["ClockRate"]
    run()
    cupy.cuda.Device().synchronize()
    t = time.perf_counter()
    for _ in range(reps):
        run()
    host_s = time.perf_counter() - t
    cupy.cuda.Device().synchronize()
    start, stop = cupy.cuda.Event(), cupy.cuda.Event()
    for attempt in range(4):
        spin_s = (2.0 * host_s + 0.002) * 2**attempt
        spin((1,), (1,), (np.int64(spin_s * clock_khz * 1e3),))
        start.record()
        for _ in range(reps):
            run()
        stop.record()
        queued_behind_spin = not start.done  # the spin still ran when the last one was queued
        stop.synchronize()
        if queued_behind_spin:
            return cupy.cuda.get_elapsed_time(start, stop) / reps, host_s * 1e3 / reps
    raise CudaRuntimeError(
        f"timing launches on the device: {reps} launches could not be queued behind the spin "
        f"kernel (its last spin {spin_s:.4f} s; the host took {host_s:.4f} s to queue them "
        "unqueued)"
    )
