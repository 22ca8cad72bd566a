"""cunumpy.kernels.fuse on CuPy arrays: the generated CUDA against NumPy, determinism, ledger
launch events."""

from __future__ import annotations

import numpy as np
import pytest

import cunumpy as xp
from cunumpy.kernels import fuse

pytestmark = pytest.mark.gpu
cupy = pytest.importorskip("cupy")


from fusion_corpus import CASES, run_case  # noqa: E402


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_fused_on_gpu_matches_numpy(case):
    def to_host(x):
        assert isinstance(x, cupy.ndarray), type(x)
        return cupy.asnumpy(x)

    run_case(case, cupy.asarray, to_host, cupy.empty)


@pytest.mark.parametrize("n", [1000, 1 << 22])
def test_reductions_are_deterministic(n):
    rng = np.random.default_rng(1)
    a = cupy.asarray(rng.standard_normal(n))
    b = cupy.asarray(rng.standard_normal(n))
    f = fuse(lambda a, b: xp.sum((a - b) ** 2))
    r1, r2 = cupy.asnumpy(f(a, b)), cupy.asnumpy(f(a, b))
    assert r1.tobytes() == r2.tobytes()
    np.testing.assert_allclose(r1, np.sum((cupy.asnumpy(a) - cupy.asnumpy(b)) ** 2), rtol=1e-11)
    g = fuse(lambda a: a - xp.mean(a))
    assert cupy.asnumpy(g(a)).tobytes() == cupy.asnumpy(g(a)).tobytes()


def test_out_and_scalars_on_gpu():
    a = cupy.arange(10, dtype=cupy.float64)
    out = cupy.empty_like(a)
    f = fuse(lambda a, s: a * s)
    assert f(a, 2.0, out=out) is out
    np.testing.assert_array_equal(cupy.asnumpy(out), np.arange(10) * 2.0)
    f(a, 3.0)
    assert f.trace_count == 1 and f.plan_count == 1
    assert f.plan(a, 3.0).is_compiled


def test_fused_launches_are_in_the_ledger():
    a = cupy.ones(1 << 16)
    f = fuse(lambda a: a - xp.mean(a), kernel_name="ledger_center")
    f(a)  # compile outside the recording
    with xp.profiling.count_transfers() as counter:
        f(a)
    n_launches = sum(len(k["launches"]) for k in f.plan(a).kernels)
    assert counter.launches == n_launches and counter.total == 0
    launches = [e for e in counter.events if e.kind == "launch"]
    assert all("ledger_center" in e.description for e in launches)


def test_mixed_backends_rejected():
    from cunumpy.exceptions import MixedBackendError

    with pytest.raises(MixedBackendError):
        fuse(lambda a, b: a + b)(cupy.ones(3), np.ones(3))


def test_remembered_calls_on_the_device_match_the_first_call():
    # The second call of a signature runs from Rust: fresh outputs, the plan's workspace
    # reused per stream, results equal to the traced call's.
    rng = np.random.default_rng(3)
    a = cupy.asarray(rng.standard_normal(1 << 16))
    b = cupy.asarray(rng.standard_normal(1 << 16))
    f = fuse(lambda a, b, s: (a * b + s, a - xp.mean(a), xp.sum((a - b) ** 2)))
    first = [cupy.asnumpy(r) for r in f(a, b, 0.5)]
    assert f._remembered == 1
    for _ in range(2):
        again = f(a, b, 0.5)
        assert again[0].data.ptr != f(a, b, 0.5)[0].data.ptr  # fresh outputs every call
        for g, e in zip(again, first, strict=True):
            assert cupy.asnumpy(g).tobytes() == e.tobytes()
    s = cupy.cuda.Stream(non_blocking=True)
    with s:
        on_stream = f(a, b, 0.5)
        s.synchronize()
    for g, e in zip(on_stream, first, strict=True):
        assert cupy.asnumpy(g).tobytes() == e.tobytes()
    np.testing.assert_allclose(cupy.asnumpy(f(a, b, -2.0)[0]), first[0] - 2.5, atol=1e-12)


def test_fused_calls_on_the_device_appear_in_the_kernel_profile():
    a = cupy.arange(1000, dtype=np.float64)
    f = fuse(lambda a: a * 2.0 + 1.0, kernel_name="profiled_gpu")
    f(a)
    with xp.profiling.kernel_profile() as profile:
        for _ in range(2):
            f(a)
    assert profile.as_dict()["profiled_gpu"]["cuda"]["calls"] == 2


def test_out_arrays_are_written_in_place_on_the_device():
    a = cupy.arange(4096, dtype=np.float64)
    f = fuse(lambda a, s: (a * s, xp.sum(a)))
    f(a, 2.0)  # traced, then remembered
    target, total = cupy.empty_like(a), cupy.empty(())
    got = f(a, 3.0, out=(target, total))
    assert got[0] is target and got[1] is total
    np.testing.assert_array_equal(cupy.asnumpy(target), np.arange(4096) * 3.0)
    assert float(total) == float(np.arange(4096).sum())
    f(a, 0.5, out=(a, total))  # overlaps the input: the Python path, NumPy's result
    np.testing.assert_array_equal(cupy.asnumpy(a), np.arange(4096) * 0.5)


def test_repeat_caches_keep_no_array_alive():
    # The launch caches recognise repeated arguments by identity but hold arrays weakly:
    # dropping the arrays frees them, and a new array at a recycled address is read afresh.
    import gc
    import weakref

    from cunumpy.kernels import CudaKernel

    f = fuse(lambda a: a + 1.0, kernel_name="weak_repeat")
    kernel = CudaKernel(
        'extern "C" __global__ void inc(double* x, int n) {'
        " int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] += 1.0; }",
        "inc",
    )
    n = 100_000  # results above the recycling size (64 KiB) are never held either
    a = cupy.zeros(n)
    for _ in range(2):
        r = f(a)
        kernel(a, n, n_threads=n)
    refs = [weakref.ref(a), weakref.ref(r)]
    del a, r
    gc.collect()
    assert all(ref() is None for ref in refs)
    b = cupy.full(n, 5.0)
    np.testing.assert_array_equal(cupy.asnumpy(f(b)), np.full(n, 6.0))
    kernel(b, n, n_threads=n)
    np.testing.assert_array_equal(cupy.asnumpy(b), np.full(n, 6.0))


def test_small_results_are_recycled_only_once_dropped():
    a = cupy.arange(100, dtype=np.float64)
    f = fuse(lambda a, s: a * s, kernel_name="recycle_small")
    kept = [f(a, float(s)) for s in range(4)]  # held by the caller: never written again
    for s in range(4, 8):
        np.testing.assert_array_equal(cupy.asnumpy(f(a, float(s))), np.arange(100) * s)
    for s, r in enumerate(kept):
        np.testing.assert_array_equal(cupy.asnumpy(r), np.arange(100) * s)
    x = f(a, 1.0)
    ptr = x.data.ptr
    del x  # dropped: its memory is written by the next call
    y = f(a, 5.0)
    assert y.data.ptr == ptr
    np.testing.assert_array_equal(cupy.asnumpy(y), np.arange(100) * 5.0)
    view = y[10:]  # a view keeps y referenced: not recycled
    z = f(a, 6.0)
    assert z.data.ptr != ptr
    np.testing.assert_array_equal(cupy.asnumpy(view), np.arange(10, 100) * 5.0)


def test_a_fused_plan_gets_the_grid_of_the_devices_real_sm_count():
    # sum over 2^24 points: a split reduction with 16 blocks of partials per SM
    sm_count = cupy.cuda.Device().attributes["MultiProcessorCount"]
    total = fuse(lambda a: xp.sum(a), kernel_name="sm_total")
    a = cupy.linspace(-1.0, 1.0, 1 << 24)
    plan = total.plan(a)
    assert plan.kernels[0]["strategy"] == "split"
    assert plan.kernels[0]["launches"][0]["grid"] == 16 * sm_count
    with xp.profiling.count_transfers() as counter:
        r = total(a)
    launched = [e.description for e in counter.events if e.kind == "launch"]
    assert f"kernel 'sm_total_k0_partial' grid [{16 * sm_count}, 1, 1]" in launched[0]
    assert np.isclose(float(r), float(cupy.asnumpy(a).sum()))


@pytest.mark.parametrize("k", [1, 2, 15, 16, 17, 33, 64, 65, 127, 128, 1000])
def test_short_row_reductions_on_gpu(k):
    # lanes per row (1 to 16) for rows under 128, a warp per row above; a row count that
    # leaves a warp's last rows past the end, NaNs in some rows, an int dtype, a strided view
    rng = np.random.default_rng(k)
    m = (1 << 16) + 3
    a = rng.standard_normal((m, k))
    a[5, k // 2] = np.nan
    a[m - 1, k - 1] = np.nan
    f = fuse(lambda x: x.max(axis=1) - x.min(axis=1), kernel_name="short_rows")
    np.testing.assert_array_equal(cupy.asnumpy(f(cupy.asarray(a))), a.max(axis=1) - a.min(axis=1))
    i = rng.integers(-1000, 1000, size=(m, k)).astype(np.int32)
    s = fuse(lambda x: x.sum(axis=1), kernel_name="short_rows_sum")
    got = cupy.asnumpy(s(cupy.asarray(i)))
    assert got.dtype == i.sum(axis=1).dtype
    np.testing.assert_array_equal(got, i.sum(axis=1))
    wide = rng.standard_normal((m, 2 * k))
    view = cupy.asarray(wide)[:, ::2]
    np.testing.assert_array_equal(
        cupy.asnumpy(f(view)), wide[:, ::2].max(axis=1) - wide[:, ::2].min(axis=1)
    )


def _laplacian(u):
    return u[1:-1, 2:] + u[1:-1, :-2] + u[2:, 1:-1] + u[:-2, 1:-1] - 4.0 * u[1:-1, 1:-1]


@pytest.mark.parametrize(
    ("shape", "dtype"),
    [((45, 71), np.float64), ((1001, 777), np.float32), ((8192, 8192), np.float64)],
)
def test_tiled_laplacian_on_gpu_matches_numpy(shape, dtype, monkeypatch):
    # the tiled mapping of a stencil (tiles cut by both ends at the odd sizes) against NumPy
    # and bit for bit against the flat mapping (CUNUMPY_FUSION_STENCIL_TILES=0)
    rng = np.random.default_rng(shape[0])
    u = rng.standard_normal(shape).astype(dtype)
    d = cupy.asarray(u)
    monkeypatch.delenv("CUNUMPY_FUSION_STENCIL_TILES", raising=False)
    tiled = fuse(_laplacian, kernel_name="lap_tiled")
    assert "tile < nt" in tiled.plan(d).cuda_source()
    got = cupy.asnumpy(tiled(d))
    assert got.dtype == dtype
    tol = 1e-5 if dtype == np.float32 else 1e-13
    np.testing.assert_allclose(got, _laplacian(u), rtol=tol, atol=tol)
    monkeypatch.setenv("CUNUMPY_FUSION_STENCIL_TILES", "0")
    flat = fuse(_laplacian, kernel_name="lap_flat")
    assert "tile < nt" not in flat.plan(d).cuda_source()
    assert cupy.asnumpy(flat(d)).tobytes() == got.tobytes()
    # a view with negative steps, sixteen rows a lane
    monkeypatch.setenv("CUNUMPY_FUSION_STENCIL_TILES", "16")
    rev = fuse(lambda u: _laplacian(u[::-1, ::-1]), kernel_name="lap_rev16")
    np.testing.assert_allclose(cupy.asnumpy(rev(d)), _laplacian(u[::-1, ::-1]), rtol=tol, atol=tol)
