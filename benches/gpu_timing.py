"""GPU timings shared by the benchmarks that compare CUDA kernels: plain CUDA events around a
run of launches (``timed_ms``: the device's time plus any wait for the host to queue the next
launch) and the same launches queued behind a spin kernel (``queued_ms``: the kernels' own
time, for kernels that run about as long as the host takes to launch them)."""

from __future__ import annotations

import time

import numpy as np


def timed_ms(cupy, run, reps: int) -> float:
    """Milliseconds per launch between CUDA events around `reps` launches: the device's time
    plus any time it waits for the host to queue the next launch."""
    start, stop = cupy.cuda.Event(), cupy.cuda.Event()
    run()
    start.record()
    for _ in range(reps):
        run()
    stop.record()
    stop.synchronize()
    return cupy.cuda.get_elapsed_time(start, stop) / reps


_SPIN = r"""
extern "C" __global__ void spin(long long cycles) {
    const long long start = clock64();
    while (clock64() - start < cycles) {
    }
}
"""


def queued_ms(cupy, run, reps: int) -> tuple[float, float]:
    """(device ms, host ms) per launch of `run`. The launches are queued behind a one-thread
    kernel that spins for longer than the host takes to queue them, so the device runs them
    back to back and the events around them time the kernels alone: a launch with struct
    arguments costs the host 0.02-0.09 ms (H200 machine), as long as some of these kernels run,
    and between plain events the device would wait for the host. The host's time per launch
    is returned beside it."""
    spin = cupy.RawKernel(_SPIN, "spin")
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
    raise RuntimeError("the launches could not be queued behind the spin kernel")
