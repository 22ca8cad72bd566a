"""Issue 21, items 4, 5, 6 and 9 on a real GPU: launch errors are typed and name the kernel
before anything is compiled or launched, a struct whose source declaration differs from its
``CudaStruct`` is refused, a matching one launches with the compiler's offsets, and the CuPy
backend is selected without a warning."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import cunumpy as xp
from cunumpy import exceptions
from cunumpy.arguments import CudaStruct
from cunumpy.kernels import CudaKernel

pytestmark = pytest.mark.gpu

AXPY = """
extern "C" __global__ void axpy(double* y, const double* x, double a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] += a * x[i];
}"""


@pytest.fixture
def cupy():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an available CuPy is selected silently
        with xp.use_backend("cupy"):
            import cupy

            yield cupy


@pytest.mark.parametrize(
    ("kwargs", "error", "names"),
    [
        ({"grid": (1.5,)}, exceptions.LaunchShapeTypeError, ("axpy", "grid")),
        ({"n_threads": "8"}, exceptions.LaunchShapeTypeError, ("axpy", "n_threads")),
        ({"n_threads": 8, "shared_mem": "0"}, exceptions.LaunchShapeTypeError, ("shared_mem",)),
        ({"n_threads": 8, "stream": "default"}, exceptions.LaunchShapeTypeError, ("stream",)),
        ({"n_threads": 8, "nthreads": 8}, exceptions.KernelArgumentTypeError, ("'nthreads'",)),
        ({"grid": (1, 1, 1, 1)}, exceptions.LaunchShapeError, ("axpy", "grid")),
    ],
)
def test_bad_launch_settings_are_refused_before_compiling(cupy, kwargs, error, names):
    k = CudaKernel(AXPY + f"\n// {error.__name__} {sorted(kwargs)}", "axpy")
    y = cupy.zeros(8)
    with pytest.raises(error) as e:
        k(y, cupy.ones(8), 2.0, np.int32(8), **kwargs)
    for name in names:
        assert name in str(e.value)
    assert not k.is_compiled  # refused before NVRTC ran
    assert not y.get().any()


def test_missing_and_huge_arguments_are_named(cupy):
    k = CudaKernel(AXPY, "axpy")
    y = cupy.zeros(8)
    with pytest.raises(exceptions.KernelArgumentTypeError, match=r"argument 3 \(int n\)"):
        k(y, cupy.ones(8), 2.0, n_threads=8)
    with pytest.raises(exceptions.KernelArgumentOverflowError, match=r"axpy\(\): argument 3"):
        k(y, cupy.ones(8), 2.0, 2**200, n_threads=8)
    k(y, cupy.ones(8), 2.0, np.int32(8), n_threads=8)
    np.testing.assert_array_equal(y.get(), np.full(8, 2.0))


STRUCT_SOURCE = """
struct P { char tag; double x; int n[3]; };
extern "C" __global__ void read(P p, double* out) {
    out[0] = p.tag; out[1] = p.x; out[2] = p.n[0]; out[3] = p.n[1]; out[4] = p.n[2];
}"""


def test_a_struct_matching_its_source_declaration_launches_right(cupy):
    p_struct = CudaStruct("P", [("tag", "char"), ("x", "double"), ("n[3]", "int")])
    assert p_struct.verify_layout() == p_struct.expected_layout()  # the device's offsetof
    k = CudaKernel(STRUCT_SOURCE, "read", structs=[p_struct])
    out = cupy.zeros(5)
    k(p_struct(tag=7, x=2.5, n=[1, 2, 3]), out, n_threads=1)
    np.testing.assert_array_equal(out.get(), [7, 2.5, 1, 2, 3])


def test_a_struct_differing_from_its_source_declaration_is_refused(cupy):
    p_struct = CudaStruct("P", [("tag", "char"), ("x", "float"), ("n[3]", "int")])
    with pytest.raises(exceptions.CudaStructError, match="field 'x' is double x"):
        CudaKernel(STRUCT_SOURCE, "read", structs=[p_struct])
