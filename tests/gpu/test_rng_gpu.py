"""random.cuh on the GPU against cunumpy 0.7.1 (tests/data/rng_0.7.1.json): uniforms bit for
bit in every device form, normals up to the last bits of the device's log/sqrt/sin/cos, and the
philox_* host twins run on CuPy arrays."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import cunumpy as xp
from cunumpy.kernels import CudaKernel
from cunumpy.profiling import count_transfers

pytestmark = pytest.mark.gpu

DATA = Path(__file__).resolve().parents[1] / "data"
REF = json.loads((DATA / "rng_0.7.1.json").read_text())
UNIFORM_COLUMNS = {0: "uniform2_u0", 1: "uniform2_u1", 4: "uniform", 6: "u64_to_uniform_w2w3",
                   7: "u64_to_uniform_w1w0"}  # fmt: skip
NORMAL_COLUMNS = {2: "normal2_z0", 3: "normal2_z1", 5: "normal"}


@pytest.fixture(scope="module")
def cp():
    import cupy

    return cupy


def cases():
    return tuple(
        np.array([int(v) for v in REF[k]], dtype=np.uint64) for k in ("seed", "stream", "counter")
    )


def floats(hexes):
    return np.array([int(h, 16) for h in hexes], dtype=np.uint64).view(np.float64)


def test_device_forms_equal_0_7_1(cp):
    s, t, c = cases()
    out = cp.zeros((len(s), 8))
    kernel = CudaKernel((DATA / "rng_draw.cu").read_text(), "draw")
    kernel(cp.asarray(s), cp.asarray(t), cp.asarray(c), out, len(s), n_threads=len(s))
    got = out.get()
    for j, name in UNIFORM_COLUMNS.items():
        want = floats(REF["emulated_device"][name])
        np.testing.assert_array_equal(got[:, j].view(np.uint64), want.view(np.uint64), err_msg=name)
    for j, name in NORMAL_COLUMNS.items():
        want = floats(REF["emulated_device"][name])
        np.testing.assert_allclose(got[:, j], want, rtol=1e-14, atol=1e-14, err_msg=name)


def test_philox_on_cupy_arrays_stays_on_the_device(cp):
    s, t, c = cases()
    with count_transfers() as counter:
        ds, dt, dc = cp.asarray(s), cp.asarray(t), cp.asarray(c)
        u0, u1 = xp.rng.philox_uniform2(ds, dt, dc)
        z0, _ = xp.rng.philox_normal2(ds, dt, dc)
    assert isinstance(u0, cp.ndarray) and isinstance(z0, cp.ndarray)
    assert counter.to_host == 0, counter.report()
    np.testing.assert_array_equal(u0.get().view(np.uint64), floats(REF["uniform0"]).view(np.uint64))
    np.testing.assert_array_equal(u1.get().view(np.uint64), floats(REF["uniform1"]).view(np.uint64))
    np.testing.assert_allclose(z0.get(), floats(REF["normal0"]), rtol=1e-14, atol=1e-14)


def test_get_rng_and_random_streams_on_cupy(cp):
    xp.set_backend("cupy", strict=True)
    try:
        g = xp.rng.get_rng(7)
        assert isinstance(g.random(3), cp.ndarray)
        rs = xp.rng.RandomStreams()
        rs.seed(42, rank=1)
        a = rs.normal(0.0, 1.0, 5)
        rs.seed(42, rank=1)
        assert isinstance(a, cp.ndarray)
        np.testing.assert_array_equal(rs.normal(0.0, 1.0, 5).get(), a.get())
    finally:
        xp.set_backend("numpy")
