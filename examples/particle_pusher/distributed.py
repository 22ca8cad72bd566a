"""The particle pusher on many MPI ranks: one rank per GPU (or per core), through ``xp.mpi``.

    mpiexec -n 4 python examples/particle_pusher/distributed.py             # NumPy
    CUNUMPY_FAKE_CUPY=1 mpiexec -n 4 python .../distributed.py             # emulated device
    CUNUMPY_BACKEND=cupy mpiexec -n 2 python .../distributed.py            # GPUs (shared ok)

1-D domain decomposition in x: rank r of P owns the slab ``[r, r+1) * LX/P`` and the grid
columns ``[r, r+1) * NX/P``. Each step gathers the (static, analytic) field, pushes, and hands
the particles that left the slab to the neighbour that now owns them (``xp.mpi.exchange``;
device arrays go to MPI directly when it is CUDA-aware, else through reused host staging
buffers). The charge is deposited on the rank's columns plus one halo column, which is sent to
the right neighbour and added there. Without ``--no-check``, rank 0 then reruns the same
problem on one rank (maybempi's serial communicator) and compares: particle count, total
charge and every particle's state (by id) exactly, the grid within rounding (the halo sums add
the same terms in another order). The summary is one JSON line.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import particles  # noqa: E402
from walkthrough import BZ, DT, E0, LX, LY, NX, NY, QM, load_catalog  # noqa: E402

import cunumpy as xp  # noqa: E402

# The columns of a packed particle: the six quantities of `particles` and the particle's id.
FIELDS = ("x", "y", "vx", "vy", "vz", "w", "id")
TO_RIGHT, TO_LEFT, HALO = 1, 2, 3  # message tags


class Timer:
    """Wall time per phase (after synchronizing the device, so it is the work's time), and the
    time of host staging copies (part of "mpi") since it was made."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self._staging0 = xp.mpi.staging_pool_info()["copy_seconds"]

    def staging(self) -> float:
        return xp.mpi.staging_pool_info()["copy_seconds"] - self._staging0

    def add(self, phase: str, start: float) -> float:
        xp.synchronize()
        now = time.perf_counter()
        self.seconds[phase] = self.seconds.get(phase, 0.0) + now - start
        return now


class Domain:
    """This rank's slab of the particle code: its particles and its part of the grid."""

    def __init__(self, comm: Any, catalog: Any, n_total: int, seed: int) -> None:
        self.comm, self.kernels = comm, catalog
        self.rank, self.size = comm.Get_rank(), comm.Get_size()
        if NX % self.size:
            raise SystemExit(f"{NX} grid columns do not split over {self.size} ranks")
        self.ncols = NX // self.size
        self.grid = particles.GridLibrary(NX, NY, LX, LY)
        self.slab = LX / self.size
        self.x_lo = self.rank * self.slab
        # Every rank has the whole static field (it is analytic and small).
        self.ex_grid, self.ey_grid = self.grid.electric_field(E0)
        # The same global population on every rank count; each keeps the particles it owns.
        everyone = particles.make_particles(n_total, LX, LY, seed=seed)
        packed = self._pack(everyone, xp.arange(n_total, dtype=xp.float64))
        self.p, self.ids = self._unpack(packed[self._owner(packed[:, 0]) == self.rank])
        self.rho = np.zeros((NX, NY))  # the owned columns after deposit (global indexing)
        self.timer = Timer()

    # -- packing -----------------------------------------------------------------------------
    @staticmethod
    def _pack(p: Any, ids: Any) -> Any:
        return xp.stack([p.x, p.y, p.vx, p.vy, p.vz, p.w, ids], axis=1)

    def _unpack(self, packed: Any) -> tuple[Any, Any]:
        cols = [xp.ascontiguousarray(packed[:, i]) for i in range(len(FIELDS))]
        cls = particles.DeviceParticles if xp.get_backend() == "cupy" else particles.ParticleArrays
        return cls(*cols[:6]), cols[6]

    def _owner(self, x: Any) -> Any:
        return xp.clip(xp.floor(x / self.slab).astype(xp.int64), 0, self.size - 1)

    # -- one time step -----------------------------------------------------------------------
    def step(self) -> None:
        start = time.perf_counter()
        n = self.p.n
        ex, ey = xp.zeros(n), xp.zeros(n)
        k = self.kernels
        k["gather_field"](self.p, self.ex_grid, self.ey_grid, ex, ey, self.grid.dx, self.grid.dy)
        k["boris_push"](self.p, ex, ey, BZ, QM, DT, LX, LY)
        start = self.timer.add("compute", start)
        self._hand_off(start)

    def _hand_off(self, start: float) -> None:
        """Particles that left the slab go to the neighbour that owns them now. Timed as
        "handoff" (selecting, packing, unpacking) and "mpi" (messages, staging included)."""
        cols = [self.p.x, self.p.y, self.p.vx, self.p.vy, self.p.vz, self.p.w, self.ids]
        owner = self._owner(self.p.x)
        right, left = (self.rank + 1) % self.size, (self.rank - 1) % self.size
        stay = owner == self.rank
        to_right = (owner == right) & ~stay
        to_left = (owner == left) & ~stay & ~to_right  # on two ranks both sides are one rank
        moved = int(xp.count_nonzero(to_right)) + int(xp.count_nonzero(to_left))
        if moved + int(xp.count_nonzero(stay)) != self.p.n:
            raise RuntimeError("a particle crossed more than one slab in one step: lower DT")
        # Only the leaving particles are packed (one row each); the others stay column-wise.
        out_r = xp.stack([c[to_right] for c in cols], axis=1)
        out_l = xp.stack([c[to_left] for c in cols], axis=1)
        start = self.timer.add("handoff", start)
        # How many come in from each side (two small host messages), then the particles.
        n_from_left = self.comm.sendrecv(
            out_r.shape[0], dest=right, source=left, sendtag=TO_RIGHT, recvtag=TO_RIGHT
        )
        n_from_right = self.comm.sendrecv(
            out_l.shape[0], dest=left, source=right, sendtag=TO_LEFT, recvtag=TO_LEFT
        )
        in_l = xp.empty((n_from_left, len(FIELDS)))
        in_r = xp.empty((n_from_right, len(FIELDS)))
        xp.mpi.exchange(
            self.comm,
            sends=[(out_r, right, TO_RIGHT), (out_l, left, TO_LEFT)],
            receives=[(in_l, left, TO_RIGHT), (in_r, right, TO_LEFT)],
        )
        start = self.timer.add("mpi", start)
        kept = [xp.concatenate([c[stay], in_l[:, i], in_r[:, i]]) for i, c in enumerate(cols)]
        self.p, self.ids = type(self.p)(*kept[:6]), kept[6]
        self.timer.add("handoff", start)

    def deposit(self) -> np.ndarray:
        """The charge density of the owned columns (global NX x NY array, zero elsewhere): own
        deposit on the columns plus a halo column, the halo added by the right neighbour."""
        start = time.perf_counter()
        local = xp.zeros((self.ncols + 1, NY))
        shifted = type(self.p)(
            self.p.x - self.x_lo, self.p.y, self.p.vx, self.p.vy, self.p.vz, self.p.w
        )
        self.kernels["deposit_charge"](shifted, local, self.grid.dx, self.grid.dy)
        start = self.timer.add("deposit", start)
        halo_out = xp.ascontiguousarray(local[self.ncols])
        halo_in = xp.empty(NY)
        right, left = (self.rank + 1) % self.size, (self.rank - 1) % self.size
        xp.mpi.exchange(
            self.comm, sends=[(halo_out, right, HALO)], receives=[(halo_in, left, HALO)]
        )
        local[0] += halo_in
        self.timer.add("mpi", start)
        lo = self.rank * self.ncols
        self.rho[:] = 0.0
        self.rho[lo : lo + self.ncols] = xp.to_numpy(local[: self.ncols])
        return self.rho

    # -- results -----------------------------------------------------------------------------
    def gather(self) -> dict[str, Any] | None:
        """Everything on rank 0 (``None`` elsewhere): particles sorted by id, the grid."""
        state = xp.to_numpy(self._pack(self.p, self.ids))
        states = self.comm.gather(state, root=0)
        rho = self.comm.reduce(self.rho, op=xp.mpi.get_mpi().SUM, root=0)
        if self.rank != 0:
            return None
        allp = np.concatenate(states)
        allp = allp[np.argsort(allp[:, 6], kind="stable")]
        return {"particles": allp, "rho": rho}


def simulate(
    comm: Any, n_total: int, steps: int, seed: int, deposit_every: int = 10
) -> tuple[Domain, dict | None]:
    """Runs ``steps`` steps, depositing every ``deposit_every`` steps and after the last one.
    The phase timers leave out the first step (kernel compilation, first allocations)."""
    catalog = load_catalog("fallback")
    domain = Domain(comm, catalog, n_total, seed)
    deposited = False
    for i in range(steps):
        domain.step()
        deposited = (i + 1) % deposit_every == 0
        if deposited:
            domain.deposit()
        if i == 0:
            domain.timer = Timer()
    if not deposited:
        domain.deposit()
    return domain, domain.gather()


def compare(distributed: dict, serial: dict) -> dict[str, Any]:
    """Count, charge and per-particle states exactly; the grid within rounding."""
    a, b = distributed["particles"], serial["particles"]
    same_count = a.shape == b.shape
    rho_a, rho_b = distributed["rho"], serial["rho"]
    scale = float(np.max(np.abs(rho_b)))
    return {
        "count": int(a.shape[0]),
        "count_equal": bool(same_count),
        "charge_equal": bool(same_count and np.sum(np.sort(a[:, 5])) == np.sum(np.sort(b[:, 5]))),
        "particles_equal": bool(same_count and np.array_equal(a, b)),
        "grid_max_rel_diff": float(np.max(np.abs(rho_a - rho_b)) / scale),
        "grid_equal_within_rounding": bool(
            np.allclose(rho_a, rho_b, rtol=1e-12, atol=1e-12 * scale)
        ),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--particles-per-rank", type=int, default=4096)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--deposit-every", type=int, default=10)
    parser.add_argument(
        "--stage",
        action="store_true",
        help="treat MPI as not CUDA-aware: device buffers go through host staging",
    )
    parser.add_argument("--no-check", action="store_true", help="skip the one-rank comparison")
    opts = parser.parse_args(argv)

    xp.cuda.bind_local_device()  # before MPI starts; ranks sharing a GPU are reported once
    mpi = xp.mpi.get_mpi()
    comm = mpi.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    if opts.stage:
        xp.mpi.set_mpi_cuda_aware(False)
    else:
        xp.mpi.mpi_is_cuda_aware(comm)  # collective, recorded for mpi_buffer
    n_total = opts.particles_per_rank * size

    with xp.profiling.count_transfers() as transfers:
        start = time.perf_counter()
        domain, result = simulate(comm, n_total, opts.steps, opts.seed, opts.deposit_every)
        elapsed = time.perf_counter() - start
    staged = [e for e in transfers.events if e.description.startswith("mpi_buffer:")]
    mine = {
        "seconds": elapsed,
        "phases": {**domain.timer.seconds, "staging": domain.timer.staging()},
        "timed_steps": opts.steps - 1,
        "staging": {
            kind: [
                sum(1 for e in staged if e.kind == kind),
                sum(e.nbytes or 0 for e in staged if e.kind == kind),
            ]
            for kind in ("to_host", "to_device")
        },
        "particles": domain.p.n,
    }
    per_rank = comm.gather(mine, root=0)
    if rank != 0:
        return 0
    summary: dict[str, Any] = {
        "ranks": size,
        "backend": xp.get_backend(),
        "cuda_aware": xp.mpi.get_mpi_cuda_aware(),
        "particles_total": n_total,
        "steps": opts.steps,
        "per_rank": per_rank,
    }
    if not opts.no_check:
        _, serial = simulate(
            xp.mpi.SerialComm(), n_total, opts.steps, opts.seed, opts.deposit_every
        )
        summary["check"] = compare(result, serial)
    print(json.dumps(summary))
    check = summary.get("check")
    if check and not (
        check["count_equal"]
        and check["charge_equal"]
        and check["particles_equal"]
        and check["grid_equal_within_rounding"]
    ):
        print("the distributed run differs from the one-rank run", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
