"""The CUDA kernels of xp.algorithms and the scan.cuh/morton.cuh headers, run in the CPU
emulator on the fake CuPy, against the NumPy path. (On a GPU: tests/gpu/test_algorithms_gpu.py.)
"""

from __future__ import annotations

import numpy as np
import pytest

import cunumpy as xp
from cunumpy import _algorithms_cuda
from cunumpy.kernel_testing import emulation_compiler

pytestmark = [
    pytest.mark.cxx,
    pytest.mark.skipif(emulation_compiler() is None, reason="needs a host C++ compiler"),
]

A = xp.algorithms


@pytest.fixture
def cupy():
    from cunumpy.kernel_testing import install_fake_cupy, uninstall_fake_cupy

    fake = install_fake_cupy()
    try:
        with _algorithms_cuda.use_kernels_on_fake():
            yield fake
    finally:
        uninstall_fake_cupy()


def test_every_algorithm_kernel_agrees_with_numpy(cupy):
    rng = np.random.default_rng(7)
    n = 3000
    cells = rng.integers(-2, 50, size=n)
    values = rng.standard_normal((n, 3))
    pos = rng.uniform(-0.2, 1.2, size=(n, 3))
    mask = rng.random(n) < 0.6

    keys = A.morton_keys(cupy.asarray(pos), [0, 0, 0], [1, 1, 1], 21)
    np.testing.assert_array_equal(keys.get(), A.morton_keys(pos, [0, 0, 0], [1, 1, 1], 21))
    keys2 = A.morton_keys(cupy.asarray(pos[:, :2].copy()), [1, 0], [0, 1], 32)
    np.testing.assert_array_equal(keys2.get(), A.morton_keys(pos[:, :2], [1, 0], [0, 1], 32))

    got = A.segment_sum(cupy.asarray(values), cupy.asarray(cells), 50)
    np.testing.assert_allclose(got.get(), A.segment_sum(values, cells, 50), rtol=1e-12)
    f32 = values[:, 0].astype(np.float32)
    plan = A.SegmentPlan(cupy.asarray(cells), 50)
    np.testing.assert_allclose(
        plan.sum(cupy.asarray(f32)).get(), A.segment_sum(f32, cells, 50), rtol=1e-5
    )
    with pytest.raises(xp.exceptions.AlgorithmValueError, match="smaller than n_segments=49"):
        A.segment_sum(cupy.asarray(values), cupy.asarray(cells), 49)

    sc = np.sort(cells[cells >= 0])
    np.testing.assert_array_equal(
        A.cell_offsets(cupy.asarray(sc), 60).get(), A.cell_offsets(sc, 60)
    )
    np.testing.assert_array_equal(
        A.cell_offsets(cupy.asarray(sc), 60, check=False).get(), A.cell_offsets(sc, 60)
    )
    with pytest.raises(xp.exceptions.AlgorithmValueError, match="cell_offsets"):
        A.cell_offsets(cupy.asarray(sc[::-1].copy()), 60)

    for k in (np.sort(cells), np.sort(cells[cells >= 0]).astype(np.uint64) * np.uint64(2**58)):
        got = A.segment_boundaries(cupy.asarray(k))
        for g, e in zip(got, A.segment_boundaries(k), strict=True):
            np.testing.assert_array_equal(g.get(), e)
    with pytest.raises(xp.exceptions.AlgorithmValueError, match="segment_boundaries"):
        A.segment_boundaries(cupy.asarray(np.array([3, 1, 2])))

    a, b, c = values.copy(), values.T.copy(), mask.astype(np.int8)
    da, db, dc = cupy.asarray(a), cupy.asarray(b), cupy.asarray(c)
    kept = A.compact_by_mask(cupy.asarray(mask), da, dc)
    assert kept == A.compact_by_mask(mask, a, c) == int(mask.sum())
    assert A.compact_by_mask(cupy.asarray(mask), db, axis=-1) == kept
    np.testing.assert_array_equal(da.get()[:kept], values[mask])
    np.testing.assert_array_equal(dc.get()[:kept], np.ones(kept, np.int8))
    np.testing.assert_array_equal(db.get()[:, :kept], values.T[:, mask])

    sorted_keys, order, sv = A.sort_by_key(cupy.asarray(cells), cupy.asarray(values))
    np.testing.assert_array_equal(order.get(), np.argsort(cells, kind="stable"))
    np.testing.assert_array_equal(sv.get(), values[np.argsort(cells, kind="stable")])


SCANS = r"""
#include <cunumpy/scan.cuh>
extern "C" __global__ void scans(const long long* v, long long* block_inc, long long* block_exc,
                                 long long* warp_inc, long long* odd_exc, long long n) {
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  const long long x = i < n ? v[i] : 0;
  const long long inc = cunumpy_block_inclusive_sum(x);
  const long long exc = cunumpy_block_exclusive_sum(x);
  const long long w = cunumpy_warp_inclusive_sum(x, cunumpy_block_warp_mask());
  long long o = -1;
  if (threadIdx.x & 1) o = cunumpy_warp_exclusive_sum(x, 0xaaaaaaaau & cunumpy_block_warp_mask());
  if (i < n) { block_inc[i] = inc; block_exc[i] = exc; warp_inc[i] = w; odd_exc[i] = o; }
}
"""


@pytest.mark.parametrize("block", [64, 96, 40])
def test_scan_header_block_and_warp_sums(cupy, block):
    from cunumpy.kernels import CudaKernel

    n = 2 * block + 7
    v = np.arange(1, n + 1, dtype=np.int64) ** 2
    outs = [cupy.zeros(n, dtype=np.int64) for _ in range(4)]
    grid = -(-n // block)
    CudaKernel(SCANS, "scans", block_size=block)(cupy.asarray(v), *outs, n, grid=grid)
    padded = np.zeros(grid * block, np.int64)
    padded[:n] = v
    per_block = padded.reshape(grid, block)
    inc = np.cumsum(per_block, axis=1).ravel()[:n]
    np.testing.assert_array_equal(outs[0].get(), inc)
    np.testing.assert_array_equal(outs[1].get(), inc - v)
    lanes = np.arange(grid * block) % block
    warps = padded.reshape(grid, block)
    warp_inc = np.concatenate(
        [np.cumsum(row[w : w + 32]) for row in warps for w in range(0, block, 32)]
    )[:n]
    np.testing.assert_array_equal(outs[2].get(), warp_inc)
    odd = np.where(lanes % 2 == 1, padded, 0)
    odd_groups = np.concatenate(
        [np.cumsum(row[w : w + 32]) - row[w : w + 32] for row in odd.reshape(grid, block)
         for w in range(0, block, 32)]
    )[:n]  # fmt: skip
    expected_odd = np.where(lanes[:n] % 2 == 1, odd_groups, -1)
    np.testing.assert_array_equal(outs[3].get(), expected_odd)


MORTON_HOST = r"""
#include <cunumpy/morton.cuh>
#include <cstdio>
int main() {
  double x, y, z;
  while (std::scanf("%lf %lf %lf", &x, &y, &z) == 3) {
    std::printf("%llu %llu\n", cunumpy_morton_key2(x, y, 0.0, 1.0, 8.0, -4.0, 3),
                cunumpy_morton_key3(x, y, z, -1.0, 0.0, 0.0, 0.5, 2.0, 2097152.0, 21));
  }
  return 0;
}
"""


def test_morton_header_as_plain_cxx_matches_morton_keys(tmp_path):
    """morton.cuh is __host__ __device__: as plain C++ (-Wall -Werror, no CUDA) it gives the
    keys of xp.algorithms.morton_keys for the same lower corner and scales."""
    import subprocess

    from cunumpy.cuda import cuda_include_dir

    src = tmp_path / "morton.cpp"
    src.write_text(MORTON_HOST)
    exe = tmp_path / "morton"
    cxx = emulation_compiler()
    subprocess.run(
        [cxx, "-std=c++17", "-O2", "-Wall", "-Wextra", "-Werror", f"-I{cuda_include_dir()}",
         str(src), "-o", str(exe)],
        check=True,
    )  # fmt: skip
    rng = np.random.default_rng(3)
    pts = rng.uniform(-1.5, 1.5, size=(500, 3))
    pts[:5] = [[0.0, 1.0, 0.0], [0.125, 0.75, 1.0], [-3.0, 9.0, 0.5], [1.0, 0.0, 1e-9], [0, 0, 0]]
    out = subprocess.run(
        [str(exe)],
        input="\n".join(" ".join(repr(float(v)) for v in p) for p in pts),
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    got = np.array(out, dtype=np.uint64).reshape(-1, 2)
    # scales (8, -4) at 3 levels: x in [0, 1], y from 1 down to -1 (a reversed axis)
    lower2, upper2 = [0.0, 1.0], [1.0, 1.0 - 8.0 / 4.0]
    np.testing.assert_array_equal(A.morton_scales(lower2, upper2, 3), [8.0, -4.0])
    np.testing.assert_array_equal(got[:, 0], A.morton_keys(pts[:, :2].copy(), lower2, upper2, 3))
    lower3, upper3 = [-1.0, 0.0, 0.0], [-1.0 + 2.0**21 / 0.5, 2.0**20, 1.0]
    np.testing.assert_array_equal(A.morton_scales(lower3, upper3, 21), [0.5, 2.0, 2097152.0])
    np.testing.assert_array_equal(got[:, 1], A.morton_keys(pts, lower3, upper3, 21))
