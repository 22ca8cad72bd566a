"""``cunumpy port MODULE:FUNCTION``: writes the generated CUDA version of a host kernel next to
it (``<name>_cuda.cu``, never over an existing file), says what the translator decided, and runs
the parity test against the host kernel on the emulated device (or the GPU) when the kernel's
folder has ``<name>_test_args.py``."""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys
from pathlib import Path
from typing import Any


def add_parser(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "port",
        help="generate the CUDA version of a host kernel and test it against the host kernel",
        description=__doc__,
    )
    p.add_argument(
        "target", metavar="MODULE:FUNCTION", help="e.g. mycode.kernels.push.push_kernels:push"
    )
    p.add_argument(
        "--loop",
        type=int,
        default=None,
        metavar="LINE",
        help="the top-level loop to run in parallel",
    )
    p.add_argument(
        "--out",
        default=None,
        metavar="DIR",
        help="where to write <name>_cuda.cu (default: next to the module)",
    )
    p.add_argument("--no-test", action="store_true", help="do not run the parity test")
    p.set_defaults(func=run)


def _parity(module: Any, fn: Any, src: Any, folder: Path) -> int:
    args_file = folder / f"{src.kernel}_test_args.py"
    if not args_file.is_file():
        print(f"parity: not run ({args_file.name} not found next to the kernel)")
        return 0
    spec = importlib.util.spec_from_file_location(f"_cunumpy_port_args_{src.kernel}", args_file)
    if spec is None or spec.loader is None:
        print(f"parity: cannot load {args_file}")
        return 1
    test_args = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(folder.parent))
    try:
        spec.loader.exec_module(test_args)
    finally:
        sys.path.remove(str(folder.parent))
    from cunumpy.kernel_testing import assert_kernels_agree, cuda_gate, install_fake_cupy
    from cunumpy.kernels import Kernel

    if "cupy" not in sys.modules:
        install_fake_cupy()
    if cuda_gate("device"):
        print("parity: not run (neither a GPU nor the emulated device is available)")
        return 0
    kernel = Kernel(fn, src.cuda_kernel())
    try:
        assert_kernels_agree(
            kernel,
            test_args.make_args,
            rtol=getattr(test_args, "RTOL", 1e-12),
            atol=getattr(test_args, "ATOL", 0.0),
        )
    except AssertionError as exc:
        print(f"parity: FAILED\n{exc}")
        return 1
    print("parity: the generated kernel agrees with the host kernel")
    return 0


def run(args: argparse.Namespace) -> int:
    from cunumpy.exceptions import CudaPortError
    from cunumpy.kernels import generate_cuda

    module_name, _, func_name = args.target.partition(":")
    if not func_name:
        print(f"cunumpy port: expected MODULE:FUNCTION, got {args.target!r}", file=sys.stderr)
        return 2
    module = importlib.import_module(module_name)
    fn = getattr(module, func_name, None)
    if fn is None:
        print(
            f"cunumpy port: module {module_name!r} has no function {func_name!r}", file=sys.stderr
        )
        return 2
    try:
        src = generate_cuda(fn, parallel_loop=args.loop)
    except CudaPortError as exc:
        print(f"refused: {exc}")
        return 1
    print(src.describe())
    folder = Path(args.out) if args.out else Path(module.__file__ or ".").resolve().parent
    path = folder / f"{src.kernel}_cuda.cu"
    if path.exists():
        print(
            f"cunumpy port: {path} exists; not overwritten (remove it or pass --out)",
            file=sys.stderr,
        )
        return 1
    path.write_text(str(src))
    print(f"wrote {path}")
    if args.no_test:
        return 0
    return _parity(module, fn, src, Path(module.__file__ or ".").resolve().parent)
