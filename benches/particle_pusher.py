"""One time step (gather + push) of the particle pusher walk-through with 10^6 particles: the
NumPy backend (vectorised NumPy host kernels) vs the GPU (all kernels ported), one process.

Prints JSON; needs a GPU. Target: the GPU step at least 20x faster than the NumPy step.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples" / "particle_pusher"))

import walkthrough  # noqa: E402

import cunumpy as xp  # noqa: E402
from cunumpy.kernels import use_host_kernel_implementation  # noqa: E402


def time_steps(n: int, steps: int, repeats: int) -> float:
    sim = walkthrough.Simulation(walkthrough.load_catalog("raise"), n)
    sim.step()  # compile / warm up
    xp.synchronize()
    best = float("inf")
    for _ in range(repeats):
        sim.history.clear()
        start = time.perf_counter()
        for _ in range(steps):
            sim.step()
        xp.synchronize()
        best = min(best, (time.perf_counter() - start) / steps)
    return best


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--particles", type=int, default=1_000_000)
    parser.add_argument("--device", default="gpu")
    opts = parser.parse_args()
    with xp.use_backend("numpy"), use_host_kernel_implementation("numpy"):
        numpy_s = time_steps(opts.particles, 3, 3)
    with xp.use_backend("cupy", strict=True):
        gpu_s = time_steps(opts.particles, 50, 5)
    print(
        json.dumps(
            {
                "benchmark": "particle_pusher_step",
                "particles": opts.particles,
                "numpy_step_ms": round(numpy_s * 1e3, 3),
                "gpu_step_ms": round(gpu_s * 1e3, 4),
                "speedup": round(numpy_s / gpu_s, 1),
                "target_speedup": 20,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
