"""µs per launch of a 1-thread kernel: cunumpy CudaKernel (checks on) vs CuPy RawKernel (no
checks) vs raw driver launches in a Rust loop (the floor), measured in one process.

Prints JSON. Needs a GPU: `python benches/launch_overhead.py [--launches N]`.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

SOURCE = r"""
extern "C" __global__ void touch(double* x, int n) {
    if (threadIdx.x == 0 && n < 0) x[0] = 1.0;
}
"""


def best_us(run, launches: int, repeats: int) -> float:
    """Best (lowest) µs per launch over `repeats` timed loops of `launches` launches."""
    best = float("inf")
    for _ in range(repeats):
        best = min(best, run(launches) / launches * 1e6)
    return best


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--launches", type=int, default=20000)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--device", default="gpu")
    opts = parser.parse_args()

    import os

    import cupy

    import cunumpy as xp

    # One core for the whole run: launch loops are CPU-bound, and a thread that migrates
    # between cores mid-loop makes the three paths incomparable.
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})

    x = cupy.zeros(4, dtype=np.float64)
    stream = cupy.cuda.get_current_stream()
    kernel = xp.kernels.CudaKernel(SOURCE, "touch", block_size=1)
    raw = cupy.RawKernel(SOURCE, "touch")
    n = np.int32(1)

    def cunumpy_loop(count: int) -> float:
        start = time.perf_counter()
        for _ in range(count):
            kernel(x, 1, n_threads=1)
        stream.synchronize()
        return time.perf_counter() - start

    def tp_call_loop(count: int) -> float:
        # the same call through tp_call (the slot wrapper), the protocol before vectorcall
        call = type(kernel).__call__
        start = time.perf_counter()
        for _ in range(count):
            call(kernel, x, 1, n_threads=1)
        stream.synchronize()
        return time.perf_counter() - start

    def cupy_loop(count: int) -> float:
        start = time.perf_counter()
        for _ in range(count):
            raw((1,), (1,), (x, n))
        stream.synchronize()
        return time.perf_counter() - start

    def floor_loop(count: int) -> float:
        return kernel._raw_launch_loop(x, 1, n_launches=count, n_threads=1)

    def stream_lookup(count: int) -> float:
        start = time.perf_counter()
        for _ in range(count):
            cupy.cuda.get_current_stream().ptr  # noqa: B018 - the cost being measured
        return time.perf_counter() - start

    def bare_loop(count: int) -> float:
        bare = kernel._bare_launch
        start = time.perf_counter()
        for _ in range(count):
            bare()
        stream.synchronize()
        return time.perf_counter() - start

    def check_only(count: int) -> float:
        check = kernel._check_args
        start = time.perf_counter()
        for _ in range(count):
            check(x, 1)
        return time.perf_counter() - start

    def empty_grid(count: int) -> float:
        # Everything before the compile/launch step: flattening, the launch shape, the device,
        # the argument cache check (an empty grid returns there).
        start = time.perf_counter()
        for _ in range(count):
            kernel(x, 1, n_threads=0)
        return time.perf_counter() - start

    for warm in (cunumpy_loop, cupy_loop, floor_loop):
        warm(200)
    results = {}
    # Interleave the three paths so drift affects all of them alike.
    for _ in range(5):
        for name, loop in (
            ("floor_us", floor_loop),
            ("cunumpy_us", cunumpy_loop),
            ("cupy_rawkernel_us", cupy_loop),
            ("bare_pyo3_launch_us", bare_loop),
            ("cunumpy_tp_call_us", tp_call_loop),
        ):
            value = best_us(loop, opts.launches, opts.repeats)
            results[name] = min(results.get(name, value), value)
    # Where the time goes: Rust loops adding one step of the repeat path at a time to the bare
    # driver launch, and the whole repeat path without the Python call (best of 5).
    breakdown: dict[str, float] = {}
    for _ in range(5):
        for key, value in kernel._launch_breakdown(x, 1, n_launches=opts.launches).items():
            breakdown[key] = min(breakdown.get(key, value), value)
    results["stream_lookup_us"] = best_us(stream_lookup, opts.launches, 3)
    results["argument_check_only_us"] = best_us(check_only, opts.launches, 3)
    results["call_before_launch_us"] = best_us(empty_grid, opts.launches, 3)
    out = {
        "benchmark": "launch_overhead",
        "device": xp.backend_info()["device"],
        "launches_per_loop": opts.launches,
        **{k: round(v, 3) for k, v in results.items()},
        "rust_breakdown_us": {k: round(v, 3) for k, v in breakdown.items()},
        "ratio_vs_floor": round(results["cunumpy_us"] / results["floor_us"], 3),
        "ratio_vs_cupy_rawkernel": round(results["cunumpy_us"] / results["cupy_rawkernel_us"], 3),
        # A Python call into a Rust launcher that checks nothing: the least any checked path
        # can cost (the stream is not even looked up).
        "ratio_bare_pyo3_vs_floor": round(results["bare_pyo3_launch_us"] / results["floor_us"], 3),
        "targets": {"ratio_vs_floor": 1.25, "ratio_vs_cupy_rawkernel": 0.7},
    }
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
