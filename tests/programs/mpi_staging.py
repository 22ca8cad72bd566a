"""Device buffers through MPI, run by tests/cpu/test_mpi.py under mpiexec -n 1/2/4 (and
serially): CUDA-aware hand-over, host staging counted per rank, buffer reuse, and the errors.
Rank 0 prints one JSON line with every rank's counts; the test checks them."""

import json

import numpy as np

import cunumpy as xp
from cunumpy.exceptions import MPIBufferError, MPIStagingBusyError, MPIStagingError
from cunumpy.profiling import count_transfers

xp.cuda.bind_local_device(warn_shared=False)
MPI = xp.mpi.get_mpi()
comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
device = xp.get_backend() == "cupy"
report: dict = {"rank": rank, "aware_probe": xp.mpi.mpi_is_cuda_aware(comm)}


def staged(counter):
    events = [e for e in counter.events if e.description.startswith("mpi_buffer:")]
    return {
        kind: [
            len([e for e in events if e.kind == kind]),
            sum(e.nbytes for e in events if e.kind == kind),
        ]
        for kind in ("to_host", "to_device")
    }


# Allreduce of a device array, staged (not CUDA-aware) and direct (CUDA-aware).
expected = np.arange(1000.0) * sum(range(1, size + 1))
# (The direct hand-over only where MPI takes device buffers: a real GPU with a plain MPI would
# read device addresses as host memory.)
for aware in (False, True) if report["aware_probe"] or not device else (False,):
    rho = xp.asarray(np.arange(1000.0)) * (rank + 1)
    with count_transfers() as counter:
        with xp.mpi.mpi_buffer(rho, send=True, recv=True, cuda_aware=aware) as buf:
            assert (buf is rho) == (aware or not device)
            comm.Allreduce(MPI.IN_PLACE, buf, op=MPI.SUM)
    assert np.array_equal(xp.to_numpy(rho), expected)
    report[f"allreduce_aware_{aware}"] = staged(counter)
    # Every event of the block, whoever recorded it: each copy is counted once.
    kinds = [e.kind for e in counter.events]
    report[f"allreduce_aware_{aware}_all"] = {k: kinds.count(k) for k in sorted(set(kinds))}

# A ring exchange of two buffers per neighbour with staging forced: a time-step loop.
xp.mpi.set_mpi_cuda_aware(False)
right, left = (rank + 1) % size, (rank - 1) % size
sends = [xp.asarray(np.full(n, 100.0 * rank + n)) for n in (7, 300)]
with count_transfers() as counter:
    for step in range(3):
        receives = [xp.zeros(7), xp.zeros(300)]
        xp.mpi.exchange(
            comm,
            sends=[(a, right, i) for i, a in enumerate(sends)],
            receives=[(a, left, i) for i, a in enumerate(receives)],
        )
        for n, a in zip((7, 300), receives, strict=True):
            assert np.array_equal(xp.to_numpy(a), np.full(n, 100.0 * left + n))
        if step == 0:
            report["pool_after_step_1"] = xp.mpi.staging_pool_info()
report["exchange_3_steps"] = staged(counter)
report["pool_after_step_3"] = xp.mpi.staging_pool_info()

# A strided device array: packed, staged, and unpacked into the same view. (Host arrays go
# to MPI as they are, as in 0.7, and MPI refuses a strided one.)
if device:
    grid = xp.zeros((6, 4))
    column = grid[:, 1]
    column[...] = xp.asarray(np.arange(6.0) + rank)
    with count_transfers() as counter:
        with xp.mpi.mpi_buffer(column, send=True, recv=True) as buf:
            comm.Allreduce(MPI.IN_PLACE, buf, op=MPI.SUM)
    want = np.zeros((6, 4))
    want[:, 1] = size * np.arange(6.0) + sum(range(size))
    assert np.array_equal(xp.to_numpy(grid), want)
    report["strided"] = staged(counter)

# MPIStaging: its own reused buffer, checked against its shape and busy while in use.
staging = xp.mpi.MPIStaging(5, np.float64)
for _ in range(2):
    a = xp.ones(5)
    with staging.buffer(a, recv=True) as buf:
        comm.Allreduce(MPI.IN_PLACE, buf, op=MPI.SUM)
        if device:
            try:
                with staging.buffer(a):
                    pass
                raise AssertionError("a busy MPIStaging was used twice")
            except MPIStagingBusyError:
                pass
    assert np.array_equal(xp.to_numpy(a), np.full(5, float(size)))
if device:
    try:
        with staging.buffer(xp.ones(6)):
            pass
        raise AssertionError("MPIStaging took an array of another shape")
    except MPIStagingError:
        pass

# Errors that say what to do: a device buffer to a non-CUDA-aware MPI without staging, and
# mpi_buffer when nobody found out whether MPI is CUDA-aware.
if device:
    try:
        xp.mpi.synchronize_for_mpi(sends[0])
        raise AssertionError("synchronize_for_mpi let a device array go to a non-aware MPI")
    except MPIBufferError as exc:
        assert "mpi_buffer" in str(exc)
    xp.mpi.set_mpi_cuda_aware(None)
    try:
        with xp.mpi.mpi_buffer(sends[0]):
            pass
        raise AssertionError("mpi_buffer guessed")
    except MPIBufferError as exc:
        assert "mpi_is_cuda_aware" in str(exc)

reports = comm.gather(report, root=0)
if rank == 0:
    print(json.dumps({"size": size, "backend": xp.get_backend(), "ranks": reports}))
