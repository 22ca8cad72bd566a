"""``__constant__`` memory set from Python on a real GPU (issue 21, item 10): the kernels of
tests/cxx/test_constants_cxx.py read what ``set_constant`` copied (through cuModuleGetGlobal
and a host-to-device copy), the same errors are raised, each copy is one counted transfer,
and the example runs."""

from __future__ import annotations

import importlib.util
import runpy
from pathlib import Path

import numpy as np
import pytest

from cunumpy.exceptions import (
    CudaConstantNotFoundError,
    CudaConstantSizeError,
    CudaConstantTypeError,
)
from cunumpy.kernels import CudaKernel

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[2]


def _cxx_module():
    path = ROOT / "tests" / "cxx" / "test_constants_cxx.py"
    spec = importlib.util.spec_from_file_location("_constants_cxx", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


CXX = _cxx_module()
SOURCE = CXX.SOURCE


def _run(kernel, n=10):
    import cupy

    out = cupy.zeros(n, dtype=cupy.float32)
    rows = cupy.zeros(2, dtype=cupy.float64)
    kernel(out, rows, np.int32(n), n_threads=n)
    return cupy.asnumpy(out), cupy.asnumpy(rows)


def test_gpu_initialisers_then_set_values():
    k = CudaKernel(SOURCE, "read_constants")
    assert k.get_constant("gain") == np.float32(2.0)
    np.testing.assert_array_equal(k.get_constant("lut"), [1, 2, 3, 4])
    assert k.get_constant("mat").shape == (2, 3)
    out, rows = _run(k)
    want_out, want_rows = CXX.expected(2.0, np.array([1, 2, 3, 4]), np.zeros((2, 3)), 10)
    np.testing.assert_array_equal(out, want_out)
    np.testing.assert_array_equal(rows, want_rows)

    lut = np.array([5, 0, 9, 2], dtype=np.uint32)
    mat = np.arange(6, dtype=np.float64).reshape(2, 3) / 4
    k.set_constant("gain", np.float32(-1.5))
    k.set_constant("lut", lut)
    k.set_constant("mat", mat)
    np.testing.assert_array_equal(k.get_constant("mat"), mat)
    out, rows = _run(k)
    want_out, want_rows = CXX.expected(-1.5, lut, mat, 10)
    np.testing.assert_array_equal(out, want_out)
    np.testing.assert_array_equal(rows, want_rows)


def test_gpu_each_kernel_object_has_its_own_module():
    a = CudaKernel(SOURCE, "read_constants")
    b = CudaKernel(SOURCE, "read_constants")
    a.set_constant("gain", np.float32(10.0))
    assert b.get_constant("gain") == np.float32(2.0)
    lut = np.array([1, 2, 3, 4])
    np.testing.assert_array_equal(_run(a)[0], CXX.expected(10.0, lut, np.zeros((2, 3)), 10)[0])
    np.testing.assert_array_equal(_run(b)[0], CXX.expected(2.0, lut, np.zeros((2, 3)), 10)[0])


def test_gpu_refusals_match_the_emulated_device():
    k = CudaKernel(SOURCE, "read_constants")
    with pytest.raises(CudaConstantNotFoundError, match="gain, lut"):
        k.set_constant("nope", np.float32(1))
    with pytest.raises(CudaConstantTypeError, match="float64"):
        k.set_constant("gain", np.float64(1))
    with pytest.raises(CudaConstantSizeError, match="4 element"):
        k.set_constant("lut", np.arange(3, dtype=np.uint32))
    with pytest.raises(CudaConstantTypeError, match="Pair"):
        k.set_constant("pair", np.zeros(2, np.float32))
    with pytest.raises(CudaConstantTypeError, match="const"):
        k.set_constant("folded", np.int32(1))
    assert k.get_constant("gain") == np.float32(2.0)


def test_gpu_constant_copies_are_counted():
    import cunumpy as xp

    k = CudaKernel(SOURCE, "read_constants")
    k.compile()
    with xp.profiling.count_transfers() as c:
        k.set_constant("lut", np.array([2, 2, 2, 2], np.uint32))
        k.set_constant("gain", np.float32(0.25))
    assert (c.count("to_device"), c.bytes("to_device"), c.total) == (2, 20, 2), c.report()
    with xp.profiling.count_transfers() as c:
        k.get_constant("mat")
    assert (c.count("to_host"), c.bytes("to_host"), c.total) == (1, 48, 1), c.report()
    np.testing.assert_array_equal(_run(k, 8)[0], np.full(8, 0.5, np.float32))


def test_gpu_example_runs():
    namespace = runpy.run_path(str(ROOT / "examples" / "constant_memory.py"))
    result = namespace["main"]()
    assert result.shape == (1000,)


def test_gpu_other_scalar_types_and_an_extern_c_block():
    import inspect

    import cupy

    test = CXX.test_other_scalar_types_and_an_extern_c_block
    src = inspect.getsource(test).split('r"""', 1)[1].split('"""', 1)[0]
    k = CudaKernel(src, "mix")
    k.set_constant("flip", np.bool_(True))
    k.set_constant("offset", np.int64(-(2**40)))
    k.set_constant("weights", np.array([1, 2, 250], np.uint8))
    assert k.get_constant("flip") == np.True_
    out = cupy.zeros(6, dtype=cupy.int64)
    k(out, grid=1, block=6)
    want = -(np.int64(-(2**40)) + np.array([1, 2, 250, 1, 2, 250], np.int64))
    np.testing.assert_array_equal(cupy.asnumpy(out), want)
