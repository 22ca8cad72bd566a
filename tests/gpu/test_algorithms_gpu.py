"""xp.algorithms on a real GPU (its CUDA kernels), xp.scipy/optimize with CuPy, and the
scan.cuh/morton.cuh headers compiled by NVRTC: against NumPy and SciPy on the same data."""

from __future__ import annotations

import numpy as np
import pytest

import cunumpy as xp
from cunumpy.exceptions import AlgorithmValueError

pytestmark = pytest.mark.gpu
A = xp.algorithms


@pytest.fixture(scope="module")
def cp():
    import cupy

    return cupy


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(11)
    n = 1 << 20
    return {
        "cells": rng.integers(-3, 5000, size=n),
        "wide": rng.integers(-(2**50), 2**50, size=n),
        "values": rng.standard_normal((n, 3)),
        "pos2": rng.uniform(-0.1, 1.1, size=(n, 2)),
        "pos3": rng.uniform(-0.1, 1.1, size=(n, 3)),
        "mask": rng.random(n) < 0.9,
    }


def test_morton_keys_bit_identical_to_host(cp, data):
    for pos, levels in ((data["pos2"], 32), (data["pos3"], 21), (data["pos2"], 7)):
        ndim = pos.shape[1]
        lower, upper = [0.0] * ndim, [1.0] * ndim
        got = A.morton_keys(cp.asarray(pos), lower, upper, levels)
        np.testing.assert_array_equal(got.get(), A.morton_keys(pos, lower, upper, levels))
    k = A.morton_encode(cp.asarray(data["cells"][:1000] % 100), cp.asarray(np.arange(1000)))
    host = A.morton_encode(data["cells"][:1000] % 100, np.arange(1000))
    np.testing.assert_array_equal(k.get(), host)
    for got, expected in zip(A.morton_decode(k, 2), A.morton_decode(host, 2), strict=True):
        np.testing.assert_array_equal(got.get(), expected)


@pytest.mark.parametrize("name", ["cells", "wide"])
def test_sort_by_key_stable_like_numpy(cp, data, name):
    keys, values = data[name], data["values"]
    sorted_keys, order, v = A.sort_by_key(cp.asarray(keys), cp.asarray(values))
    expected = np.argsort(keys, kind="stable")
    np.testing.assert_array_equal(order.get(), expected)
    np.testing.assert_array_equal(sorted_keys.get(), keys[expected])
    np.testing.assert_array_equal(v.get(), values[expected])
    _, _, vt = A.sort_by_key(cp.asarray(keys), cp.asarray(values.T.copy()), axis=-1)
    np.testing.assert_array_equal(vt.get(), values.T[:, expected])


def test_segment_sum_and_plan(cp, data):
    cells, values = data["cells"], data["values"]
    expected = A.segment_sum(values, cells, 5000)
    got = A.segment_sum(cp.asarray(values), cp.asarray(cells), 5000)
    np.testing.assert_allclose(got.get(), expected, rtol=1e-9, atol=1e-9)
    plan = A.SegmentPlan(cp.asarray(cells), 5000)
    out = cp.empty((5000, 3))
    assert plan.sum(cp.asarray(values), out=out) is out
    np.testing.assert_allclose(out.get(), expected, rtol=1e-9, atol=1e-9)
    f32 = values[:, 0].astype(np.float32)
    np.testing.assert_allclose(
        plan.sum(cp.asarray(f32)).get(), A.segment_sum(f32, cells, 5000), rtol=1e-3, atol=1e-3
    )
    # sorted keys: whole warps share a key and add up before their one atomic
    order = np.argsort(cells, kind="stable")
    np.testing.assert_allclose(
        A.segment_sum(cp.asarray(values[order]), cp.asarray(cells[order]), 5000).get(),
        expected,
        rtol=1e-9,
        atol=1e-9,
    )
    with pytest.raises(AlgorithmValueError, match="smaller than n_segments=4999"):
        A.segment_sum(cp.asarray(values), cp.asarray(cells), 4999)


def test_cell_offsets_boundaries_and_compaction(cp, data):
    cells = np.sort(data["cells"])
    valid = cells[cells >= 0]
    np.testing.assert_array_equal(
        A.cell_offsets(cp.asarray(valid), 6000).get(), A.cell_offsets(valid, 6000)
    )
    np.testing.assert_array_equal(
        A.cell_offsets(cp.asarray(valid), 6000, check=False).get(), A.cell_offsets(valid, 6000)
    )
    with pytest.raises(AlgorithmValueError):
        A.cell_offsets(cp.asarray(cells), 6000)  # negative IDs
    for got, expected in zip(
        A.segment_boundaries(cp.asarray(cells)), A.segment_boundaries(cells), strict=True
    ):
        np.testing.assert_array_equal(got.get(), expected)
    with pytest.raises(AlgorithmValueError):
        A.segment_boundaries(cp.asarray(cells[::-1].copy()))
    mask, values = data["mask"], data["values"]
    a, b, c = cp.asarray(values), cp.asarray(values.T.copy()), cp.asarray(mask.astype(np.int8))
    n = A.compact_by_mask(cp.asarray(mask), a, c)
    assert n == int(mask.sum()) == A.compact_by_mask(cp.asarray(mask), b, axis=-1)
    np.testing.assert_array_equal(a[:n].get(), values[mask])
    np.testing.assert_array_equal(b[:, :n].get(), values.T[:, mask])
    assert int(c[:n].sum()) == n


SCANS = r"""
#include <cunumpy/scan.cuh>
#include <cunumpy/morton.cuh>
extern "C" __global__ void scans(const long long* v, long long* inc, long long* exc,
                                 long long* odd, unsigned long long* key, long long n) {
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  const long long x = i < n ? v[i] : 0;
  const long long a = cunumpy_block_inclusive_sum(x);
  const long long b = cunumpy_block_exclusive_sum(x);
  long long o = -1;
  if (threadIdx.x & 1) o = cunumpy_warp_exclusive_sum(x, 0xaaaaaaaau & cunumpy_block_warp_mask());
  if (i < n) {
    inc[i] = a; exc[i] = b; odd[i] = o;
    key[i] = cunumpy_morton_key3(x * 0.001, 0.5, 0.25, 0.0, 0.0, 0.0, 2.0, 4.0, 8.0, 10);
  }
}
"""


@pytest.mark.parametrize("block", [256, 96])
def test_scan_and_morton_headers(cp, block):
    from cunumpy.kernels import CudaKernel

    n = 3 * block + 5
    v = np.arange(1, n + 1, dtype=np.int64)
    outs = [cp.zeros(n, dtype=np.int64) for _ in range(3)] + [cp.zeros(n, dtype=np.uint64)]
    grid = -(-n // block)
    CudaKernel(SCANS, "scans", block_size=block)(cp.asarray(v), *outs, n, grid=grid)
    padded = np.zeros(grid * block, np.int64)
    padded[:n] = v
    inc = np.cumsum(padded.reshape(grid, block), axis=1).ravel()[:n]
    np.testing.assert_array_equal(outs[0].get(), inc)
    np.testing.assert_array_equal(outs[1].get(), inc - v)
    lanes = np.arange(grid * block) % block
    odd = np.where(lanes % 2 == 1, padded, 0).reshape(grid, block)
    groups = np.concatenate(
        [np.cumsum(r[w : w + 32]) - r[w : w + 32] for r in odd for w in range(0, block, 32)]
    )[:n]
    np.testing.assert_array_equal(outs[2].get(), np.where(lanes[:n] % 2 == 1, groups, -1))
    pos = np.stack([v * 0.001, np.full(n, 0.5), np.full(n, 0.25)], axis=1)
    scales = A.morton_scales([0.0] * 3, [512.0, 256.0, 128.0], 10)
    np.testing.assert_array_equal(scales, [2.0, 4.0, 8.0])
    np.testing.assert_array_equal(
        outs[3].get(), A.morton_keys(pos, [0.0] * 3, [512.0, 256.0, 128.0], 10)
    )


def test_scipy_optimize_on_cupy(cp):
    import cupyx.scipy.special

    with xp.use_backend("cupy", strict=True):
        assert xp.scipy.special.erf is cupyx.scipy.special.erf
        s = cp.asarray([2.0, 3.0, 4.0])
        root = xp.optimize.newton(lambda x: x**2 - s, cp.ones(3), fprime=lambda x: 2 * x)
        assert isinstance(root, cp.ndarray)
        np.testing.assert_allclose(root.get(), np.sqrt([2.0, 3.0, 4.0]), rtol=1e-14)
        solve = xp.scipy.linalg.solve_circulant
        c, b = np.array([2.0, -1.0, 0.0, 0.5]), np.array([1.0, 2.0, 3.0, 4.0])
        x = solve(cp.asarray(c), cp.asarray(b))
        circulant = np.stack([np.roll(c, k) for k in range(4)], axis=1)
        np.testing.assert_allclose(circulant @ x.get(), b, rtol=1e-12)


def test_host_solvers_with_cupy_callbacks(cp):
    pytest.importorskip("scipy")  # SciPy runs on the host; the GPU machine may lack it
    with xp.use_backend("cupy", strict=True):
        res = xp.optimize.fsolve(lambda x: x**2 - cp.asarray([4.0, 9.0]), cp.ones(2))
        assert isinstance(res, cp.ndarray)
        np.testing.assert_allclose(res.get(), [2.0, 3.0], rtol=1e-10)
        y = xp.integrate.odeint(lambda y, t: -y, cp.ones(1), np.array([0.0, 1.0]))
        assert isinstance(y, cp.ndarray)
        np.testing.assert_allclose(y.get()[-1, 0], np.exp(-1.0), rtol=1e-6)
