"""xp.mpi on the GPU: two ranks sharing one device (the H200), under the mpiexec of the MPICH
wheel that scripts/gpu-check installs. Device buffers go to MPI directly if it is CUDA-aware,
else through pinned host staging (the MPICH wheel reports no CUDA support, so: staging)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from cpu.test_mpi_distributed import DISTRIBUTED, check_summary  # noqa: E402
from mpi_launch import ROOT, run  # noqa: E402

pytestmark = pytest.mark.gpu


def test_staging_counted_per_rank_on_the_gpu():
    out = run(ROOT / "tests/programs/mpi_staging.py", ranks=2, backend="gpu")
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["backend"] == "cupy" and len(report["ranks"]) == 2
    for r in report["ranks"]:
        assert r["allreduce_aware_False"] == {"to_host": [1, 8000], "to_device": [1, 8000]}
        per_way = [6, 3 * (7 + 300) * 8]
        assert r["exchange_3_steps"] == {"to_host": per_way, "to_device": per_way}
        assert r["strided"] == {"to_host": [1, 48], "to_device": [1, 48]}
        assert r["pool_after_step_3"]["allocations"] == r["pool_after_step_1"]["allocations"]
        if r["aware_probe"]:
            assert r["allreduce_aware_True"] == {"to_host": [0, 0], "to_device": [0, 0]}
    # Both ranks agree on the probe (it ends in an allreduce).
    assert len({r["aware_probe"] for r in report["ranks"]}) == 1


@pytest.mark.parametrize(("ranks", "stage"), [(1, False), (2, False), (2, True)])
def test_distributed_pusher_on_the_gpu(ranks, stage):
    args = ["--particles-per-rank", "20000", "--steps", "20"] + (["--stage"] if stage else [])
    out = run(DISTRIBUTED, *args, ranks=ranks, backend="gpu")
    summary = check_summary(out.stdout, ranks, 20000, 20)
    assert summary["backend"] == "cupy"
    if ranks == 2:
        # Two ranks on one GPU: reported once.
        assert out.stderr.count("SharedDeviceWarning") == 1, out.stderr
    if stage or not summary["cuda_aware"]:
        for r in summary["per_rank"]:
            assert r["staging"]["to_host"][0] == r["staging"]["to_device"][0] == 2 * 20 + 2
