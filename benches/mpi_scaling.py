"""Weak scaling of the distributed particle pusher (examples/particle_pusher/distributed.py):
particles per rank fixed, 1, 2 and 4 ranks on this machine's CPU (``--device cpu``: NumPy;
``--device emulated``: the emulated device, with ``--stage`` to measure host staging), or 1
and 2 ranks sharing one GPU (``--device gpu``, run by scripts/gpu-check).

Each configuration is one ``mpiexec -n P`` run; the step time of a run is that of its slowest
rank (ranks wait for each other in the hand-off). Prints JSON: per rank count, the time per
step and its split (compute: gather and push; handoff: selecting and packing the leaving
particles; deposit; MPI: messages, staging included; staging copies alone), the
parallel efficiency t(1 rank) / t(P ranks) (the peer: the one-rank run of the same
invocation; 1.0 is perfect weak scaling) and the share of MPI and staging in a step.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DISTRIBUTED = ROOT / "examples" / "particle_pusher" / "distributed.py"


def mpiexec() -> str:
    here = Path(sys.executable).parent / "mpiexec"
    found = str(here) if here.exists() else shutil.which("mpiexec")
    if found is None:
        raise SystemExit("needs mpiexec: pip install mpi4py mpich (make develop does)")
    return found


def run(ranks: int, per_rank: int, steps: int, device: str, stage: bool) -> dict:
    env = dict(os.environ)
    env.pop("CUNUMPY_FAKE_CUPY", None)
    env["CUNUMPY_BACKEND"] = "numpy" if device == "cpu" else "cupy"
    if device == "emulated":
        env["CUNUMPY_FAKE_CUPY"] = "1"
    command = [
        mpiexec(), "-n", str(ranks), sys.executable, str(DISTRIBUTED),
        "--particles-per-rank", str(per_rank), "--steps", str(steps), "--deposit-every", "1",
        "--no-check",
    ] + (["--stage"] if stage else [])  # fmt: skip
    out = subprocess.run(command, capture_output=True, text=True, env=env, cwd=ROOT, check=False)
    if out.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{out.stderr[-3000:]}")
    summary = json.loads(out.stdout.strip().splitlines()[-1])
    steps_timed = summary["per_rank"][0]["timed_steps"]
    phases = ("compute", "handoff", "deposit", "mpi", "staging")
    # The slowest rank sets the pace; its phases give the split.
    slowest = max(summary["per_rank"], key=lambda r: sum(r["phases"].get(p, 0) for p in phases[:4]))
    per_step = {p: slowest["phases"].get(p, 0.0) / steps_timed * 1e3 for p in phases}
    step_ms = sum(per_step[p] for p in phases[:4])
    return {
        "ranks": ranks,
        "cuda_aware": summary["cuda_aware"],
        "step_ms": round(step_ms, 4),
        "compute_ms": round(per_step["compute"], 4),
        "handoff_ms": round(per_step["handoff"], 4),
        "deposit_ms": round(per_step["deposit"], 4),
        "mpi_ms": round(per_step["mpi"], 4),
        "staging_ms": round(per_step["staging"], 4),
        "mpi_share": round(per_step["mpi"] / step_ms, 4),
        "staging_share": round(per_step["staging"] / step_ms, 4),
        "staging_copies_per_step_per_rank": [
            round((r["staging"]["to_host"][0] + r["staging"]["to_device"][0]) / summary["steps"], 2)
            for r in summary["per_rank"]
        ],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=["cpu", "emulated", "gpu"], default="cpu")
    parser.add_argument("--particles-per-rank", type=int, default=None)
    parser.add_argument("--steps", type=int, default=None)
    parser.add_argument("--repeats", type=int, default=3, help="best of this many runs")
    parser.add_argument("--stage", action="store_true", help="force host staging (GPU)")
    opts = parser.parse_args()
    gpu = opts.device == "gpu"
    per_rank = opts.particles_per_rank or (1_000_000 if gpu else 200_000)
    steps = opts.steps or (50 if gpu else 20)
    rank_counts = (1, 2) if gpu else (1, 2, 4)
    results = []
    for ranks in rank_counts:
        runs = [run(ranks, per_rank, steps, opts.device, opts.stage) for _ in range(opts.repeats)]
        results.append(min(runs, key=lambda r: r["step_ms"]))
    base = results[0]["step_ms"]
    for r in results:
        r["parallel_efficiency"] = round(base / r["step_ms"], 4)
    print(
        json.dumps(
            {
                "benchmark": "mpi_scaling",
                "device": opts.device,
                "cpu_cores": os.cpu_count(),
                "particles_per_rank": per_rank,
                "steps": steps,
                "note": "weak scaling; step time of the slowest rank, first step left out; "
                "efficiency = t(1 rank) / t(P ranks) in the same invocation",
                "runs": results,
            },
            indent=2,
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
