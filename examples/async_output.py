"""A time loop that writes its output and checks convergence without waiting for the device:
HostStaging copies snapshots in the background, to_host_async reads the residual one step late,
and a TransferBudget checks that the step itself never copies. Runs on NumPy, the emulated
device and a GPU (same counts on the last two)."""

from __future__ import annotations

import numpy as np

import cunumpy as xp


def main(n: int = 1000, steps: int = 8) -> list[float]:
    u = xp.to_cunumpy(np.linspace(0.0, 1.0, n))
    staging = xp.memory.HostStaging(n, np.float64, buffers=2)
    compute = xp.cuda.create_stream()
    budget = xp.profiling.TransferBudget()
    saved, pending = [], None
    for _ in range(steps):
        with budget.phase("step"), xp.cuda.stream(compute):
            new = 0.5 * (u + xp.roll(u, 1))
            residual = xp.max(xp.abs(new - u))
            u = new
        with budget.phase("output"):
            done = xp.cuda.record_event(stream=compute)
            copy = staging.copy(u, event=done)  # returns at once on a GPU
            if pending is not None:
                saved.append(float(pending.result()))  # last step's residual, ready by now
            pending = xp.to_host_async(residual)
    staging.synchronize()
    final = copy.result()
    assert np.allclose(final, xp.to_numpy(u))
    budget.require("step", calls=steps)  # no transfer at all in the step
    budget.require("output", allow={"to_host": {"blocking": False}})
    budget.check()
    print(budget.report())
    return saved


if __name__ == "__main__":
    print(main())
