"""Particles binned by cell with xp.algorithms, on the active backend (NumPy, the emulated device
with CUNUMPY_FAKE_CUPY=1 CUNUMPY_BACKEND=cupy, or a GPU with CUNUMPY_BACKEND=cupy).

Sort by Morton key, find each cell's range, deposit a charge per cell, drop the particles that
left the box, and check the result against a plain NumPy computation.
"""

from __future__ import annotations

import numpy as np

import cunumpy as xp

A = xp.algorithms


def main(n: int = 20_000, levels: int = 4) -> dict[str, float]:
    rng = np.random.default_rng(0)
    host_pos = rng.uniform(-0.05, 1.05, size=(n, 3))  # a few particles outside [0, 1)^3
    host_charge = rng.uniform(0.5, 1.5, size=n)
    pos, charge = xp.to_cunumpy(host_pos), xp.to_cunumpy(host_charge)

    with xp.profiling.count_transfers() as counter:
        keys = A.morton_keys(pos, [0.0] * 3, [1.0] * 3, levels)  # one key per particle
        keys, order, pos, charge = A.sort_by_key(keys, pos, charge)  # contiguous cells
        cell_keys, starts, stops = A.segment_boundaries(keys)  # the occupied cells
        cell = xp.searchsorted(cell_keys, keys)  # dense cell index of every particle
        density = A.segment_sum(charge, cell, int(cell_keys.shape[0]))
        inside = xp.all((pos >= 0.0) & (pos < 1.0), axis=1)
        kept = A.compact_by_mask(inside, pos, charge)  # in place, order kept
    print(counter.report())

    # the same with NumPy alone
    scale = 2.0**levels
    cells = np.clip(np.floor(host_pos * scale), 0, scale - 1).astype(np.int64)
    flat = (cells[:, 0] * 16 + cells[:, 1]) * 16 + cells[:, 2]
    expected = np.bincount(flat, weights=host_charge, minlength=16**3)
    got = np.zeros(16**3)
    decoded = A.morton_decode(xp.to_numpy(cell_keys), 3)
    got[(decoded[0] * 16 + decoded[1]) * 16 + decoded[2]] = xp.to_numpy(density)
    assert np.allclose(got, expected)
    inside_host = np.all((host_pos >= 0.0) & (host_pos < 1.0), axis=1)
    assert kept == int(inside_host.sum())
    total = float(xp.to_numpy(charge[:kept]).sum())
    assert np.isclose(total, host_charge[inside_host].sum())
    print(f"{n} particles, {int(cell_keys.shape[0])} occupied cells, {kept} inside the box")
    return {"cells": float(cell_keys.shape[0]), "kept": float(kept), "charge_inside": total}


if __name__ == "__main__":
    main()
