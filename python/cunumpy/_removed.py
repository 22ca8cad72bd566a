"""Errors for names that are not there: they name the cunumpy module (not the backend module a
lookup fell through to), and for a name cunumpy once had, say what replaces it."""

from __future__ import annotations

from .exceptions import RemovedNameError

#: Names removed on purpose: ``(module, name) -> what to write instead``. Top-level kernel
#: classes moved to their submodules in cunumpy 0.7.
REMOVED: dict[tuple[str, str], str] = {
    ("cunumpy", "CudaKernel"): "cunumpy.kernels.CudaKernel",
    ("cunumpy", "CudaKernelVariants"): "cunumpy.kernels.CudaKernelVariants",
    ("cunumpy", "PyccelKernel"): "cunumpy.kernels.PyccelKernel",
    ("cunumpy", "Kernel"): "cunumpy.kernels.Kernel",
    ("cunumpy", "KernelCatalog"): "cunumpy.kernels.KernelCatalog",
    ("cunumpy", "CudaArguments"): "cunumpy.arguments.CudaArguments",
    ("cunumpy", "CudaStruct"): "cunumpy.arguments.CudaStruct",
    ("cunumpy", "CudaStructArguments"): "cunumpy.arguments.CudaStructArguments",
    ("cunumpy", "count_transfers"): "cunumpy.profiling.count_transfers",
    ("cunumpy", "assert_no_transfers"): "cunumpy.profiling.assert_no_transfers",
    ("cunumpy", "DeviceMirror"): "cunumpy.memory.DeviceMirror",
    ("cunumpy.cuda", "CudaKernel"): "cunumpy.kernels.CudaKernel",
    ("cunumpy.cuda", "CudaArguments"): "cunumpy.arguments.CudaArguments",
    ("cunumpy.cuda", "CudaStruct"): "cunumpy.arguments.CudaStruct",
    ("cunumpy.kernels", "KernelArguments"): (
        "cunumpy.arguments.CudaStructArguments (a host argument class plus a "
        "CudaStructArguments subclass with the same constructor)"
    ),
    ("cunumpy.kernels", "PyccelStructArguments"): (
        "cunumpy.arguments.CudaStructArguments (a host argument class plus a "
        "CudaStructArguments subclass with the same constructor)"
    ),
    ("cunumpy.kernels", "resolve_host_args"): (
        "cunumpy.kernels.PyccelKernel(..., object_modules=...), which converts argument objects"
    ),
}


def missing_attribute(module: str, name: str, *, backend: str | None = None) -> AttributeError:
    """The error for ``module.name`` not existing (to raise from a module ``__getattr__``);
    it carries the module object, so Python can suggest a close name."""
    import sys

    obj = sys.modules.get(module)
    replacement = REMOVED.get((module, name))
    if replacement is not None:
        return RemovedNameError(
            f"{module}.{name} was removed on purpose; use {replacement} instead (see MIGRATING.md)",
            name=name,
        )
    where = f" (nor has the active backend, {backend})" if backend else ""
    return AttributeError(f"module {module!r} has no attribute {name!r}{where}", name=name, obj=obj)
