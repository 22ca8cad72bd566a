"""cunumpy.kernels.fuse on CuPy arrays: the generated CUDA against NumPy, determinism, ledger
launch events."""

from __future__ import annotations

import numpy as np
import pytest

import cunumpy as xp
from cunumpy.kernels import fuse

pytestmark = pytest.mark.gpu
cupy = pytest.importorskip("cupy")


def _cpu_corpus():
    """The corpus of tests/cpu/test_fusion_cpu.py: the same functions run on the GPU."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "cpu" / "test_fusion_cpu.py"
    spec = importlib.util.spec_from_file_location("_fusion_cpu_corpus", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.CASES


CASES = _cpu_corpus()


def _to_gpu(x):
    return cupy.asarray(x) if isinstance(x, np.ndarray) else x


@pytest.mark.parametrize("name,func,args", CASES, ids=[c[0] for c in CASES])
def test_fused_on_gpu_matches_numpy(name, func, args):
    with np.errstate(all="ignore"):
        expected = func(*args)  # NumPy backend evaluates eagerly
    got = fuse(func)(*[_to_gpu(a) for a in args])
    if not isinstance(expected, tuple):
        expected, got = (expected,), (got,)
    for g, e in zip(got, expected, strict=True):
        assert isinstance(g, cupy.ndarray)
        g, e = cupy.asnumpy(g), np.asarray(e)
        assert g.dtype == e.dtype and g.shape == e.shape
        if e.dtype.kind == "f":
            tol = 2e-5 if e.dtype == np.float32 else 1e-11
            np.testing.assert_allclose(g, e, rtol=tol, atol=tol)
        else:
            np.testing.assert_array_equal(g, e)


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
