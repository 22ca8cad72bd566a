"""``xp.mpi`` and the device binding of ``xp.cuda``: serially in this process, and programs
under a real ``mpiexec`` (MPICH) on 1, 2 and 4 ranks, on NumPy and on the emulated device."""

from __future__ import annotations

import inspect
import json
import re
import sys
from pathlib import Path

import maybempi
import numpy as np
import pytest

import cunumpy as xp
from cunumpy.exceptions import DeviceSelectionError, MPIStagingError

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from mpi_launch import ROOT, run  # noqa: E402

PROGRAMS = ROOT / "tests" / "programs"


def rank_lines(stdout: str) -> list[str]:
    """The program's per-rank lines, sorted. Separate processes share the launcher's stdout, so
    their lines may arrive interleaved (one rank's line glued to another's): split by content."""
    return sorted(re.findall(r"rank \d+/\d+ .*?local_rank=\d+", stdout))


# cunumpy 0.7.1's xp.mpi names (written down here, from its documentation's API list).
NAMES_07 = {
    "OVERRIDE_VARIABLE", "MPIStaging", "SerialComm", "SerialMPI", "SerialRequest", "SerialStatus",
    "exchange", "get_mpi", "get_mpi_cuda_aware", "is_serial", "launched_under_mpi", "local_rank",
    "mpi_buffer", "mpi_is_cuda_aware", "require_cuda_aware_mpi", "set_mpi_cuda_aware",
    "synchronize_for_mpi",
}  # fmt: skip

# Parameters of the functions (names and order), as in 0.7.1.
SIGNATURES_07 = {
    "MPIStaging": ["shape", "dtype"],
    "exchange": ["comm", "sends", "receives", "cuda_aware"],
    "mpi_buffer": ["array", "send", "recv", "cuda_aware", "staging", "stream", "event"],
    "mpi_is_cuda_aware": ["comm", "method"],
    "require_cuda_aware_mpi": ["comm"],
    "set_mpi_cuda_aware": ["value"],
    "synchronize_for_mpi": ["arrays", "stream", "event"],
}


def test_names_and_signatures_of_07():
    assert NAMES_07 <= set(xp.mpi.__all__)
    for name in NAMES_07:
        assert hasattr(xp.mpi, name), name
    for name, params in SIGNATURES_07.items():
        assert list(inspect.signature(getattr(xp.mpi, name)).parameters) == params, name


def test_serial_stand_in_is_maybempis():
    # The very objects of maybempi, so user code that checks types keeps working.
    for name in ("SerialComm", "SerialMPI", "SerialRequest", "SerialStatus", "get_mpi"):
        assert getattr(xp.mpi, name) is getattr(maybempi, name)
    assert xp.mpi.OVERRIDE_VARIABLE == "MAYBEMPI"
    mpi = xp.mpi.get_mpi()
    assert xp.mpi.is_serial(mpi) and not xp.mpi.launched_under_mpi()
    assert mpi.COMM_WORLD.Get_size() == 1 and xp.mpi.local_rank() == 0


def test_host_arrays_pass_through():
    rho = np.arange(4.0)
    with xp.mpi.mpi_buffer(rho, send=True, recv=True) as buf:
        assert buf is rho
    xp.mpi.synchronize_for_mpi(rho, None)  # nothing to wait for
    assert xp.mpi.mpi_is_cuda_aware() is False  # NumPy backend: MPI untouched


def test_awareness_setting_round_trips():
    try:
        xp.mpi.set_mpi_cuda_aware(False)
        assert xp.mpi.get_mpi_cuda_aware() is False
        xp.mpi.set_mpi_cuda_aware(1)
        assert xp.mpi.get_mpi_cuda_aware() is True
    finally:
        xp.mpi.set_mpi_cuda_aware(None)
    assert xp.mpi.get_mpi_cuda_aware() is None


def test_staging_checks_its_arguments():
    with pytest.raises(MPIStagingError, match="non-negative"):
        xp.mpi.MPIStaging((2, -1), np.float64)
    with pytest.raises(TypeError, match="object dtype"):
        xp.mpi.MPIStaging(3, object)
    staging = xp.mpi.MPIStaging(3, "float32")
    assert staging.shape == (3,) and staging.dtype == np.float32
    host = np.ones(3)
    with staging.buffer(host, recv=True) as buf:
        assert buf is host


def test_device_binding_on_numpy():
    assert xp.cuda.bind_local_device() is None
    assert xp.cuda.bind_local_device(warn_shared=False) is None
    assert xp.cuda.set_device_for_rank(3, devices_per_node=4) == 3
    assert xp.cuda.set_device_for_rank(5, 2) == 1
    with pytest.raises(DeviceSelectionError, match="rank"):
        xp.cuda.set_device_for_rank(-1, 2)


# Lines printed by cunumpy 0.7.1 (with maybempi 0.1.2, mpi4py and MPICH) for
# tests/programs/mpi_program_07.py: per backend and rank count.
_07_SERIAL = (
    "rank 0/1 serial=True device={d} aware={a} rho=[0.0, 2.0, 4.0, 6.0, 8.0, 10.0] "
    "recv=[0.0, 0.0, 0.0] local_rank=0"
)
_07_TWO = [
    "rank 0/2 serial=False device={d} aware={a} rho=[0.0, 6.0, 12.0, 18.0, 24.0, 30.0] "
    "recv=[10.0, 10.0, 10.0] local_rank=0",
    "rank 1/2 serial=False device={d} aware={a} rho=[0.0, 6.0, 12.0, 18.0, 24.0, 30.0] "
    "recv=[0.0, 0.0, 0.0] local_rank=1",
]
_07_FILL = {"numpy": {"d": "None", "a": "None"}, "emulated": {"d": "0", "a": "True"}}


@pytest.mark.parametrize("backend", ["numpy", "emulated"])
@pytest.mark.parametrize("ranks", [None, 2])
def test_07_program_runs_unchanged(backend, ranks):
    out = run(PROGRAMS / "mpi_program_07.py", ranks=ranks, backend=backend)
    expected = [_07_SERIAL] if ranks is None else _07_TWO
    expected = [line.format(**_07_FILL[backend]) for line in expected]
    assert rank_lines(out.stdout) == expected
    if backend == "emulated" and ranks == 2:
        # Two ranks on the one emulated device: reported once, by local rank 0.
        warnings = [ln for ln in out.stderr.splitlines() if "SharedDeviceWarning" in ln]
        assert len(warnings) == 1, out.stderr
        assert "local ranks 0, 1 share CUDA device 0" in warnings[0]


@pytest.mark.parametrize("backend", ["numpy", "emulated"])
@pytest.mark.parametrize("ranks", [None, 1, 2, 4])
def test_staging_counted_per_rank(backend, ranks):
    out = run(PROGRAMS / "mpi_staging.py", ranks=ranks, backend=backend)
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["size"] == (ranks or 1)
    assert [r["rank"] for r in report["ranks"]] == list(range(ranks or 1))
    device = backend == "emulated"
    none = {"to_host": [0, 0], "to_device": [0, 0]}
    for r in report["ranks"]:
        # The emulated device's arrays are host memory: the probe finds MPI "CUDA-aware".
        assert r["aware_probe"] is device
        assert r["allreduce_aware_True"] == none
        if not device:
            assert r["allreduce_aware_False"] == none and r["exchange_3_steps"] == none
            assert r["allreduce_aware_False_all"] == r["allreduce_aware_True_all"] == {}
            assert r["pool_after_step_3"]["allocations"] == 0
            continue
        # One copy each way of the 1000 doubles, counted once (the emulated device counts its
        # own copies: none of these twice), and the synchronization before MPI.
        assert r["allreduce_aware_False"] == {"to_host": [1, 8000], "to_device": [1, 8000]}
        assert r["allreduce_aware_False_all"] == {"sync": 1, "to_device": 1, "to_host": 1}
        assert r["allreduce_aware_True_all"] == {"sync": 1}
        # 3 steps x 2 buffers each way, (7 + 300) doubles per step.
        per_way = [6, 3 * (7 + 300) * 8]
        assert r["exchange_3_steps"] == {"to_host": per_way, "to_device": per_way}
        assert r["strided"] == {"to_host": [1, 48], "to_device": [1, 48]}
        # Steps 2 and 3 reuse the staging buffers of step 1 (4 leases a step).
        first, third = r["pool_after_step_1"], r["pool_after_step_3"]
        assert third["allocations"] == first["allocations"]
        assert third["reuses"] == first["reuses"] + 8


@pytest.mark.parametrize(("backend", "ranks"), [("numpy", None), ("numpy", 2), ("emulated", 2)])
def test_guide_recipe_runs(backend, ranks, tmp_path):
    # docs/mpi.md's python blocks, as one program, serially and under mpiexec.
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "docs/mpi.md").read_text(), flags=re.S)
    assert blocks
    program = tmp_path / "recipe.py"
    program.write_text("\n".join(blocks))
    out = run(program, ranks=ranks, backend=backend)
    size = ranks or 1
    got = sorted(re.findall(r"rank \d+ of \d+ on device \w+: ok", out.stdout))
    assert got == [
        f"rank {r} of {size} on device {'0' if backend == 'emulated' else 'None'}: ok"
        for r in range(size)
    ]


# MAYBEMPI overrides the launcher detection, as in 0.7.1 (lines printed by 0.7.1).
_07_OVERRIDE = (
    "rank 0/1 serial={s} device=None aware=None rho=[0.0, 2.0, 4.0, 6.0, 8.0, 10.0] "
    "recv=[0.0, 0.0, 0.0] local_rank={lr}"
)


def test_maybempi_override_0_under_mpiexec():
    # Two independent serial processes: each its own rank 0 of 1 (the node-local rank stays).
    out = run(PROGRAMS / "mpi_program_07.py", ranks=2, backend="numpy", MAYBEMPI="0")
    assert rank_lines(out.stdout) == [
        _07_OVERRIDE.format(s=True, lr=0),
        _07_OVERRIDE.format(s=True, lr=1),
    ]


def test_maybempi_override_1_without_launcher():
    # mpi4py's MPI started without a launcher: a real communicator of size 1.
    out = run(PROGRAMS / "mpi_program_07.py", ranks=None, backend="numpy", MAYBEMPI="1")
    assert rank_lines(out.stdout) == [_07_OVERRIDE.format(s=False, lr=0)]
