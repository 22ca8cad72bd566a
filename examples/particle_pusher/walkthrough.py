"""The particle pusher walk-through: a small particle code moved to the GPU one kernel at a
time, following the five steps of the porting workflow (docs/particle-pusher.md).

Charged particles gyrate in a magnetic field bz and drift through a standing-wave electric
field on a periodic grid (Boris scheme); their charge is deposited onto a grid owned by a host
"library" object through a DeviceMirror. Run with `make demo` (NumPy; steps 2-5 then need a
device backend and are shown on NumPy), `CUNUMPY_BACKEND=cupy` (GPU) or `CUNUMPY_FAKE_CUPY=1`
(the emulated device).
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import particles  # noqa: E402

import cunumpy as xp  # noqa: E402
from cunumpy.kernels import Kernel, KernelCatalog  # noqa: E402
from cunumpy.memory import DeviceMirror  # noqa: E402
from cunumpy.profiling import (  # noqa: E402
    assert_no_transfers,
    count_transfers,
    kernel_profile,
    write_chrome_trace,
)

HAVE_MATPLOTLIB = importlib.util.find_spec("matplotlib") is not None

# Physical and numerical parameters (normalised units).
NX, NY, LX, LY = 32, 32, 1.0, 1.0
BZ, QM, E0, DT = 8.0, -1.0, 1.0, 0.02
OUTPUTS = {"gather_field": ("ex", "ey"), "boris_push": ("p",), "deposit_charge": ("rho",)}


def load_catalog(missing_cuda: str, ported: set[str] | None = None) -> KernelCatalog:
    """The kernel package's catalog; kernels not in `ported` lose their CUDA version (as
    before they were written)."""
    full = KernelCatalog.from_package(
        "pusher",
        missing_cuda=missing_cuda,
        outputs=lambda name: OUTPUTS[name],
        host_options=lambda name: {"object_modules": ("particles",)},
        n_threads_from=lambda args: args[0].n,
        structs=[particles.DeviceParticles.struct],
    )
    if ported is None:
        return full
    return KernelCatalog(
        {
            name: Kernel(
                k.host_kernel,
                k.cuda_kernel if name in ported else None,
                name=name,
                missing_cuda=missing_cuda,
                cuda_path=k.cuda_path,
            )
            for name, k in full.items()
        }
    )


class Simulation:
    """One particle population and its grid; `step()` is one time step."""

    def __init__(self, catalog: KernelCatalog, n: int, tracked: int = 4):
        self.kernels = catalog
        self.grid = particles.GridLibrary(NX, NY, LX, LY)
        self.ex_grid, self.ey_grid = self.grid.electric_field(E0)
        self.p = particles.make_particles(n, LX, LY, seed=1)
        self.ex, self.ey = xp.zeros(n), xp.zeros(n)
        self.rho = DeviceMirror(self.grid.rho)
        self.tracked = tracked
        self.history: list = []

    def push(self) -> None:
        """The kernels of one time step: the field at each particle, then the Boris push."""
        k = self.kernels
        k["gather_field"](
            self.p, self.ex_grid, self.ey_grid, self.ex, self.ey, self.grid.dx, self.grid.dy
        )
        k["boris_push"](self.p, self.ex, self.ey, BZ, QM, DT, LX, LY)

    def track(self) -> None:
        """Positions of a few particles stay on the device until the end of the run."""
        self.history.append(xp.stack([self.p.x[: self.tracked], self.p.y[: self.tracked]], 1))

    def step(self) -> None:
        self.push()
        self.track()

    def deposit(self) -> None:
        """Charge onto the host library's own buffer: zero, scatter-add, copy back in place."""
        self.rho.zero()
        self.kernels["deposit_charge"](self.p, self.rho.device, self.grid.dx, self.grid.dy)
        self.rho.to_host()
        self.grid.accumulate()

    def state(self) -> dict[str, np.ndarray]:
        names = ("x", "y", "vx", "vy")
        return {name: xp.to_numpy(getattr(self.p, name)) for name in names}

    def trajectories(self) -> np.ndarray:
        return xp.to_numpy(xp.stack(self.history))


def run(
    catalog: KernelCatalog, n: int, steps: int, label: str, output: Path, graph: bool = False
) -> Simulation:
    """Runs `steps` time steps and prints the catalog summary, the transfer report of one time
    step and the kernel profile; writes the run's trace (open it in https://ui.perfetto.dev)
    and, with matplotlib, the profile's picture into `output`. With `graph`, the kernels of a
    step are captured once as a CUDA graph (`xp.cuda.graph`) and each step replays it."""
    sim = Simulation(catalog, n)
    step = sim.step
    if graph:
        push = xp.cuda.graph(sim.push)  # captured, not run: each call below is one step

        def step() -> None:
            push()
            sim.track()

    with kernel_profile() as profile, count_transfers() as everything:
        for i in range(steps):
            if i == 1:
                with count_transfers() as one_step:
                    step()
            else:
                step()
            if i % 10 == 9:
                sim.deposit()
        xp.synchronize()
    print(f"\n=== {label} ({xp.get_backend()} backend) ===")
    print(catalog.summary())
    print("transfers of one time step:")
    print(one_step.report())
    print("kernel profile:")
    print(profile.report())
    tag = label.split(":")[0].replace(" ", "")
    output.mkdir(parents=True, exist_ok=True)
    trace = write_chrome_trace(output / f"trace_{tag}.json", everything, profile)
    print(f"trace of every call and copy: {trace}")
    if HAVE_MATPLOTLIB:
        picture = output / f"profile_{tag}.png"
        profile.plot(picture, transfers=everything)
        print(f"where the time went: {picture}")
    return sim


def draw_particles(path: Path, rho: np.ndarray, trajectories: np.ndarray) -> None:
    """The deposited charge density as a heat map, with the tracked particles' paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 5.5))
    image = ax.imshow(rho.T, origin="lower", extent=(0, LX, 0, LY), cmap="coolwarm")
    fig.colorbar(image, ax=ax, label="mean charge density")
    for k in range(trajectories.shape[1]):
        ax.plot(trajectories[:, k, 0], trajectories[:, k, 1], ".", markersize=1.5)
    ax.set(xlabel="x", ylabel="y", title="deposited charge and particle paths")
    fig.savefig(path, dpi=100)
    plt.close(fig)


def compare(reference: dict, other: dict, label: str, rtol: float) -> None:
    worst = max(
        float(np.max(np.abs(other[k] - reference[k]) / (np.abs(reference[k]) + 1e-12)))
        for k in reference
    )
    verdict = "same physics" if worst <= rtol else "DIFFERENT"
    print(f"{label}: largest relative difference to the host run {worst:.2e} ({verdict})")
    if worst > rtol:
        raise SystemExit(f"{label} differs from the host run by {worst:.2e} > {rtol:.0e}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--particles", type=int, default=20000)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--rtol", type=float, default=1e-6)
    parser.add_argument("--output", type=Path, default=HERE / "output")
    parser.add_argument(
        "--graph",
        action="store_true",
        help="step 4 replays each time step as one CUDA graph (needs a device backend)",
    )
    opts = parser.parse_args(argv)
    # The device backend: a GPU, or the emulated device (CUNUMPY_FAKE_CUPY=1); else NumPy.
    device = "cupy" if xp.cupy_available() else "numpy"

    # Step 1: everything on the host.
    with xp.use_backend("numpy"):
        host = run(
            load_catalog("fallback", ported=set()),
            opts.particles,
            opts.steps,
            "step 1: all host",
            opts.output,
        )
        reference = host.state()
    if device != "cupy":
        print(
            "\n(no device backend: steps 2-5 run on NumPy; use CUNUMPY_BACKEND=cupy on a GPU "
            "or CUNUMPY_FAKE_CUPY=1 for the emulated device)"
        )

    with xp.use_backend(device):
        # Step 2: the device backend, nothing ported: every kernel falls back (with copies).
        sim = run(
            load_catalog("fallback", ported=set()),
            opts.particles,
            opts.steps,
            "step 2: device backend, host fallbacks",
            opts.output,
        )
        compare(reference, sim.state(), "step 2", opts.rtol)

        # Step 3: port the most expensive kernel first (the push).
        sim = run(
            load_catalog("fallback", ported={"boris_push"}),
            opts.particles,
            opts.steps,
            "step 3: boris_push ported",
            opts.output,
        )
        compare(reference, sim.state(), "step 3", opts.rtol)

        # Step 4: every kernel of the time loop ported: a time step copies nothing.
        catalog = load_catalog("fallback")
        graph = opts.graph and device == "cupy"
        label = "step 4: all ported" + (", one CUDA graph per step" if graph else "")
        sim = run(catalog, opts.particles, opts.steps, label, opts.output, graph=graph)
        compare(reference, sim.state(), "step 4", opts.rtol)
        if opts.graph and not graph:
            print("(--graph: a graph needs a device backend; step 4 ran eagerly on NumPy)")
        with assert_no_transfers():
            sim.step()
        print("assert_no_transfers() around a time step: passed")

        # Step 5: a kernel added later without a CUDA version must fail loudly.
        strict = load_catalog("raise", ported={"boris_push", "gather_field"})
        try:
            if device == "cupy":
                strict["deposit_charge"].get_kernel()
            print("\nstep 5: missing_cuda='raise' (on the host every kernel has its host version)")
        except NotImplementedError as exc:
            print(f"\nstep 5: missing_cuda='raise' refuses an unported kernel: {exc}")

        trajectories = sim.trajectories()
    if HAVE_MATPLOTLIB:
        picture = opts.output / f"particles_{device}.png"
        draw_particles(picture, sim.grid.rho_mean, trajectories)
        print(f"\nplot of the deposited charge and {sim.tracked} trajectories: {picture}")
    else:
        print('\nno pictures without matplotlib (pip install "cunumpy[plot]"); traces written')
    return 0


if __name__ == "__main__":
    start = time.perf_counter()
    status = main()
    print(f"done in {time.perf_counter() - start:.1f} s")
    sys.exit(status)
