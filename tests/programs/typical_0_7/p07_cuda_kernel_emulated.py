"""A CudaKernel launched in the CPU emulator (kernel_testing.emulated_launches)."""

import numpy as np

import cunumpy as xp
from cunumpy import kernel_testing
from cunumpy.kernels import CudaKernel

SOURCE = r"""
extern "C" __global__ void axpy(double* y, const double* x, double a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] += a * x[i];
}
"""
k = CudaKernel(SOURCE, "axpy", block_size=4)
print(k.name, k.block_size, [p.name for p in k.signature], [p.ctype for p in k.signature])
print(k.launch_shape(10), k.launch_shape(grid=3))
x = xp.asarray(np.arange(10.0))
y = xp.asarray(np.ones(10))
with kernel_testing.emulated_launches():
    k(y, x, 2.0, 10)
print(xp.to_numpy(y).tolist())
try:
    k(y, x, 2.0)
except TypeError as error:
    print("TypeError", "takes 4 arguments" in str(error))
