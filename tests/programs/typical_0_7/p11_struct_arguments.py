"""CudaStructArguments: a class whose attributes are packed into a struct for a kernel."""

import numpy as np

import cunumpy as xp
from cunumpy import kernel_testing
from cunumpy.arguments import CudaStructArguments
from cunumpy.kernels import CudaKernel


class PushArgs(CudaStructArguments):
    struct_name = "PushArgs"
    fields = [("x", "double*"), ("v", "double*"), ("dt", "double"), ("n", "int")]

    def __init__(self, x, v, dt):
        self.x, self.v, self.dt, self.n = x, v, dt, int(x.shape[0])


SOURCE = (
    PushArgs.struct.declaration
    + r"""
extern "C" __global__ void push(PushArgs p) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < p.n) p.x[i] += p.dt * p.v[i];
}
"""
)
k = CudaKernel(SOURCE, "push", structs=[PushArgs.struct])
x = xp.asarray(np.zeros(5))
v = xp.asarray(np.arange(5.0))
args = PushArgs(x, v, 0.5)
print(PushArgs.struct.dtype.itemsize, [f.name for f in PushArgs.struct.fields])
with kernel_testing.emulated_launches():
    k(args, n_threads=5)
    args.dt = 1.0
    k(args, n_threads=5)
print(xp.to_numpy(x).tolist())
