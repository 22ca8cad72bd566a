"""``__constant__`` memory set from Python on the emulated device (issue 21, item 10):
``CudaKernel.set_constant`` / ``get_constant`` with kernels of our own reading a scalar, a
1-D array through a same-source typedef and a 2-D array; each kernel object has its own
constant memory; the errors name the kernel and the variable; every copy is counted; the
example runs. The GPU twin is tests/gpu/test_constants_gpu.py."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from cunumpy.exceptions import (
    CudaConstantError,
    CudaConstantNotFoundError,
    CudaConstantSizeError,
    CudaConstantTypeError,
)
from cunumpy.kernel_testing import emulated_launches, emulation_compiler
from cunumpy.kernels import CudaKernel

pytestmark = [
    pytest.mark.cxx,
    pytest.mark.skipif(emulation_compiler() is None, reason="needs a host C++ compiler"),
]

ROOT = Path(__file__).resolve().parents[2]

#: also read by tests/gpu/test_constants_gpu.py
SOURCE = r"""
typedef unsigned int uint;
__constant__ float gain = 2.0f;
__constant__ uint lut[4] = {1, 2, 3, 4};
__constant__ double mat[2][3];
struct Pair { float a, b; };
__constant__ Pair pair;
__constant__ const int folded = 7;

extern "C" __global__ void read_constants(float* out, double* rows, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = gain * (float)lut[i % 4];
    if (i < 2) rows[i] = mat[i][0] + mat[i][1] + mat[i][2];
}
"""


def expected(gain, lut, mat, n):
    out = (np.float32(gain) * lut[np.arange(n) % 4].astype(np.float32)).astype(np.float32)
    return out, mat.sum(axis=1)


def run(kernel, n=10):
    out = np.zeros(n, dtype=np.float32)
    rows = np.zeros(2, dtype=np.float64)
    with emulated_launches():
        kernel(out, rows, np.int32(n), n_threads=n)
    return out, rows


def test_initialisers_are_the_values_before_any_set():
    k = CudaKernel(SOURCE, "read_constants")
    assert k.constant_names == ("gain", "lut", "mat", "pair", "folded")
    with emulated_launches():
        gain = k.get_constant("gain")
        assert isinstance(gain, np.float32) and gain == 2.0
        np.testing.assert_array_equal(k.get_constant("lut"), np.array([1, 2, 3, 4], np.uint32))
        assert k.get_constant("lut").dtype == np.uint32
        mat = k.get_constant("mat")
        assert mat.shape == (2, 3) and mat.dtype == np.float64 and not mat.any()
        assert k.get_constant("folded") == 7
    out, rows = run(k)
    want_out, want_rows = expected(2.0, np.array([1, 2, 3, 4]), np.zeros((2, 3)), 10)
    np.testing.assert_array_equal(out, want_out)
    np.testing.assert_array_equal(rows, want_rows)


def test_set_values_are_what_the_kernel_reads():
    k = CudaKernel(SOURCE, "read_constants")
    lut = np.array([5, 0, 9, 2], dtype=np.uint32)
    mat = np.arange(6, dtype=np.float64).reshape(2, 3) / 4
    with emulated_launches():
        k.set_constant("gain", np.float32(-1.5))
        k.set_constant("lut", lut)
        k.set_constant("mat", mat.ravel())  # any shape with the variable's element count
        assert k.get_constant("gain") == np.float32(-1.5)
        np.testing.assert_array_equal(k.get_constant("mat"), mat)
    out, rows = run(k)
    want_out, want_rows = expected(-1.5, lut, mat, 10)
    np.testing.assert_array_equal(out, want_out)
    np.testing.assert_array_equal(rows, want_rows)
    # a second set replaces the first for later launches
    with emulated_launches():
        k.set_constant("gain", np.float32(3.0))
    out, _ = run(k)
    np.testing.assert_array_equal(out, expected(3.0, lut, mat, 10)[0])


def test_each_kernel_object_has_its_own_constant_memory():
    """Two kernels from one source share a compiled library but not constant memory (as two
    modules on a GPU do not)."""
    a = CudaKernel(SOURCE, "read_constants")
    b = CudaKernel(SOURCE, "read_constants")
    with emulated_launches():
        a.set_constant("gain", np.float32(10.0))
        assert b.get_constant("gain") == 2.0
    out_a, _ = run(a)
    out_b, _ = run(b)
    lut = np.array([1, 2, 3, 4])
    np.testing.assert_array_equal(out_a, expected(10.0, lut, np.zeros((2, 3)), 10)[0])
    np.testing.assert_array_equal(out_b, expected(2.0, lut, np.zeros((2, 3)), 10)[0])


@pytest.mark.parametrize(
    ("name", "value", "error", "builtin", "words"),
    [
        ("nope", np.float32(1), CudaConstantNotFoundError, KeyError, ["'nope'", "gain, lut"]),
        ("gain", 1.0, CudaConstantTypeError, TypeError, ["NumPy scalar", "float"]),
        ("gain", np.float64(1), CudaConstantTypeError, TypeError, ["'float'", "float64"]),
        ("lut", np.arange(4, dtype=np.int32), CudaConstantTypeError, TypeError, ["uint32"]),
        ("lut", np.arange(3, dtype=np.uint32), CudaConstantSizeError, ValueError, ["4 elem"]),
        ("lut", np.arange(5, dtype=np.uint32), CudaConstantSizeError, ValueError, ["got 5"]),
        ("mat", np.zeros((3, 3)), CudaConstantSizeError, ValueError, ["6 element", "[2][3]"]),
        ("pair", np.zeros(2, np.float32), CudaConstantTypeError, TypeError, ["'Pair'"]),
        ("folded", np.int32(1), CudaConstantTypeError, TypeError, ["const"]),
        (3, np.int32(1), CudaConstantTypeError, TypeError, ["str"]),
        ("lut", np.arange(4, dtype=">u4"), CudaConstantTypeError, TypeError, ["byte order"]),
        (
            "gain",
            np.array([1], dtype=np.float32).view(np.int32),
            CudaConstantTypeError,
            TypeError,
            ["int32"],
        ),
    ],
)
def test_refused_values_name_the_kernel_and_the_variable(name, value, error, builtin, words):
    k = CudaKernel(SOURCE, "read_constants")
    with emulated_launches(), pytest.raises(error) as info:
        k.set_constant(name, value)
    assert isinstance(info.value, builtin) and isinstance(info.value, CudaConstantError)
    text = str(info.value)
    assert "'read_constants'" in text
    if isinstance(name, str):
        assert repr(name) in text or f'"{name}"' in text
    for w in words:
        assert w in text, (w, text)
    # nothing was written: the kernel still reads its initialisers
    with emulated_launches():
        assert k.get_constant("gain") == 2.0
        np.testing.assert_array_equal(k.get_constant("lut"), [1, 2, 3, 4])


def test_reading_an_unknown_or_struct_variable_is_refused():
    k = CudaKernel(SOURCE, "read_constants")
    with emulated_launches():
        with pytest.raises(CudaConstantNotFoundError, match="read_constants"):
            k.get_constant("missing")
        with pytest.raises(CudaConstantTypeError, match="Pair"):
            k.get_constant("pair")


def test_namespaced_and_local_constants_are_not_listed():
    src = r"""
namespace ns { __constant__ float hidden; }
__constant__ int top;
extern "C" __global__ void f(int* o) { o[0] = top + (int)ns::hidden; }
"""
    k = CudaKernel(src, "f")
    assert k.constant_names == ("top",)
    with emulated_launches(), pytest.raises(CudaConstantNotFoundError, match="top"):
        k.set_constant("hidden", np.float32(1))


def _run(code: str) -> str:
    env = dict(os.environ, CUNUMPY_FAKE_CUPY="1")
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_copies_are_counted_on_the_emulated_device():
    """Under CUNUMPY_FAKE_CUPY=1 (fake CuPy arrays): each set_constant is one host-to-device
    copy of the variable's bytes, each get_constant one device-to-host copy; launches
    read the values."""
    out = _run(
        f"""
        import numpy as np, cunumpy as xp
        import cupy  # the fake one (CUNUMPY_FAKE_CUPY=1), once cunumpy is imported
        from cunumpy.kernels import CudaKernel
        k = CudaKernel({SOURCE!r}, "read_constants")
        with xp.profiling.count_transfers() as c:
            k.set_constant("lut", np.array([2, 2, 2, 2], np.uint32))
            k.set_constant("gain", np.float32(0.25))
        assert (c.count("to_device"), c.bytes("to_device"), c.total) == (2, 20, 2), c.report()
        with xp.profiling.count_transfers() as c:
            value = k.get_constant("mat")
        assert (c.count("to_host"), c.bytes("to_host"), c.total) == (1, 48, 1), c.report()
        assert "__constant__ 'mat'" in c.report(), c.report()
        out = cupy.zeros(8, dtype=cupy.float32)
        rows = cupy.zeros(2, dtype=cupy.float64)
        k(out, rows, np.int32(8), n_threads=8)
        print(cupy.asnumpy(out).tolist())
        """
    )
    assert out.strip() == str([0.5] * 8)


def test_example_runs_on_the_emulated_device():
    env = dict(os.environ, CUNUMPY_FAKE_CUPY="1")
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "constant_memory.py")],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "copies to the device: 2 bytes: 36" in done.stdout
    assert "max |error| against NumPy: 0.0" in done.stdout


def test_other_scalar_types_and_an_extern_c_block():
    src = r"""
extern "C" {
__constant__ bool flip;
__constant__ long long offset;
__constant__ unsigned char weights[3];
__global__ void mix(long long* out) {
    int i = threadIdx.x;
    long long v = offset + weights[i % 3];
    out[i] = flip ? -v : v;
}
}
"""
    k = CudaKernel(src, "mix")
    assert k.constant_names == ("flip", "offset", "weights")
    out = np.zeros(6, dtype=np.int64)
    with emulated_launches():
        k.set_constant("flip", np.bool_(True))
        k.set_constant("offset", np.int64(-(2**40)))
        k.set_constant("weights", np.array([1, 2, 250], np.uint8))
        assert k.get_constant("flip") is np.True_ or k.get_constant("flip") == np.True_
        k(out, grid=1, block=6)
    want = -(np.int64(-(2**40)) + np.array([1, 2, 250, 1, 2, 250], np.int64))
    np.testing.assert_array_equal(out, want)
