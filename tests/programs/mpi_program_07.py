"""A cunumpy 0.7 MPI program, written against 0.7.1's documented API only (the README's "one
rank per GPU" recipe), run unchanged serially and under mpiexec by tests/cpu/test_mpi.py.

It prints one line per rank; the test compares them with lines that cunumpy 0.7.1 printed for
the same program (on NumPy and on the emulated device, serially and on two ranks).
"""

import numpy as np

import cunumpy as xp

device = xp.cuda.bind_local_device()
MPI = xp.mpi.get_mpi()
comm = MPI.COMM_WORLD
xp.mpi.require_cuda_aware_mpi(comm)
rank, size = comm.Get_rank(), comm.Get_size()

rho = xp.asarray(np.arange(6.0) * (rank + 1))
rho = rho * 2.0
xp.mpi.synchronize_for_mpi(rho)
with xp.mpi.mpi_buffer(rho, send=True, recv=True, cuda_aware=True) as buf:
    comm.Allreduce(MPI.IN_PLACE, buf, op=MPI.SUM)

right, left = (rank + 1) % size, (rank - 1) % size
send = xp.asarray(np.full(3, 10.0 * rank))
recv = xp.zeros(3)
xp.mpi.exchange(comm, sends=[(send, right, 7)], receives=[(recv, left, 7)], cuda_aware=True)

print(
    f"rank {rank}/{size} serial={xp.mpi.is_serial(MPI)} device={device} "
    f"aware={xp.mpi.get_mpi_cuda_aware()} rho={xp.to_numpy(rho).tolist()} "
    f"recv={xp.to_numpy(recv).tolist()} local_rank={xp.mpi.local_rank()}",
    flush=True,
)
