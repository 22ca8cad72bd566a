"""The fusion benchmark's gather ``a[idx] * b`` (2^26 points from a 32 MiB table), once each
as the fused kernel, the plain CUDA gather, the plain random-read kernel and a copy of ``b``, for
Nsight Compute to count what each moves through the L2 cache and DRAM
(``GPU_CHECK_NCU_GATHER=1`` in scripts/gpu-check). Needs CuPy and a GPU."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benches"))


def main() -> int:
    import cupy
    import fusion  # benches/fusion.py: the same cases and plain kernels as the benchmark

    import cunumpy as xp

    rng = cupy.random.default_rng(1)
    cases = fusion.index_cases(
        cupy,
        rng.standard_normal,
        lambda high, size: rng.integers(0, high, size, dtype=cupy.int64),
        1 << 26,
        8192,
    )
    (a, idx, b) = next(args for name, args, _ in cases if name == "a[idx] * b")
    fused = xp.fuse(fusion._index_peers(cupy, "a[idx] * b"), kernel_name="bench_index")
    # twice each: ncu skips the first launch of each name (compile, first touch)
    for _ in range(2):
        fused(a, idx, b)
        fusion.gather_kernel(cupy)(a, idx, b)
        fusion.random_read_kernel(cupy)(a, idx.size)
        cupy.copyto(cupy.empty_like(b), b)
    cupy.cuda.runtime.deviceSynchronize()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
