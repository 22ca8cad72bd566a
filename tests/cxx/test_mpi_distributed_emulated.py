"""The distributed particle pusher on the emulated device under mpiexec: MPI takes the
emulated device's arrays directly (they are host memory), or, with --stage, through host
staging buffers, counted per rank; the result equals the one-rank run either way."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from cpu.test_mpi_distributed import DISTRIBUTED, check_summary  # noqa: E402
from mpi_launch import run  # noqa: E402

pytestmark = [
    pytest.mark.cxx,
    pytest.mark.skipif(
        shutil.which("c++") is None and shutil.which("g++") is None,
        reason="needs a C++ compiler",
    ),
]

STEPS = 6


@pytest.mark.parametrize(("ranks", "stage"), [(1, False), (2, False), (2, True), (4, True)])
def test_distributed_pusher_on_the_emulated_device(ranks, stage):
    args = ["--particles-per-rank", "256", "--steps", str(STEPS)] + (["--stage"] if stage else [])
    out = run(DISTRIBUTED, *args, ranks=ranks, backend="emulated")
    summary = check_summary(out.stdout, ranks, 256, STEPS)
    assert summary["backend"] == "cupy" and summary["cuda_aware"] is (not stage)
    per_rank = summary["per_rank"]
    if not stage:
        for r in per_rank:
            assert r["staging"] == {"to_host": [0, 0], "to_device": [0, 0]}
        return
    for r in per_rank:
        # Each step hands off two buffers each way, the deposit one halo column each way.
        assert r["staging"]["to_host"][0] == 2 * STEPS + 1
        assert r["staging"]["to_device"][0] == 2 * STEPS + 1
    # Every staged byte sent is staged back in on its receiver.
    sent = sum(r["staging"]["to_host"][1] for r in per_rank)
    assert sent == sum(r["staging"]["to_device"][1] for r in per_rank) >= ranks * 32 * 8
