"""xp.algorithms on the GPU against the CuPy composition a user would write instead, measured
in the same run on the same data (2^24 particles in 64^3 cells by default).

Each case times the whole call with CUDA events (host work and synchronizations included, as a
caller sees them), interleaving cunumpy and CuPy, and reports the median of ``--repeat`` runs.
Where users have more than one natural composition, the faster one is the peer. ``ratio`` is
CuPy time / cunumpy time: 1.0 or more means cunumpy is at least as fast. Prints JSON.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="gpu")  # scripts/gpu-check passes it; GPU only
    parser.add_argument("--n", type=int, default=1 << 24)
    parser.add_argument("--cells", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=7)
    opts = parser.parse_args()
    try:
        import cupy
        import cupyx
    except ImportError:
        print(json.dumps({"benchmark": "algorithms", "skipped": "cupy is not installed"}))
        return 0
    import numpy as np

    import cunumpy as xp

    A = xp.algorithms  # noqa: N806
    n, side = opts.n, opts.cells
    n_cells = side**3
    rng = cupy.random.default_rng(0)
    pos = rng.random((n, 3))
    weights = rng.random(n)
    velocities = rng.standard_normal((n, 3))
    cells = (
        (pos[:, 0] * side).astype(cupy.int64) * side * side
        + (pos[:, 1] * side).astype(cupy.int64) * side
        + (pos[:, 2] * side).astype(cupy.int64)
    )
    # 1% of the particles left the domain: key -1, mask False
    gone = rng.random(n) < 0.01
    keys = cupy.where(gone, -1, cells)
    alive = ~gone
    sorted_cells = cupy.sort(cells)
    sorted_keys = cupy.sort(keys)
    lower, upper, levels = [0.0] * 3, [1.0] * 3, 21
    scales = A.morton_scales(lower, upper, levels)

    def timed(fn):
        start, stop = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        return cupy.cuda.get_elapsed_time(start, stop) / 1e3

    # -- the compositions ----------------------------------------------------------------------
    def spread3(v):
        v = v & cupy.uint64(0x1FFFFF)
        for shift, mask in (
            (32, 0x001F00000000FFFF),
            (16, 0x001F0000FF0000FF),
            (8, 0x100F00F00F00F00F),
            (4, 0x10C30C30C30C30C3),
            (2, 0x1249249249249249),
        ):
            v = (v | (v << cupy.uint64(shift))) & cupy.uint64(mask)
        return v

    def cupy_morton():
        t = cupy.floor((pos - cupy.asarray(lower)) * cupy.asarray(scales))
        c = cupy.clip(t, 0, 2**levels - 1).astype(cupy.uint64)
        return (
            spread3(c[:, 0])
            | (spread3(c[:, 1]) << cupy.uint64(1))
            | (spread3(c[:, 2]) << cupy.uint64(2))
        )

    def cupy_sort():
        order = cupy.argsort(cells)
        return cells[order], order, pos[order], weights[order]

    def cupy_bincount_masked():
        m = keys >= 0
        return cupy.bincount(keys[m], weights=weights[m], minlength=n_cells)

    def cupy_bincount_where():
        return cupy.bincount(
            cupy.where(keys >= 0, keys, n_cells), weights=weights, minlength=n_cells + 1
        )[:n_cells]

    def cupy_bincount_sorted():
        return cupy.bincount(
            cupy.where(sorted_keys >= 0, sorted_keys, n_cells),
            weights=weights,
            minlength=n_cells + 1,
        )[:n_cells]

    def cupy_scatter_add():
        out = cupy.zeros((n_cells, 3))
        m = keys >= 0
        cupyx.scatter_add(out, keys[m], velocities[m])
        return out

    valid_keys = cupy.where(keys >= 0, keys, n_cells)

    def cupy_plan_bincount():  # keys prepared once, as SegmentPlan does
        return cupy.bincount(valid_keys, weights=weights, minlength=n_cells + 1)[:n_cells]

    def cupy_offsets():
        return cupy.searchsorted(sorted_cells, cupy.arange(n_cells + 1))

    def cupy_offsets_checked():  # the same guarantees as the checked cell_offsets
        ok = (
            bool((sorted_cells[1:] >= sorted_cells[:-1]).all())
            and 0 <= int(sorted_cells[0]) <= int(sorted_cells[-1]) < n_cells
        )
        assert ok
        return cupy.searchsorted(sorted_cells, cupy.arange(n_cells + 1))

    def cupy_boundaries():
        first = cupy.empty(n, dtype=bool)
        first[0] = True
        cupy.not_equal(sorted_keys[1:], sorted_keys[:-1], out=first[1:])
        starts = cupy.flatnonzero(first)
        stops = cupy.concatenate([starts[1:], cupy.asarray([n])])
        return sorted_keys[starts], starts, stops

    work = [pos.copy(), velocities.copy(), weights.copy()]

    def cupy_compact():
        index = cupy.flatnonzero(alive)
        kept = index.size
        for a in work:
            a[:kept] = a[index]
        return kept

    def cupy_compact_mask():
        kept = int(cupy.count_nonzero(alive))
        for a in work:
            a[:kept] = a[alive]
        return kept

    plan = A.SegmentPlan(keys, n_cells)
    cases = [
        ("morton_keys 3D", lambda: A.morton_keys(pos, lower, upper, levels), [cupy_morton]),
        ("sort_by_key (cells; pos, w)", lambda: A.sort_by_key(cells, pos, weights), [cupy_sort]),
        (
            "segment_sum 1D",
            lambda: A.segment_sum(weights, keys, n_cells),
            [cupy_bincount_masked, cupy_bincount_where],
        ),
        (
            "segment_sum 1D, sorted keys",
            lambda: A.segment_sum(weights, sorted_keys, n_cells),
            [cupy_bincount_sorted],
        ),
        (
            "segment_sum (n, 3)",
            lambda: A.segment_sum(velocities, keys, n_cells),
            [cupy_scatter_add],
        ),
        ("SegmentPlan.sum 1D", lambda: plan.sum(weights), [cupy_plan_bincount]),
        (
            "cell_offsets (checked)",
            lambda: A.cell_offsets(sorted_cells, n_cells),
            [cupy_offsets_checked],
        ),
        (
            "cell_offsets(check=False)",  # vs unchecked searchsorted
            lambda: A.cell_offsets(sorted_cells, n_cells, check=False),
            [cupy_offsets],
        ),
        ("segment_boundaries", lambda: A.segment_boundaries(sorted_keys), [cupy_boundaries]),
        (
            "compact_by_mask (3 arrays)",
            lambda: A.compact_by_mask(alive, *work),
            [cupy_compact, cupy_compact_mask],
        ),
    ]

    # the same answers first (exact where the operation is exact)
    assert bool((A.morton_keys(pos, lower, upper, levels) == cupy_morton()).all())
    assert bool((A.sort_by_key(cells, pos)[0] == cells[cupy.argsort(cells)]).all())
    assert bool(cupy.allclose(A.segment_sum(weights, keys, n_cells), cupy_bincount_where()))
    assert bool((A.cell_offsets(sorted_cells, n_cells) == cupy_offsets()).all())
    assert bool((A.cell_offsets(sorted_cells, n_cells, check=False) == cupy_offsets()).all())
    assert all(
        bool((a == b).all())
        for a, b in zip(A.segment_boundaries(sorted_keys), cupy_boundaries(), strict=True)
    )

    results = []
    for name, ours, peers in cases:
        for fn in (ours, *peers):  # compile and warm the pools
            fn()
        t_ours: list[float] = []
        t_peers: list[list[float]] = [[] for _ in peers]
        for _ in range(opts.repeat):
            t_ours.append(timed(ours))
            for times, fn in zip(t_peers, peers, strict=True):
                times.append(timed(fn))
        peer_medians = {
            fn.__name__: statistics.median(t) for fn, t in zip(peers, t_peers, strict=True)
        }
        best = min(peer_medians, key=peer_medians.__getitem__)
        mine = statistics.median(t_ours)
        results.append(
            {
                "case": name,
                "cunumpy_s": mine,
                "cupy_s": peer_medians[best],
                "cupy_composition": best,
                "cupy_compositions_s": peer_medians,
                "ratio": peer_medians[best] / mine,
            }
        )
    props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
    report = {
        "benchmark": "algorithms",
        "device": props["name"].decode() if isinstance(props["name"], bytes) else props["name"],
        "n": n,
        "n_cells": n_cells,
        "repeat": opts.repeat,
        "statistic": "median",
        "results": results,
        "all_at_or_above_cupy": all(r["ratio"] >= 1.0 for r in results),
        "numpy": np.__version__,
        "cupy": cupy.__version__,
    }
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
