"""A time step as one CUDA graph (issue 25), measured in one process:

1. the walk-through's time step (the `gather_field` and `boris_push` kernels of
   `examples/particle_pusher`) at 1e4 and 1e5 particles, eager against `xp.cuda.graph`
   replays (median of five runs of µs per step), with the two loops' results compared;
2. 20 small dependent kernels per step: our `CudaKernel`s captured with `xp.cuda.graph` and
   replayed, against the same 20 launches of a CuPy `RawKernel` captured with CuPy's own
   stream capture and replayed with `cupy.cuda.Graph.launch` (and both eager, for scale).

Targets: graph at least 3x faster per step than eager at 1e4 particles and never slower; our
replay within 10% of CuPy's. Prints JSON. Needs a GPU: `python benches/cuda_graphs.py`.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
CHAIN = r"""
extern "C" __global__ void chain(double* y, double a, double b, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = y[i] * a + b;
}
"""


def per_step_us(run, steps: int, sync) -> float:
    """µs per step of `steps` calls of `run`, the device waited for at the end."""
    sync()
    start = time.perf_counter()
    for _ in range(steps):
        run()
    sync()
    return (time.perf_counter() - start) / steps * 1e6


def median_us(run, steps: int, sync, runs: int = 5) -> float:
    return statistics.median(per_step_us(run, steps, sync) for _ in range(runs))


def walkthrough(n: int, steps: int, runs: int) -> dict:
    """Eager step against graph replay at `n` particles, and whether they give equal states."""
    import cupy

    import cunumpy as xp

    sys.path.insert(0, str(HERE.parent / "examples" / "particle_pusher"))
    import walkthrough as w

    sync = cupy.cuda.get_current_stream().synchronize
    eager = w.Simulation(w.load_catalog("raise"), n)
    graphed = w.Simulation(w.load_catalog("raise"), n)
    eager.push()  # compiles both kernels and fills the argument caches
    graphed.push()
    push = xp.cuda.graph(graphed.push)  # captured, not run: both have made one step
    for _ in range(20):  # warm both
        eager.push()
        push()
    a, b = eager.state(), graphed.state()
    same = {k: bool(np.array_equal(a[k], b[k])) for k in a}
    # interleave the two so drift affects both alike
    eager_us, graph_us = [], []
    for _ in range(runs):
        eager_us.append(per_step_us(eager.push, steps, sync))
        graph_us.append(per_step_us(push, steps, sync))
    e, g = statistics.median(eager_us), statistics.median(graph_us)
    return {
        "particles": n,
        "kernels_per_step": push.kernels,
        "eager_us_per_step": round(e, 3),
        "graph_us_per_step": round(g, 3),
        "speedup": round(e / g, 3),
        "results_equal": all(same.values()),
    }


def twenty_kernels(steps: int, runs: int, n: int = 1024, kernels: int = 20) -> dict:
    """20 dependent small kernels per step: ours captured and replayed against CuPy's."""
    import cupy

    import cunumpy as xp

    stream = cupy.cuda.Stream(non_blocking=True)
    ours = xp.kernels.CudaKernel(CHAIN, "chain")
    raw = cupy.RawKernel(CHAIN, "chain")
    block = 128
    grid = (n + block - 1) // block

    with stream:
        y_ours = cupy.ones(n)
        y_cupy = cupy.ones(n)
        a, b = 0.5, 1.0

        def step_ours(y):
            for _ in range(kernels):
                ours(y, a, b, n, n_threads=n)

        def step_cupy():
            for _ in range(kernels):
                raw((grid,), (block,), (y_cupy, np.float64(a), np.float64(b), np.int32(n)))

        step_ours(y_ours)  # compile, fill caches
        step_cupy()
        ours_graph = xp.cuda.graph(step_ours, y_ours)
        capture = cupy.cuda.Stream(non_blocking=True)
        with capture:
            capture.begin_capture()
            step_cupy()
            cupy_graph = capture.end_capture()
        sync = stream.synchronize
        for _ in range(20):
            ours_graph()
            cupy_graph.launch(stream)
        sync()
        # equal results: the same recurrence from the same start, the same number of steps
        y_ours[...] = 1.0
        y_cupy[...] = 1.0
        for _ in range(3):
            ours_graph()
            cupy_graph.launch(stream)
        sync()
        equal = bool(cupy.array_equal(y_ours, y_cupy))
        expected = np.ones(n)
        for _ in range(3 * kernels):
            expected = expected * a + b
        matches_numpy = bool(np.allclose(y_ours.get(), expected, rtol=1e-15))

        timings: dict[str, list[float]] = {
            "cunumpy_graph": [],
            "cupy_graph": [],
            "cunumpy_eager": [],
            "cupy_eager": [],
        }
        loops = {
            "cunumpy_graph": ours_graph,
            "cupy_graph": lambda: cupy_graph.launch(stream),
            "cunumpy_eager": lambda: step_ours(y_ours),
            "cupy_eager": step_cupy,
        }
        for _ in range(runs):
            for name, loop in loops.items():
                timings[name].append(per_step_us(loop, steps, sync))
    med = {k: statistics.median(v) for k, v in timings.items()}
    return {
        "kernels_per_step": kernels,
        "elements": n,
        **{f"{k}_us_per_step": round(v, 3) for k, v in med.items()},
        "ratio_cunumpy_graph_vs_cupy_graph": round(med["cunumpy_graph"] / med["cupy_graph"], 3),
        "ratio_cunumpy_eager_vs_graph": round(med["cunumpy_eager"] / med["cunumpy_graph"], 3),
        "results_equal": equal,
        "matches_numpy": matches_numpy,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--device", default="gpu")
    opts = parser.parse_args()

    import os

    import cunumpy as xp

    if not xp.cupy_available():
        print(json.dumps({"benchmark": "cuda_graphs", "skipped": "needs CuPy and a GPU"}))
        return
    if hasattr(os, "sched_setaffinity"):  # launch loops are CPU-bound: one core for all
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    with xp.use_backend("cupy"):
        walk = [walkthrough(n, opts.steps, opts.runs) for n in (10_000, 100_000)]
        chain = twenty_kernels(opts.steps, opts.runs)
    out = {
        "benchmark": "cuda_graphs",
        "device": xp.backend_info()["device"],
        "steps_per_run": opts.steps,
        "runs": opts.runs,
        "walkthrough_step": walk,
        "twenty_small_kernels": chain,
        "targets": {
            "speedup_at_1e4_at_least_3": walk[0]["speedup"] >= 3.0,
            "never_slower": all(w["speedup"] >= 1.0 for w in walk),
            "within_10_percent_of_cupy_graph": chain["ratio_cunumpy_graph_vs_cupy_graph"] <= 1.10,
            "results_equal": all(w["results_equal"] for w in walk) and chain["results_equal"],
        },
    }
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
