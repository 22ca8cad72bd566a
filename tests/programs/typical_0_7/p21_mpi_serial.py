"""An MPI program run without mpiexec: xp.mpi's serial stand-in."""

import numpy as np

import cunumpy as xp

xp.cuda.bind_local_device()
MPI = xp.mpi.get_mpi()
comm = MPI.COMM_WORLD
print(comm.Get_rank(), comm.Get_size(), xp.mpi.is_serial(MPI), xp.mpi.local_rank())
print(xp.mpi.launched_under_mpi(), xp.mpi.mpi_is_cuda_aware(comm))
a = xp.asarray(np.arange(3.0))
with xp.mpi.mpi_buffer(a, send=True, recv=True) as buf:
    comm.Allreduce(MPI.IN_PLACE, buf, op=MPI.SUM)
print(xp.to_numpy(a).tolist())
recv = xp.zeros(3)
xp.mpi.exchange(comm, sends=[(a, 0, 1)], receives=[(recv, 0, 1)])
print(xp.to_numpy(recv).tolist())
print(comm.allreduce(5, op=MPI.SUM), comm.bcast("x", root=0))
