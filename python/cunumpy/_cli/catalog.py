"""``cunumpy catalog PACKAGE``: the kernel catalog of a package (which kernels have a CUDA
version), and ``--compile`` to compile them all with a progress bar (NVRTC on a GPU, else the
CPU emulator)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ._output import print_json


def add_parser(subparsers: Any) -> None:
    """Adds ``catalog``."""
    parser = subparsers.add_parser(
        "catalog", help="the kernel catalog of a package; --compile compiles every CUDA kernel"
    )
    parser.add_argument(
        "package", help="an importable package of kernel folders, e.g. mycode.kernels"
    )
    parser.add_argument("--compile", action="store_true", help="compile every CUDA kernel")
    parser.add_argument(
        "--emulate",
        action="store_true",
        help="compile with the CPU emulator even when a GPU is present",
    )
    parser.add_argument("-j", "--jobs", type=int, default=None, help="parallel compiles")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.set_defaults(func=run)


def _compile_emulated(catalog: Any, progress: bool) -> list[str]:
    from cunumpy.kernel_testing import compile_for_emulation
    from cunumpy.kernels._catalog import _ProgressBar

    kernels = {n: catalog[n].cuda_kernel for n in catalog.with_cuda}
    bar = _ProgressBar(len(kernels)) if progress else None
    failures = []
    try:
        for name, kernel in kernels.items():
            try:
                compile_for_emulation(kernel)
            except Exception as exc:  # every kernel is tried; all failures are reported
                failures.append(f"{name}: {exc}")
            finally:
                if bar is not None:
                    bar.tick()
    finally:
        if bar is not None:
            bar.close()
    if failures:
        from cunumpy.exceptions import CudaCompileError

        raise CudaCompileError(f"{len(failures)} kernel(s) failed:\n" + "\n".join(failures))
    return list(kernels)


def run(args: argparse.Namespace) -> int:
    """Prints the summary (and compiles); exit status 1 when loading or a compile fails."""
    import cunumpy
    from cunumpy.exceptions import CudaCompileError, CunumpyError
    from cunumpy.kernel_testing import emulation_compiler
    from cunumpy.kernels import KernelCatalog

    try:
        catalog = KernelCatalog.from_package(args.package)
    except (ImportError, CunumpyError) as exc:
        print(f"catalog: cannot load {args.package!r}: {exc}", file=sys.stderr)
        return 1
    result: dict[str, Any] = {
        "package": args.package,
        "kernels": list(catalog),
        "with_cuda": catalog.with_cuda,
        "without_cuda": catalog.without_cuda,
        "summary": catalog.summary(),
        "compiled": None,
        "compiler": None,
        "error": None,
    }
    if args.compile:
        try:
            if not args.emulate and cunumpy.cupy_available():
                result["compiler"] = "nvrtc"
                result["compiled"] = catalog.compile_all(args.jobs, progress=not args.json)
            elif emulation_compiler() is not None:
                result["compiler"] = "emulator"
                result["compiled"] = _compile_emulated(catalog, progress=not args.json)
            else:
                result["error"] = "no usable GPU and no host C++ compiler for the emulator"
        except CudaCompileError as exc:
            result["error"] = str(exc)
    if args.json:
        print_json(result)
    else:
        print(f"{args.package}: {len(catalog)} kernel(s); {result['summary']}")
        for name in catalog:
            print(f"  {name:<24} {'cuda + host' if name in catalog.with_cuda else 'host only'}")
        if result["compiled"] is not None:
            print(f"compiled {len(result['compiled'])} kernel(s) with {result['compiler']}")
        if result["error"]:
            print(f"compile FAILED: {result['error']}")
    return int(result["error"] is not None)
