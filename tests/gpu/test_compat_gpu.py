"""cunumpy 0.7's helpers on a real GPU: the shared-memory budget and HIP query against the
device's properties, launch_shape against the grid and block a kernel sees, prepare_args and
compile(log_stream=) with CuPy arrays, host_call round trips, and emulated launches refusing GPU
arrays (the emulator runs on host memory)."""

from __future__ import annotations

import io

import numpy as np
import pytest

import cunumpy as xp
from cunumpy.exceptions import KernelArgumentTypeError
from cunumpy.kernel_testing import emulated_launches
from cunumpy.kernels import CudaKernel
from cunumpy.profiling import count_transfers

pytestmark = pytest.mark.gpu

SHAPE = r"""
extern "C" __global__ void shape(long long* out) {
    if (blockIdx.x == 0 && blockIdx.y == 0 && threadIdx.x == 0 && threadIdx.y == 0) {
        out[0] = gridDim.x; out[1] = gridDim.y; out[2] = blockDim.x; out[3] = blockDim.y;
    }
}
"""


@pytest.fixture(scope="module")
def cp():
    import cupy

    return cupy


def test_shared_memory_budget_is_the_devices(cp):
    props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
    assert xp.cuda.max_shared_memory_per_block() == props["sharedMemPerBlock"]
    assert xp.cuda.max_shared_memory_per_block(opt_in=True) == max(
        props["sharedMemPerBlock"], props["sharedMemPerBlockOptin"]
    )
    assert xp.cuda.is_hip() is bool(cp.cuda.runtime.is_hip)


def test_launch_shape_is_what_the_kernel_sees(cp):
    kernel = CudaKernel(SHAPE, "shape", block_size=(16, 8))
    out = cp.zeros(4, dtype=np.int64)
    for n_threads in [(100, 30), (16, 8), (1000, 1)]:
        grid, block = kernel.launch_shape(n_threads)
        kernel(out, n_threads=n_threads)
        assert out.get().tolist() == [grid[0], grid[1], block[0], block[1]]


def test_prepare_args_and_compile_log_with_cupy_arrays(cp):
    kernel = CudaKernel(SHAPE, "shape", block_size=32)
    out = cp.zeros(4, dtype=np.int64)
    assert kernel.prepare_args(out)[0] is out
    log = io.StringIO()
    assert kernel.recompile(log_stream=log) is kernel
    assert "kernel 'shape'" in log.getvalue()


def test_host_call_round_trip_on_the_gpu():
    with xp.use_backend("cupy", strict=True):
        a = xp.arange(5.0)
        with count_transfers() as counter:
            out = xp.host_call(lambda x: np.cumsum(x), a)
        assert xp.is_gpu(out)
        np.testing.assert_array_equal(xp.to_numpy(out), np.cumsum(np.arange(5.0)))
        assert (counter.to_host, counter.to_device) == (1, 1)


def test_emulated_launches_refuse_gpu_arrays(cp):
    kernel = CudaKernel(SHAPE, "shape", block_size=32)
    with emulated_launches(), pytest.raises(KernelArgumentTypeError, match="GPU array"):
        kernel(cp.zeros(4, dtype=np.int64), n_threads=1)
