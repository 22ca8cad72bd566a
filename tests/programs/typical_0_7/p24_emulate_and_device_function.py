"""Testing CUDA code without a GPU: emulate_cuda_kernel and device_function_kernel."""

import numpy as np

from cunumpy import kernel_testing
from cunumpy.kernels import CudaKernel

SOURCE = r"""
extern "C" __global__ void block_sum(const double* x, double* out, int n) {
    __shared__ double tile[8];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    tile[threadIdx.x] = i < n ? x[i] : 0.0;
    __syncthreads();
    if (threadIdx.x == 0) {
        double s = 0.0;
        for (int j = 0; j < 8; ++j) s += tile[j];
        out[blockIdx.x] = s;
    }
}
"""
k = CudaKernel(SOURCE, "block_sum", block_size=8)
x = np.arange(20.0)
out = np.zeros(3)
kernel_testing.emulate_cuda_kernel(k, x, out, 20, n_threads=24)
print(out.tolist())
f = kernel_testing.device_function_kernel(
    "__device__ double cube(double v) { return v * v * v; }", "double cube(double v)"
)
v = np.array([1.0, 2.0, 3.0])
r = np.zeros(3)
kernel_testing.emulate_cuda_kernel(f, v, r, 3, n_threads=3)
print(f.name, r.tolist())
