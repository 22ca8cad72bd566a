"""Generated vs hand-written CUDA: the charge deposit and a Boris-style push of the particle
pusher example, each as its hand-written kernel (examples/particle_pusher/pusher, a `Particles`
struct argument) and as the kernel `xp.kernels.generate_cuda` writes from a typed host kernel of
the same arithmetic (separate arrays), on the same data, in one process, interleaved. Median of
five timed rounds, the two sides' order alternating; ``ratio`` = hand-written time / generated
time (>= 1: the generated kernel is as fast). Each timing queues the launches behind a spin
kernel (``gpu_timing.queued_ms``), so it is the kernels' time and not the host's work to launch
them (the hand-written kernels' struct argument costs the host more per launch); the times
between plain CUDA events and the host's time per launch are reported beside it.

Prints JSON. Needs a GPU: ``python benches/generated_cuda.py [--n N] [--device gpu]``.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from pathlib import Path

import numpy as np
from gpu_timing import queued_ms, timed_ms

ROOT = Path(__file__).resolve().parents[1]


def deposit(x: float[:], y: float[:], w: float[:], rho: float[:, :], dx: float, dy: float):
    nx, ny = rho.shape
    inv_area = 1.0 / (dx * dy)
    for i in range(x.shape[0]):
        gx = x[i] / dx
        gy = y[i] / dy
        i0 = int(math.floor(gx))
        j0 = int(math.floor(gy))
        fx = gx - i0
        fy = gy - j0
        i0 %= nx
        j0 %= ny
        i1 = (i0 + 1) % nx
        j1 = (j0 + 1) % ny
        q = w[i] * inv_area
        rho[i0, j0] += q * (1 - fx) * (1 - fy)
        rho[i1, j0] += q * fx * (1 - fy)
        rho[i0, j1] += q * (1 - fx) * fy
        rho[i1, j1] += q * fx * fy


def push(
    x: float[:], y: float[:], vx: float[:], vy: float[:], ex: float[:], ey: float[:],
    bz: float, qm: float, dt: float, lx: float, ly: float,
):  # fmt: skip
    h = 0.5 * qm * dt
    tz = h * bz
    sz = 2.0 * tz / (1.0 + tz * tz)
    for i in range(x.shape[0]):
        ux = vx[i] + h * ex[i]
        uy = vy[i] + h * ey[i]
        px = ux + uy * tz
        py = uy - ux * tz
        ux = ux + py * sz
        uy = uy - px * sz
        ux = ux + h * ex[i]
        uy = uy + h * ey[i]
        vx[i] = ux
        vy[i] = uy
        xn = x[i] + ux * dt
        yn = y[i] + uy * dt
        x[i] = xn - lx * math.floor(xn / lx)
        y[i] = yn - ly * math.floor(yn / ly)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=4_000_000)
    parser.add_argument("--reps", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--device", default="gpu")  # accepted and ignored (GPU only)
    opts = parser.parse_args()

    import cupy

    from cunumpy.kernels import CudaKernel, generate_cuda

    sys.path.insert(0, str(ROOT / "examples" / "particle_pusher"))
    from particles import DeviceParticles

    pusher = ROOT / "examples" / "particle_pusher" / "pusher"
    rng = np.random.default_rng(0)
    n, nx, ny = opts.n, 256, 256
    x, y = (cupy.asarray(rng.uniform(0.0, 1.0, n)) for _ in range(2))
    vx, vy, vz = (cupy.asarray(rng.normal(size=n)) for _ in range(3))
    w = cupy.asarray(rng.uniform(0.5, 1.5, n))
    ex, ey = (cupy.asarray(rng.normal(size=n)) for _ in range(2))
    rho = cupy.zeros((nx, ny))
    p = DeviceParticles(x, y, vx, vy, vz, w)

    hand_dep = CudaKernel.from_file(
        pusher / "deposit_charge" / "deposit_charge_cuda.cu", structs=[DeviceParticles.struct]
    )
    hand_push = CudaKernel.from_file(
        pusher / "boris_push" / "boris_push_cuda.cu", structs=[DeviceParticles.struct]
    )
    gen_dep = generate_cuda(deposit).cuda_kernel()
    gen_push = generate_cuda(push).cuda_kernel()
    dx, dy = 1.0 / nx, 1.0 / ny
    pairs = {
        "deposit": (
            lambda: hand_dep(p, rho, dx, dy, n_threads=n),
            lambda: gen_dep(x, y, w, rho, dx, dy, n_threads=n),
        ),
        "push": (
            lambda: hand_push(p, ex, ey, 2.0, -1.0, 1e-3, 1.0, 1.0, n_threads=n),
            lambda: gen_push(x, y, vx, vy, ex, ey, 2.0, -1.0, 1e-3, 1.0, 1.0, n_threads=n),
        ),
    }
    results = {}
    for name, (hand, gen) in pairs.items():
        times: dict[str, list[float]] = {
            k: [] for k in ("hand", "gen", "hand_events", "gen_events", "hand_host", "gen_host")
        }
        sides = [("hand", hand), ("gen", gen)]
        for r in range(opts.rounds):
            # the order alternates: neither side always meets a device that idled before it
            for side, run in sides if r % 2 == 0 else sides[::-1]:
                device_ms, host_ms = queued_ms(cupy, run, opts.reps)
                times[side].append(device_ms)
                times[f"{side}_host"].append(host_ms)
                times[f"{side}_events"].append(timed_ms(cupy, run, opts.reps))
        med = {k: statistics.median(v) for k, v in times.items()}
        results[name] = {
            "hand_written_ms": med["hand"],
            "generated_ms": med["gen"],
            "ratio": med["hand"] / med["gen"],
            # between plain events (the device may wait for the host) and the host's time
            "hand_written_events_ms": med["hand_events"],
            "generated_events_ms": med["gen_events"],
            "hand_written_host_ms": med["hand_host"],
            "generated_host_ms": med["gen_host"],
        }
    print(
        json.dumps(
            {"benchmark": "generated_cuda", "n": n, "timing": "queued", "results": results},
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
