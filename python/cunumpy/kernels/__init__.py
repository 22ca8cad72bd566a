"""The kernel layer: CUDA C kernels with checked launches (more building blocks follow)."""

from ._cuda_kernel import CudaKernel, CudaKernelVariants
from ._fusion import FusedFunction, fuse

__all__ = ["CudaKernel", "CudaKernelVariants", "FusedFunction", "fuse"]
