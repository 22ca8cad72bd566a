"""The emulated device backend end to end: with ``CUNUMPY_FAKE_CUPY=1`` every ``CudaKernel``
launch runs in the CPU emulator with the checks of a GPU launch, and transfers are counted as
on a GPU. Each test runs in its own process so the fake never leaks into other tests."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from cunumpy.kernel_testing import emulation_compiler

pytestmark = [
    pytest.mark.cxx,
    pytest.mark.skipif(emulation_compiler() is None, reason="needs a host C++ compiler"),
]

PROGRAM = Path(__file__).resolve().parents[1] / "programs" / "transfer_program.py"


def fake_env():
    env = {**os.environ, "CUNUMPY_FAKE_CUPY": "1", "OMP_NUM_THREADS": "1"}
    env.pop("CUNUMPY_BACKEND", None)
    return env


def run_fake(code):
    result = subprocess.run(
        # the fake is installed by `import cunumpy`, before anything imports cupy
        [sys.executable, "-c", "import cunumpy\n" + textwrap.dedent(code)],
        env=fake_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result.stdout


def test_program_runs_end_to_end_with_the_expected_transfer_report():
    result = subprocess.run(
        [sys.executable, str(PROGRAM)], env=fake_env(), capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, result.stderr[-3000:]
    sys.path.insert(0, str(PROGRAM.parent))
    try:
        from transfer_program import EXPECTED
    finally:
        sys.path.pop(0)
    out = json.loads(result.stdout)
    assert out["counts"] == {**EXPECTED, "syncs": 1}, out["report"]
    report = out["report"]
    assert "2 transfer(s) through cunumpy" in report and "4 kernel launch(es)" in report
    assert "kernel 'axpy' grid [782, 1, 1] block [128, 1, 1]" in report
    assert "float() of a float64 array of shape () (device to host) [implicit]" in report


def test_cuda_kernels_on_the_fake_behave_as_on_a_gpu():
    run_fake(
        """
        import numpy as np, cupy
        import cunumpy as xp
        from cunumpy.kernels import CudaKernel, CudaKernelVariants
        from cunumpy.exceptions import (CudaCompileError, EmulatedOutOfBoundsError,
                                        KernelArgumentTypeError, LaunchShapeError)
        AXPY = r'''
        extern "C" __global__ void axpy(double a, const double* x, double* y, int n) {
            int i = blockIdx.x * blockDim.x + threadIdx.x;
            if (i <= n) y[i] += a * x[i];   // planted off-by-one, caught when n < size - 1
        }'''
        k = CudaKernel(AXPY, "axpy")
        assert not k.is_compiled
        assert k.compile() is k and k.compiled_from_cache in (True, False) and k.is_compiled
        x, y = cupy.arange(1000.0), cupy.zeros(1000)
        k(2.0, x, y, 999)
        np.testing.assert_array_equal(y.get(), 2 * np.arange(1000.0))
        # the checks of a GPU launch: host arrays are never copied, layout and dtype checked
        for bad, match in (((2.0, np.ones(3), y, 2), "arrays are never copied"),
                           ((2.0, x[::2], y[:500], 499), "must be C-contiguous"),
                           ((2.0, x.astype(np.float32), y, 999), "must have dtype float64")):
            try:
                k(*bad)
            except KernelArgumentTypeError as e:
                assert match in str(e), e
            else:
                raise AssertionError(match)
        try:
            k(2.0, x, y, 999, block=2048)
        except LaunchShapeError:
            pass
        else:
            raise AssertionError("a block of 2048 threads was accepted")
        try:
            k(2.0, x[:10], cupy.zeros(10), 10, n_threads=11)
        except EmulatedOutOfBoundsError as e:
            assert "'x'" in str(e) or "'y'" in str(e), e
        else:
            raise AssertionError("the out-of-bounds access was not reported")
        # streams are accepted (and work is synchronous)
        s = cupy.cuda.Stream(non_blocking=True)
        k(1.0, x, y, 999, stream=s)
        with s:
            k(1.0, x, y, 999)
        s.synchronize()
        np.testing.assert_array_equal(y.get(), 4 * np.arange(1000.0))
        # the NaN/inf scan
        k.check_finite = True
        bad = cupy.full(1000, np.inf)
        try:
            k(1.0, bad, y, 999)
        except FloatingPointError as e:
            assert "left a NaN or inf in argument" in str(e), e
        else:
            raise AssertionError("the inf was not found")
        # variants: every failure reported together
        def make(tag):
            body = "x[0] = 1;" if tag != "broken" else "x[0] = nope;"
            return CudaKernel('extern "C" __global__ void k(double* x) { %s }' % body, "k")
        variants = CudaKernelVariants(make)
        try:
            variants.compile_all(["a", "broken", "b"])
        except CudaCompileError as e:
            assert "1 of 3 kernel" in str(e) and "nope" in str(e), e
        else:
            raise AssertionError("the broken variant compiled")
        assert variants.get("a").is_compiled
        print("OK")
        """
    )


def test_compiles_are_cached_across_processes(tmp_path):
    code = """
        import cunumpy
        import cupy
        from cunumpy.kernels import CudaKernel
        k = CudaKernel('extern "C" __global__ void inc(double* x) { x[threadIdx.x] += 1.0; }',
                       "inc").compile()
        x = cupy.zeros(4)
        k(x, n_threads=4, block=4)  # 128 threads would write past x (the emulator reports it)
        assert x.get().tolist() == [1.0] * 4
        print("FROM_CACHE", k.compiled_from_cache)
    """
    env = {**fake_env(), "CUNUMPY_EMULATION_CACHE": str(tmp_path / "emu")}
    outputs = []
    for _ in range(2):
        result = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(code)],
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert result.returncode == 0, result.stderr[-3000:]
        outputs.append(result.stdout)
    assert "FROM_CACHE False" in outputs[0] and "FROM_CACHE True" in outputs[1], outputs
    assert list((tmp_path / "emu").glob("*.cnk"))
