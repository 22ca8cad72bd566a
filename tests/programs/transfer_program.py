"""A small GPU program (CudaKernel launches, conversions, an implicit sync) that prints its
transfer counts as JSON. tests/cxx runs it on the emulated device backend
(``CUNUMPY_FAKE_CUPY=1``) and tests/gpu on a GPU; both compare with ``EXPECTED``.

The fake also records the implicit sync of ``float()`` (``syncs``: 1), which a real CuPy does
not report (0 there); every other count is the same on both."""

import json

import numpy as np

import cunumpy as xp
from cunumpy.kernels import CudaKernel

EXPECTED = {
    "to_device": 1,
    "to_host": 1,
    "launches": 4,
    "device_copies": 0,
    "kernel_conversions": 0,
    "fallbacks": 0,
}

AXPY = r"""
extern "C" __global__ void axpy(double a, const double* x, double* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] += a * x[i];
}
"""

BLOCK_SUM = r"""
extern "C" __global__ void block_sum(const double* x, double* partial, int n) {
    __shared__ double warp_sums[32];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    double v = i < n ? x[i] : 0.0;
    for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) warp_sums[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < (int)(blockDim.x >> 5) ? warp_sums[lane] : 0.0;
        for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
        if (lane == 0) partial[blockIdx.x] = v;
    }
}
"""


def main() -> dict:
    xp.set_backend("cupy", strict=True)
    n = 100_000
    axpy = CudaKernel(AXPY, "axpy")
    block_sum = CudaKernel(BLOCK_SUM, "block_sum", block_size=256)
    x_host = np.linspace(0.0, 1.0, n)
    with xp.profiling.count_transfers() as counter:
        x = xp.to_cupy(x_host)  # one copy to the device
        y = xp.zeros(n)
        for _ in range(3):
            axpy(0.5, x, y, n)
        partial = xp.zeros(-(-n // 256))
        block_sum(y, partial, n, n_threads=n)
        total = float(xp.sum(partial))  # an implicit sync
        y_host = xp.to_numpy(y)  # one copy to the host
    np.testing.assert_array_equal(y_host, 0.5 * x_host + 0.5 * x_host + 0.5 * x_host)
    np.testing.assert_allclose(total, y_host.sum(), rtol=1e-12)
    counts = {key: getattr(counter, key) for key in (*EXPECTED, "syncs")}
    return {"counts": counts, "report": counter.report()}


if __name__ == "__main__":
    print(json.dumps(main()))
