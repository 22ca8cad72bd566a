"""Kernel folders: a host kernel, its optional CUDA and Metal versions, other host
implementations and test arguments, found by file name (``Kernel.from_folder``)."""

from __future__ import annotations

import importlib
import os
import sys
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from ..exceptions import (
    InvalidArgumentError,
    InvalidArgumentTypeError,
    KernelFolderError,
    KernelPackageError,
)
from ._cuda_kernel import CudaKernel
from ._host_impl import CompiledHostKernel, HostImplementations
from ._metal_kernel import metal_kernel_from_file
from ._pyccel_kernel import outputs_from_annotations

#: Fortran's limit on identifier length; Pyccel names the C binding ``bind_c_<name><suffix>``.
FORTRAN_NAME_LIMIT = 63


def kernel_from_folder(
    cls: Any,
    package: str | ModuleType,
    *,
    host_suffix: str = "_kernels",
    cuda_suffix: str = "_cuda.cu",
    test_args_suffix: str = "_test_args",
    check_name_length: bool = True,
    missing_cuda: str = "raise",
    host_options: Mapping[str, Any] | None = None,
    outputs: Any = None,
    include_dirs: Sequence[str | os.PathLike[str]] | None = None,
    dispatch: str = "backend",
    compile_host: Callable[[ModuleType], Any] | str | None = None,
    extra_implementations: Mapping[str, Callable[[], Callable[..., Any]]] | None = None,
    metal_suffix: str = "_metal.metal",
    **cuda_options: Any,
) -> Any:
    """``Kernel.from_folder``: see there (``cls`` is ``Kernel`` or a subclass; this module
    does not import it, so that ``_dispatch`` can import this one)."""
    pkg = importlib.import_module(package) if isinstance(package, str) else package
    if not hasattr(pkg, "__path__"):
        raise KernelPackageError(f"{pkg.__name__} is not a package (kernel folder)")
    folder = Path(next(iter(pkg.__path__)))
    name = pkg.__name__.rsplit(".", 1)[-1]
    host_file = folder / f"{name}{host_suffix}.py"
    if not host_file.is_file():
        raise KernelFolderError(f"kernel folder {folder} has no host kernel {name}{host_suffix}.py")
    if check_name_length and len(f"bind_c_{name}{host_suffix}") > FORTRAN_NAME_LIMIT:
        warnings.warn(
            f"kernel name {name!r}: bind_c_{name}{host_suffix} is longer than Fortran's "
            f"{FORTRAN_NAME_LIMIT} characters; Pyccel's Fortran build may fail",
            UserWarning,
            stacklevel=3,
        )
    host_module = importlib.import_module(f"{pkg.__name__}.{name}{host_suffix}")
    python = getattr(host_module, name, None)
    if python is None:
        raise KernelFolderError(
            f"kernel folder {folder}: {host_file.name} defines no function {name!r}"
        )
    loaders: dict[str, Callable[[], Callable[..., Any]]] = {"python": lambda: python}
    if compile_host is not None:
        compiler = _compiler(compile_host)
        loaders["pyccel"] = lambda: _compiled(host_module, name, compiler)
    for impl in ("numba", "numpy"):
        if (folder / f"{name}_{impl}.py").is_file():
            loaders[impl] = _module_loader(f"{pkg.__name__}.{name}_{impl}", name)
    loaders.update(extra_implementations or {})
    implementations = HostImplementations(name, loaders)

    options = dict(host_options or {})
    if outputs is not None and "outputs" not in options:
        if isinstance(outputs, str):
            if outputs != "annotations":
                raise InvalidArgumentError(
                    f"kernel {name!r}: outputs must be names, indices or 'annotations', "
                    f"got {outputs!r}"
                )
            options["outputs"] = outputs_from_annotations(python)
        else:
            options["outputs"] = tuple(outputs)

    cuda_file = folder / f"{name}{cuda_suffix}"
    cuda = None
    if cuda_file.is_file():
        dirs = include_dirs if include_dirs is not None else (_source_root(pkg),)
        cuda = CudaKernel.from_file(
            cuda_file, name, suffix=cuda_suffix, include_dirs=tuple(dirs), **cuda_options
        )
    metal_file = folder / f"{name}{metal_suffix}"
    metal = metal_kernel_from_file(metal_file, name) if metal_file.is_file() else None
    test_args = None
    if (folder / f"{name}{test_args_suffix}.py").is_file():
        test_args = f"{pkg.__name__}.{name}{test_args_suffix}"
    return cls(
        implementations,
        cuda,
        name=name,
        missing_cuda=missing_cuda,
        cuda_path=cuda_file,
        host_options=options,
        dispatch=dispatch,
        test_args=test_args,
        metal_kernel=metal,
        metal_path=metal_file,
    )


def _compiler(compile_host: Callable[[ModuleType], Any] | str) -> Callable[[ModuleType], Any]:
    if compile_host == "pyccel":
        from ._pyccel_cache import PyccelCache

        return PyccelCache("cunumpy")
    if not callable(compile_host):
        raise InvalidArgumentTypeError(
            f"compile_host must be a callable (module -> compiled module) or 'pyccel', "
            f"got {compile_host!r}"
        )
    return compile_host


def _compiled(module: ModuleType, name: str, compiler: Callable[[ModuleType], Any]) -> Any:
    chk = CompiledHostKernel(module, name, compiler)
    compiled = chk.build()
    if compiled is None:
        raise chk.error if chk.error is not None else RuntimeError(f"{name}: compile failed")
    return compiled


def _module_loader(module_name: str, name: str) -> Callable[[], Callable[..., Any]]:
    def load() -> Callable[..., Any]:
        return getattr(importlib.import_module(module_name), name)

    return load


def _source_root(pkg: ModuleType) -> str:
    top = sys.modules[pkg.__name__.split(".", 1)[0]]
    return str(Path(next(iter(top.__path__))).parent)
