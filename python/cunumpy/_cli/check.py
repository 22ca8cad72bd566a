"""``cunumpy check FILE.cu``: the kernels of a CUDA file, their checked signatures, what cannot be
checked and why, and a compile (NVRTC on a GPU, else the CPU emulator). Exits non-zero when a
kernel fails to compile (or, with ``--strict``, cannot be checked), so it fits pre-commit and CI.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ._output import print_json


def add_parser(subparsers: Any) -> None:
    """Adds ``check``."""
    parser = subparsers.add_parser(
        "check", help="parse and compile the kernels of CUDA files (NVRTC, or the emulator)"
    )
    parser.add_argument("files", nargs="+", type=Path, metavar="FILE.cu")
    parser.add_argument(
        "-I",
        "--include-dir",
        action="append",
        default=[],
        dest="include_dirs",
        help="a folder of headers (the file's own folder is always searched)",
    )
    parser.add_argument(
        "-O",
        "--option",
        action="append",
        default=[],
        dest="options",
        help="a compiler option, e.g. -O=-DN=4 (repeatable)",
    )
    parser.add_argument(
        "-s",
        "--struct",
        action="append",
        default=[],
        dest="structs",
        help="a struct type the kernels take by value (repeatable), e.g. -s Particles",
    )
    parser.add_argument(
        "-t",
        "--template-args",
        action="append",
        default=[],
        metavar="KERNEL=ARG,ARG",
        help="instantiate a template kernel, e.g. -t fill=double,4 (repeatable)",
    )
    how = parser.add_mutually_exclusive_group()
    how.add_argument(
        "--emulate",
        action="store_true",
        help="compile with the CPU emulator even when a GPU is present",
    )
    how.add_argument("--no-compile", action="store_true", help="only parse the signatures")
    parser.add_argument(
        "--strict", action="store_true", help="fail when a kernel's arguments cannot be checked"
    )
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.set_defaults(func=run)


def compiler_for(args: argparse.Namespace) -> tuple[str | None, str | None]:
    """``("nvrtc" | "emulator" | None, why not)``."""
    if args.no_compile:
        return None, "--no-compile"
    import cunumpy
    from cunumpy.kernel_testing import emulation_compiler

    if not args.emulate and cunumpy.cupy_available():
        return "nvrtc", None
    if emulation_compiler() is not None:
        return "emulator", None
    why = "no usable GPU (" + str(cunumpy.backend_info().get("cuda_unavailable_reason")) + ")"
    return None, why + " and no host C++ compiler for the emulator"


def template_args_of(args: argparse.Namespace) -> dict[str, list[str]]:
    """``-t fill=double,4`` as ``{"fill": ["double", "4"]}`` (C++ text, as given)."""
    out = {}
    for item in args.template_args:
        name, _, values = item.partition("=")
        out[name.strip()] = [v.strip() for v in values.split(",") if v.strip()]
    return out


def check_kernel(
    source: str, name: str, path: Path, args: argparse.Namespace, compiler: str | None
) -> dict[str, Any]:
    """Parses and compiles one kernel; the result as plain data."""
    from cunumpy.cuda import parse_cuda_signature
    from cunumpy.exceptions import CudaCompileError, CudaSignatureError, EmulationError
    from cunumpy.kernel_testing import compile_for_emulation
    from cunumpy.kernels import CudaKernel

    result: dict[str, Any] = {
        "kernel": name,
        "parameters": None,
        "unchecked": None,
        "compiled": None,
        "not_compiled": None,
        "error": None,
    }
    template_args = template_args_of(args).get(name)
    try:
        result["parameters"] = [
            p.declaration or f"{p.ctype} {p.name}"
            for p in parse_cuda_signature(
                source, name, structs=args.structs, template_args=template_args
            )
        ]
    except CudaSignatureError as exc:
        result["unchecked"] = str(exc)
    if compiler is None:
        return result
    if template_args is None and result["unchecked"] and "is a template" in result["unchecked"]:
        result["not_compiled"] = f"a template: give its arguments with -t {name}=ARG,..."
        return result
    kernel = CudaKernel(
        source,
        name,
        include_dirs=args.include_dirs,
        source_dir=path.parent,
        options=args.options,
        template_args=template_args,
        # struct sizes are known only to the program that passes them: parse, but do not pack
        check_signature=result["unchecked"] is None and not args.structs,
    )
    try:
        if compiler == "nvrtc":
            kernel.compile()
        else:
            compile_for_emulation(kernel)
        result["compiled"] = compiler
    except (CudaCompileError, EmulationError, CudaSignatureError) as exc:
        result["error"] = str(exc)
    return result


def run(args: argparse.Namespace) -> int:
    """Checks every file; exit status 1 if any kernel failed (or none was found)."""
    compiler, why_not = compiler_for(args)
    files: list[dict[str, Any]] = []
    failed = False
    for path in args.files:
        from cunumpy.exceptions import CudaSourceEncodingError
        from cunumpy.kernels._cuda_kernel import read_cuda_source

        try:
            source = read_cuda_source(path)
        except (OSError, CudaSourceEncodingError) as exc:
            files.append({"file": str(path), "error": f"cannot read: {exc}", "kernels": []})
            failed = True
            continue
        from cunumpy.cuda import cuda_kernel_names

        names = cuda_kernel_names(source)
        kernels = [check_kernel(source, n, path, args, compiler) for n in names]
        error = None if names else "no __global__ kernel found"
        failed |= not names or any(k["error"] for k in kernels)
        failed |= args.strict and any(k["unchecked"] for k in kernels)
        files.append({"file": str(path), "error": error, "kernels": kernels})
    if args.json:
        print_json(
            {
                "compiler": compiler,
                "not_compiled_because": why_not,
                "files": files,
                "ok": not failed,
            }
        )
        return int(failed)
    for entry in files:
        print(
            f"{entry['file']}: {len(entry['kernels'])} kernel(s)"
            + (f": {entry['error']}" if entry["error"] else "")
        )
        for k in entry["kernels"]:
            if k["parameters"] is not None:
                print(f"  {k['kernel']}({', '.join(k['parameters'])})")
            else:
                print(f"  {k['kernel']}: arguments cannot be checked: {k['unchecked']}")
            if k["error"]:
                print(f"    compile FAILED ({compiler}):")
                print("      " + k["error"].replace("\n", "\n      "))
            elif k["compiled"]:
                print(f"    compiled ({k['compiled']})")
            elif k["not_compiled"]:
                print(f"    not compiled: {k['not_compiled']}")
    if compiler is None:
        print(f"not compiled: {why_not}")
    print("check: " + ("FAILED" if failed else "ok"))
    return int(failed)
