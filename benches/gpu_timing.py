"""GPU timings shared by the benchmarks that compare CUDA kernels: plain CUDA events around a
run of launches (``timed_ms``: the device's time plus any wait for the host to queue the next
launch) and the same launches queued behind a spin kernel (``queued_ms``: the kernels' own
time, for kernels that run about as long as the host takes to launch them)."""

from __future__ import annotations


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


def queued_ms(cupy, run, reps: int) -> tuple[float, float]:
    """(device ms, host ms) per launch of `run`: the launches queued behind a spin kernel, so
    the device runs them back to back and the events around them time the kernels alone (a
    launch with struct arguments costs the host 0.02-0.09 ms on the H200 machine, as long as
    some of these kernels run). The same timing as the tuner's (``GeneratedCuda.tuned_kernel``),
    so that what it chooses by is what the benchmarks report."""
    from cunumpy.kernels._device_timing import queued_ms as device_queued_ms

    return device_queued_ms(cupy, run, reps)
