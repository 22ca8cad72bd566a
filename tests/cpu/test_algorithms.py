"""xp.algorithms on NumPy and on the emulated device, against NumPy compositions and against
digests of the values cunumpy 0.7.1 returns for the same inputs (generated in a 0.7.1 venv)."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

import cunumpy as xp
from cunumpy.exceptions import AlgorithmTypeError, AlgorithmValueError

A = xp.algorithms

# sha256[:16] of the C-order bytes of cunumpy 0.7.1's results on `inputs()`
V071 = {
    "keys2": "3b8c422373be386b",
    "keys3": "d650b6ed6ecb48b5",
    "sort_cells": ["1f337a5977f7862d", "0c44e7d812a13968", "f7f2022fdea90700", "777c5b181d14ebc9"],
    "sort_wide": ["9d9d8c3a2698c27a", "221d9e49b39e6ef9", "613beaf631ed370d"],
    "offsets": "7d0811190dc8fbc0",
    "bounds": ["d1a2345de7406f5e", "ea3dab6c605ad594", "d6bdd9718405afbc"],
    "compact": [6252, "9aa9c3721f9070ed", "258431cbf8402cd5"],
    "encode": "c0748093aba0ff0c",
    "decode": ["f4766896969855ae", "d42ad6b501270ba2"],
}


def inputs():
    rng = np.random.default_rng(20261202)
    pos2 = rng.uniform(-0.25, 1.25, size=(5000, 2))
    pos3 = rng.uniform(-1.0, 3.0, size=(5000, 3))
    cells = rng.integers(-3, 700, size=9000)
    wide = rng.integers(-(2**40), 2**40, size=9000)
    values = rng.standard_normal((9000, 3))
    mask = rng.random(9000) < 0.7
    return pos2, pos3, cells, wide, values, mask


def digest(a) -> str:
    return hashlib.sha256(np.ascontiguousarray(xp.to_numpy(a)).tobytes()).hexdigest()[:16]


@pytest.fixture(params=["numpy", "emulated"])
def dev(request):
    """Moves host data to the backend under test: NumPy itself, or the emulated device."""
    if request.param == "numpy":
        yield lambda a: a
        return
    from cunumpy.kernel_testing import install_fake_cupy, uninstall_fake_cupy

    cupy = install_fake_cupy()
    try:
        yield cupy.asarray
    finally:
        uninstall_fake_cupy()


def test_morton_keys_match_071_and_the_per_axis_formula(dev):
    pos2, pos3, *_ = inputs()
    keys2 = A.morton_keys(dev(pos2), [0.0, 0.0], [1.0, 1.0], 10)
    keys3 = A.morton_keys(dev(pos3), [2.0, 0.0, -1.0], [0.0, 2.0, 3.0], 21)
    assert digest(keys2) == V071["keys2"]
    assert digest(keys3) == V071["keys3"]
    # independent check: cell = clip(floor((x - lo) * 2**L / (hi - lo))), bits interleaved
    cells = np.clip(np.floor(pos2 * 1024.0), 0, 1023).astype(np.uint64)
    expected = np.zeros(len(pos2), np.uint64)
    for b in range(10):
        for axis in range(2):
            bit = (cells[:, axis] >> np.uint64(b)) & np.uint64(1)
            expected |= bit << np.uint64(2 * b + axis)
    np.testing.assert_array_equal(xp.to_numpy(keys2), expected)


def test_morton_encode_decode_round_trip(dev):
    *_, cells, _, _, _ = inputs()
    valid = cells[cells >= 0]
    k = A.morton_encode(dev(valid[:100]), dev(valid[100:200]))
    assert digest(k) == V071["encode"]
    ix, iy = A.morton_decode(k, 2)
    assert [digest(ix), digest(iy)] == V071["decode"]
    np.testing.assert_array_equal(xp.to_numpy(ix), valid[:100])
    big = np.array([2**21 - 1, 5, 0])
    k3 = A.morton_encode(dev(big), dev(big[::-1].copy()), dev(np.array([1, 2, 3])))
    assert [xp.to_numpy(c).tolist() for c in A.morton_decode(k3, 3)] == [
        big.tolist(),
        big[::-1].tolist(),
        [1, 2, 3],
    ]


def test_morton_errors_name_the_function_and_argument():
    with pytest.raises(AlgorithmValueError, match="morton_scales: levels must be 1 to 21"):
        A.morton_scales([0, 0, 0], [1, 1, 1], 22)
    with pytest.raises(AlgorithmValueError, match="nonzero extent"):
        A.morton_scales([0, 0], [1, 0], 4)
    with pytest.raises(AlgorithmValueError, match=r"shape \(n, 2\)"):
        A.morton_keys(np.zeros((3, 3)), [0, 0], [1, 1], 4)
    with pytest.raises(AlgorithmValueError, match=r"\[0, 2\*\*32\)"):
        A.morton_encode(np.array([-1]), np.array([0]))
    with pytest.raises(AlgorithmTypeError, match="integers"):
        A.morton_encode(np.array([1.0]), np.array([0.0]))
    np.testing.assert_array_equal(A.morton_scales([0.0, 0.0], [1.0, 2.0], 4), [16.0, 8.0])


def test_sort_by_key_is_stable_and_matches_071(dev):
    _, _, cells, wide, values, _ = inputs()
    result = A.sort_by_key(dev(cells), dev(values), dev(values[:, 0].copy()))
    assert [digest(x) for x in result] == V071["sort_cells"]
    order = np.argsort(cells, kind="stable")
    np.testing.assert_array_equal(xp.to_numpy(result[1]), order)
    # wide keys (41 bits): the LSD radix path on NumPy; component-major arrays along axis -1
    result = A.sort_by_key(dev(wide), dev(values.T.copy()), axis=-1)
    assert [digest(x) for x in result] == V071["sort_wide"]
    np.testing.assert_array_equal(xp.to_numpy(result[1]), np.argsort(wide, kind="stable"))


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.uint16, np.uint64, np.float64])
def test_sort_by_key_dtypes(dtype):
    rng = np.random.default_rng(1)
    keys = rng.integers(0, 100, size=6000).astype(dtype)
    if dtype == np.uint64:
        keys = keys * np.uint64(2**57)  # spans the top bit
    sorted_keys, order, *_ = A.sort_by_key(keys)
    np.testing.assert_array_equal(order, np.argsort(keys, kind="stable"))
    np.testing.assert_array_equal(sorted_keys, np.sort(keys, kind="stable"))


def test_sort_by_key_checks_shapes():
    with pytest.raises(AlgorithmValueError, match=r"sort_by_key: keys must be 1D"):
        A.sort_by_key(np.zeros((2, 2), np.int64))
    with pytest.raises(AlgorithmValueError, match="array 0 must have 3 entries along axis 0"):
        A.sort_by_key(np.arange(3), np.arange(4))


def test_segment_sum_and_plan_match_numpy(dev):
    _, _, cells, _, values, _ = inputs()
    keep = cells >= 0
    expected = np.zeros((700, 3))
    np.add.at(expected, cells[keep], values[keep])
    got = A.segment_sum(dev(values), dev(cells), 700)
    np.testing.assert_allclose(xp.to_numpy(got), expected, rtol=1e-12, atol=1e-12)
    plan = A.SegmentPlan(dev(cells), 700)
    assert plan.n_segments == 700
    np.testing.assert_allclose(
        xp.to_numpy(plan.sum(dev(values[:, 0].copy()))), expected[:, 0], rtol=1e-12, atol=1e-12
    )
    out = dev(np.full((700, 3), np.nan))
    assert plan.sum(dev(values), out=out) is out
    np.testing.assert_allclose(xp.to_numpy(out), expected, rtol=1e-12, atol=1e-12)
    ints = A.segment_sum(dev(np.ones(4, np.int32)), dev(np.array([0, 1, 0, -1])), 2)
    assert ints.dtype == np.float64 and xp.to_numpy(ints).tolist() == [2.0, 1.0]
    f32 = A.segment_sum(dev(np.ones(4, np.float32)), dev(np.array([0, 1, 0, -1])), 2)
    assert f32.dtype == np.float32


def test_segment_sum_errors():
    with pytest.raises(AlgorithmValueError, match="smaller than n_segments=2"):
        A.segment_sum(np.ones(4), np.array([0, 1, 0, 5]), 2)
    with pytest.raises(AlgorithmTypeError, match="keys must have an integer dtype"):
        A.segment_sum(np.ones(4), np.array([0.0, 1, 0, 1]), 2)
    with pytest.raises(AlgorithmValueError, match="out must be a C-contiguous float64"):
        A.segment_sum(np.ones(4), np.array([0, 1, 0, 1]), 2, out=np.zeros(2, np.float32))
    with pytest.raises(AlgorithmValueError, match="SegmentPlan: keys must be smaller"):
        A.SegmentPlan(np.array([3]), 2)


def test_cell_offsets_and_segment_boundaries(dev):
    _, _, cells, _, _, _ = inputs()
    sc = np.sort(cells[cells >= 0])
    offsets = A.cell_offsets(dev(sc), 700)
    assert digest(offsets) == V071["offsets"]
    np.testing.assert_array_equal(
        xp.to_numpy(offsets), np.searchsorted(sc, np.arange(701), side="left")
    )
    bounds = A.segment_boundaries(dev(np.sort(cells)))
    assert [digest(x) for x in bounds] == V071["bounds"]
    assert [xp.to_numpy(x).tolist() for x in A.segment_boundaries(dev(np.array([3, 3, 5, 9])))] == [
        [3, 5, 9],
        [0, 2, 3],
        [2, 3, 4],
    ]
    empty = A.segment_boundaries(dev(np.zeros(0, np.int64)))
    assert [x.shape for x in empty] == [(0,), (0,), (0,)]
    assert xp.to_numpy(A.cell_offsets(dev(np.zeros(0, np.int64)), 3)).tolist() == [0, 0, 0, 0]


def test_cell_offsets_and_boundaries_refuse_unsorted_or_out_of_range(dev):
    with pytest.raises(AlgorithmValueError, match="cell_offsets: sorted_cells must be sorted"):
        A.cell_offsets(dev(np.array([1, 0])), 3)
    with pytest.raises(AlgorithmValueError, match=r"in \[0, 3\)"):
        A.cell_offsets(dev(np.array([0, 3])), 3)
    with pytest.raises(AlgorithmValueError, match="segment_boundaries: sorted_keys must be sorted"):
        A.segment_boundaries(dev(np.array([2, 1])))


def test_compact_by_mask_in_place(dev):
    *_, values, mask = inputs()
    a, b = dev(values.copy()), dev(values.T.copy())
    n = A.compact_by_mask(dev(mask), a)
    m = A.compact_by_mask(dev(mask), b, axis=-1)
    assert n == m == V071["compact"][0] == int(mask.sum())
    assert digest(a[:n]) == V071["compact"][1]
    assert digest(b[:, :m]) == V071["compact"][2]
    np.testing.assert_array_equal(xp.to_numpy(a[:n]), values[mask])
    with pytest.raises(AlgorithmTypeError, match="mask must be a 1D boolean array"):
        A.compact_by_mask(dev(np.array([1, 0])), dev(np.ones(2)))
    with pytest.raises(AlgorithmValueError, match="array 0 must have 2 entries"):
        A.compact_by_mask(dev(np.array([True, False])), dev(np.ones(3)))
