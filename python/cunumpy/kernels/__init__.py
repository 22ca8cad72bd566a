"""The kernel layer: CUDA C kernels with checked launches (`CudaKernel`), Metal kernels
(`MetalKernel`, `metal_available`), host kernels and
host/CUDA pairs (`PyccelKernel`, `Kernel`, `KernelCatalog`), fused functions (`fuse`), the host
memory pool and the kernel profile."""

from ._catalog import KernelCatalog
from ._cuda_kernel import CudaKernel, CudaKernelVariants
from ._discovery import FORTRAN_NAME_LIMIT
from ._dispatch import Kernel
from ._fusion import FusedFunction, fuse
from ._generate import GeneratedCuda, generate_cuda
from ._host_impl import (
    DEVICE_IMPLEMENTATIONS,
    HOST_IMPLEMENTATIONS,
    CompiledHostKernel,
    HostImplementations,
    get_device_kernel_implementation,
    get_host_kernel_implementation,
    set_device_kernel_implementation,
    set_host_kernel_implementation,
    use_device_kernel_implementation,
    use_host_kernel_implementation,
)
from ._host_loops import host_loop_status, set_host_loops, wait_for_host_loops
from ._host_pool import host_memory_pool
from ._metal_kernel import MetalKernel, metal_available
from ._pyccel_cache import PyccelCache
from ._pyccel_kernel import (
    PyccelKernel,
    as_kernel_array,
    kernel_output,
    kernel_outputs,
    outputs_from_annotations,
)

__all__ = [
    "CudaKernel",
    "CudaKernelVariants",
    "MetalKernel",
    "metal_available",
    "FORTRAN_NAME_LIMIT",
    "Kernel",
    "KernelCatalog",
    "DEVICE_IMPLEMENTATIONS",
    "HOST_IMPLEMENTATIONS",
    "CompiledHostKernel",
    "HostImplementations",
    "get_device_kernel_implementation",
    "get_host_kernel_implementation",
    "set_device_kernel_implementation",
    "set_host_kernel_implementation",
    "use_device_kernel_implementation",
    "use_host_kernel_implementation",
    "PyccelCache",
    "PyccelKernel",
    "as_kernel_array",
    "kernel_output",
    "kernel_outputs",
    "outputs_from_annotations",
    "fuse",
    "generate_cuda",
    "GeneratedCuda",
    "FusedFunction",
    "host_memory_pool",
    "set_host_loops",
    "host_loop_status",
    "wait_for_host_loops",
]


def __getattr__(name: str) -> object:
    from .._removed import missing_attribute

    raise missing_attribute("cunumpy.kernels", name)
