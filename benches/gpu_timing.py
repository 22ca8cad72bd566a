"""GPU timings shared by the benchmarks that compare CUDA kernels: plain CUDA events around a
run of launches (``timed_ms``: the device's time plus any wait for the host to queue the next
launch) and the same launches queued behind a spin kernel (``queued_ms``: the kernels' own
time, for kernels that run about as long as the host takes to launch them)."""

from __future__ import annotations

# the kernels' own time: the tuner's timing (GeneratedCuda.tuned_kernel), so that what it
# chooses by is what the benchmarks report
from cunumpy.kernels._device_timing import queued_ms

__all__ = ["queued_ms", "timed_ms"]


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
