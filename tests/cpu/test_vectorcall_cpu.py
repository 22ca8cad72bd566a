"""Vectorcall on the hot-path classes (crates/cunumpy-py/src/vectorcall.rs): calls of
`CudaKernel`, `Kernel` and fused functions go through the interpreter's argument array, and
everything their fast path does not take reaches `__call__` (`tp_call`) unchanged, so both
protocols raise and return the same."""

import platform

import numpy as np
import pytest

import cunumpy as xp
from cunumpy import _core
from cunumpy.exceptions import KernelArgumentTypeError
from cunumpy.kernels import CudaKernel, Kernel

pytestmark = pytest.mark.skipif(
    platform.python_implementation() != "CPython", reason="vectorcall is installed on CPython"
)

AXPY = """
extern "C" __global__ void axpy(double a, const double* __restrict__ x, double* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] += a * x[i];
}
"""


def _tp_call(obj, *args, **kwargs):
    """The same call through `tp_call` (the slot wrapper skips vectorcall)."""
    return type(obj).__call__(obj, *args, **kwargs)


def _failure(call):
    try:
        call()
    except Exception as e:  # noqa: BLE001 - the exception itself is what is compared
        return type(e), str(e)
    return None


@pytest.mark.parametrize(
    "cls",
    [_core.KernelLauncher, _core.KernelDispatcher, _core.FusedDispatcher, CudaKernel, Kernel],
)
def test_hot_path_classes_use_vectorcall(cls):
    assert _core._vectorcall_enabled(cls)


def test_fused_functions_use_vectorcall():
    assert _core._vectorcall_enabled(type(xp.fuse(lambda a: a + 1)))


def test_subclass_overriding_call_keeps_its_call():
    class Logged(CudaKernel):
        def __call__(self, *args, **kwargs):
            return ("logged", args, kwargs)

    assert not _core._vectorcall_enabled(Logged)
    assert not _core._enable_vectorcall(Logged)
    assert Logged(AXPY, "axpy")(1, n_threads=2) == ("logged", (1,), {"n_threads": 2})


def test_enable_refuses_unrelated_classes():
    class Plain:
        def __call__(self):
            return 1

    assert not _core._enable_vectorcall(Plain)
    assert Plain()() == 1


def test_subclass_without_call_behaves_as_the_base():
    class Named(CudaKernel):
        pass

    class Renamed(Named):  # a subclass of a subclass
        pass

    # enabled as they are created (before Python 3.12 a subclass does not inherit vectorcall)
    assert _core._vectorcall_enabled(Named) and _core._vectorcall_enabled(Renamed)
    kernel = Renamed(AXPY, "axpy")
    host = np.zeros(4)
    expected = _failure(lambda: _tp_call(kernel, 1.0, host, host, 4, n_threads=4))
    assert expected is not None and expected[0] is KernelArgumentTypeError
    assert _failure(lambda: kernel(1.0, host, host, 4, n_threads=4)) == expected


@pytest.mark.parametrize(
    "args, kwargs",
    [
        ((1.0, np.zeros(4), np.zeros(4), 4), {"n_threads": 4}),  # a NumPy array for a pointer
        ((1.0, np.zeros(4), np.zeros(4), 4), {}),
        ((1.0,), {"n_threads": 4}),  # too few arguments
        ((), {"n_threads": 4, "grid": 1}),
        ((1.0, np.zeros(4), np.zeros(4), 4), {"n_threads": 1.5}),
        ((1.0, np.zeros(4), np.zeros(4), 4), {"n_threads": 2**70}),
        ((1.0, np.zeros(4), np.zeros(4), 4), {"n_thread": 4}),  # unknown keyword
        ((1.0, np.zeros(4), np.zeros(4), 4), {"n_threads": 4, "stream": "no"}),
    ],
)
def test_cuda_kernel_calls_fail_alike_on_both_protocols(args, kwargs):
    kernel = CudaKernel(AXPY, "axpy")
    expected = _failure(lambda: _tp_call(kernel, *args, **kwargs))
    assert expected is not None
    assert _failure(lambda: kernel(*args, **kwargs)) == expected


def test_kernel_dispatch_runs_the_host_kernel_through_vectorcall():
    def axpy_host(a, x, y, n):
        y[:n] += a * x[:n]

    kernel = Kernel(axpy_host, CudaKernel(AXPY, "axpy"))
    x, y = np.arange(5.0), np.ones(5)
    with xp.use_backend("numpy"):
        kernel(2.0, x, y, 5, n_threads=5)
        kernel(2.0, x, y, 5)
        _tp_call(kernel, 2.0, x, y, 5, n_threads=5)
    np.testing.assert_array_equal(y, 1 + 3 * 2.0 * np.arange(5.0))


def test_fused_calls_match_numpy_through_vectorcall():
    f = xp.fuse(lambda a, b: a * b + 1.0)
    a, b = np.arange(6.0), np.full(6, 3.0)
    out = np.empty(6)
    for _ in range(3):  # the first call traces, later ones run from Rust
        np.testing.assert_array_equal(f(a, b), a * b + 1.0)
    assert f(a, b, out=out) is out
    np.testing.assert_array_equal(out, a * b + 1.0)
    np.testing.assert_array_equal(_tp_call(f, a, b), a * b + 1.0)
    assert _failure(lambda: f(a, b, c=1)) == _failure(lambda: _tp_call(f, a, b, c=1))
