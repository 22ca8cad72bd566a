"""The distributed particle pusher (examples/particle_pusher/distributed.py) on NumPy under
mpiexec: its result equals the one-rank run (count, charge and every particle exactly, the grid
within rounding); the emulated-device runs are in tests/cxx."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from mpi_launch import ROOT, run  # noqa: E402

DISTRIBUTED = ROOT / "examples" / "particle_pusher" / "distributed.py"


def check_summary(out: str, ranks: int, per_rank: int, steps: int) -> dict:
    summary = json.loads(out.strip().splitlines()[-1])
    assert summary["ranks"] == ranks and summary["particles_total"] == per_rank * ranks
    check = summary["check"]
    assert check["count"] == per_rank * ranks and check["count_equal"]
    assert check["charge_equal"] and check["particles_equal"]
    # The halo sums add the same terms in another order: equal within rounding, not bitwise.
    assert check["grid_equal_within_rounding"] and check["grid_max_rel_diff"] < 1e-13
    assert sum(r["particles"] for r in summary["per_rank"]) == per_rank * ranks
    return summary


@pytest.mark.parametrize("ranks", [None, 1, 2, 4])
def test_distributed_pusher_on_numpy(ranks):
    args = ("--particles-per-rank", "512", "--steps", "12")
    out = run(DISTRIBUTED, *args, ranks=ranks, backend="numpy")
    summary = check_summary(out.stdout, ranks or 1, 512, 12)
    assert summary["backend"] == "numpy"
    for r in summary["per_rank"]:
        assert r["staging"] == {"to_host": [0, 0], "to_device": [0, 0]}  # host arrays
