"""A Kernel with a host and a CUDA version: the backend picks one; both give the same."""

import numpy as np

import cunumpy as xp
from cunumpy import kernel_testing
from cunumpy.kernels import CudaKernel, Kernel


def square(out: "float[:]", x: "float[:]", n: int):
    for i in range(n):
        out[i] = x[i] * x[i]


SOURCE = r"""
extern "C" __global__ void square(double* out, const double* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = x[i] * x[i];
}
"""
k = Kernel(square, CudaKernel(SOURCE, "square"), host_options={"outputs": (0,)})
print(k.has_cuda, k.implementations, k.selected(device=True))
k.check_signature()
x = xp.asarray(np.linspace(0.0, 2.0, 7))
out = xp.zeros(7)
with kernel_testing.emulated_launches():
    k(out, x, 7)
print([round(v, 12) for v in xp.to_numpy(out).tolist()])
