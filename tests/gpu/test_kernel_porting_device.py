"""The porting workflow on a device backend: PyccelKernel conversions, Kernel fallbacks,
parity tests, the kernel profile and the five steps of the overview. Runs on a GPU, and in CI
on the emulated device backend (CUNUMPY_FAKE_CUPY=1); skips when neither is available (fails
with CUNUMPY_REQUIRE_CUDA=1)."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import cunumpy as xp
from cunumpy.kernel_testing import check_parity, cuda_gate
from cunumpy.kernels import KernelCatalog, PyccelKernel

TESTS = Path(__file__).resolve().parents[1]
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))


@pytest.fixture
def device_backend():
    if cuda_gate("device"):
        pytest.skip("neither a GPU nor the emulated device backend is available")
    with xp.use_backend("cupy", strict=True):
        yield


def _catalog(missing_cuda="fallback"):
    return KernelCatalog.from_package(
        "kernel_pkg", missing_cuda=missing_cuda, outputs="annotations"
    )


def test_conversion_keeps_aliasing_and_copies_back_in_place(device_backend):
    import cupy

    def twice(a, b, n):
        assert a is b  # one array passed twice stays one host array
        a[:n] += 1.0

    x = cupy.arange(8.0)
    ptr = x.data.ptr
    with xp.profiling.count_transfers() as counter:
        PyccelKernel(twice)(x, x, 8)
    assert x.data.ptr == ptr
    np.testing.assert_array_equal(x.get(), np.arange(8.0) + 1.0)
    assert counter.to_host == 1 and counter.to_device == 1 and counter.kernel_conversions == 1
    assert counter.bytes_to_host == 64


def test_only_declared_outputs_are_copied_back(device_backend):
    import cupy

    def axpy(a, x, y, n):
        y[:n] += a * x[:n]
        x[:n] = -1.0  # written but not declared: stays on the host copy

    for outputs in ((2,), ("y",), (-2,)):
        x, y = cupy.ones(4), cupy.zeros(4)
        with xp.profiling.count_transfers() as counter:
            PyccelKernel(axpy, outputs=outputs)(2.0, x, y, 4)
        np.testing.assert_array_equal(y.get(), 2.0)
        np.testing.assert_array_equal(x.get(), 1.0)
        assert counter.to_host == 2 and counter.to_device == 1


def test_output_errors_name_the_kernel(device_backend):
    import cupy

    def k(x, n):
        pass

    with pytest.raises(IndexError, match="PyccelKernel 'k': output 5 names no argument"):
        PyccelKernel(k, outputs=(5,))(cupy.ones(2), 2)
    with pytest.raises(KeyError, match="output 'y': no argument of that name"):
        PyccelKernel(k, outputs=("y",))(cupy.ones(2), 2)


def test_raising_host_kernel_leaves_device_arrays_unchanged(device_backend):
    import cupy

    def boom(x):
        x[:] = 7.0
        raise ZeroDivisionError("host kernel failed")

    x = cupy.ones(3)
    with pytest.raises(ZeroDivisionError, match="host kernel failed"):
        PyccelKernel(boom)(x)
    np.testing.assert_array_equal(x.get(), 1.0)


def test_returned_containers_move_to_the_device(device_backend):
    import cupy

    def stats(x):
        return {"sum": np.array([x.sum()]), "pair": (x * 2, 3)}, x

    x = cupy.arange(3.0)
    result, same = PyccelKernel(stats, outputs=())(x)
    assert same is x  # a returned input is the caller's device array
    assert isinstance(result["sum"], cupy.ndarray) and float(result["sum"][0]) == 3.0
    assert isinstance(result["pair"][0], cupy.ndarray) and result["pair"][1] == 3


def test_objects_of_object_modules_are_converted(device_backend):
    import cupy

    class Particles:
        pass

    Particles.__module__ = "mycode.particles"
    p = Particles()
    p.v = cupy.ones(4)

    def push(particles, dt):
        particles.v *= 1.0 + dt

    PyccelKernel(push, object_modules=("mycode",))(p, 0.5)
    assert isinstance(p.v, cupy.ndarray)
    np.testing.assert_array_equal(p.v.get(), 1.5)


def test_the_five_porting_steps(device_backend):
    import cupy

    def step(cat, x, y, out):
        cat["scale"](x, 2.0, x.shape[0])
        cat["axpy"](0.5, x, y, y.shape[0])
        cat["shift"](y, y.shape[0])
        cat["square_sum"](y, out, y.shape[0])

    # 1. all on the host
    with xp.use_backend("numpy"):
        cat = _catalog()
        hx, hy, hout = np.linspace(0, 1, 100), np.ones(100), np.zeros(1)
        step(cat, hx, hy, hout)
    # 2. on the device, unported kernels fall back with visible copies
    cat = _catalog()
    dx, dy, dout = cupy.asarray(np.linspace(0, 1, 100)), cupy.ones(100), cupy.zeros(1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with xp.profiling.count_transfers() as counter, xp.profiling.kernel_profile() as prof:
            step(cat, dx, dy, dout)
            step(cat, cupy.asarray(np.linspace(0, 1, 100)), cupy.ones(100), cupy.zeros(1))
    assert sum("has no CUDA version" in str(w.message) for w in caught) == 2  # once per kernel
    np.testing.assert_allclose(dy.get(), hy, rtol=1e-14)
    np.testing.assert_allclose(dout.get(), hout, rtol=1e-12)
    assert counter.fallbacks == 4 and counter.kernel_conversions == 4
    assert set(prof.fallbacks) == {"shift", "square_sum"}
    data = prof.as_dict()
    assert data["scale"]["cuda"]["calls"] == 2 and data["shift"]["fallback"]["calls"] == 2
    assert data["shift"]["fallback"]["bytes"] == 2 * 2 * 800  # to the host and back, twice
    assert "still falling back to the host: " in prof.report()
    # 3. a parity test per ported kernel
    for _name, kernel in cat.parity_cases():
        check_parity(kernel)
    # 4. no transfers around a step once only ported kernels run; the report while one falls back
    with xp.profiling.assert_no_transfers():
        cat["scale"](dx, 2.0, 100)
        cat["axpy"](0.5, dx, dy, 100)
    with pytest.raises(AssertionError, match="fallback"):
        with xp.profiling.assert_no_transfers():
            step(cat, dx, dy, dout)
    # 5. missing_cuda="raise" fails loudly, naming the expected file
    strict = _catalog("raise")
    with pytest.raises(NotImplementedError, match=r"No CUDA version of kernel 'shift' \(expected"):
        strict["shift"](dy, 100)
    with pytest.raises(NotImplementedError, match="shift_cuda.cu"):
        strict["shift"].get_kernel()


def test_dispatch_arrays_looks_inside_containers(device_backend):
    import cupy

    from cunumpy.kernels import Kernel

    seen = []

    def host(pair, n):
        seen.append(type(pair[0]))

    kernel = Kernel(host, missing_cuda="fallback", dispatch="arrays")
    with xp.use_backend("numpy"):
        kernel((np.ones(2), np.ones(2)), 2)
        with pytest.warns(RuntimeWarning, match="no CUDA version"):
            kernel((cupy.ones(2), cupy.ones(2)), 2)  # device data in a tuple: device side
    assert seen == [np.ndarray, np.ndarray]
