"""Runs kernels of NVIDIA's CUDA samples through ``cunumpy.kernels.CudaKernel`` and compares
them with NumPy.

    python scripts/cuda_samples.py CHECKOUT [--device emulated|cupy|all] [--cases FILE.py]
                                            [--only NAME ...] [--out FILE.json]

CHECKOUT is a clone of https://github.com/NVIDIA/cuda-samples (``make cuda-samples
CUDA_SAMPLES=CHECKOUT``). Nothing of it is in this repository: the script reads the sample
files at run time. Each case of :data:`CASES` names a sample file (paths relative to the
checkout; the first that exists is used), a ``__global__`` kernel of it, inputs drawn here, a
launch shape and a NumPy reference written here; the kernel's device code is taken from the file
(host code, ``main`` and the samples' helper includes are left out, see
:func:`device_code`), launched on the device, and its outputs compared with the reference.

Devices: ``emulated`` runs in a child process with ``CUNUMPY_FAKE_CUPY=1`` (the CPU emulator,
no GPU needed); ``cupy`` runs with CuPy on a GPU (skipped, and said so, when there is none);
``all`` (the default) runs both. ``--cases FILE.py`` adds the ``CASES`` list of a Python file
(same :class:`Case` fields; a relative ``path`` is read from CHECKOUT), e.g. kernels of your own.

Prints one JSON object: per device ``ran``, ``passed``, ``failed``, ``refused`` (cunumpy would
not take the kernel: its signature, a compile error for the emulator or NVRTC; with the
reason), ``missing`` (the file is not in the checkout) and every case's status and reason. Exits
1 when a case failed (a wrong result or a runtime error), 0 otherwise: refusals are reported,
not failures.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import os
import re
import subprocess
import sys
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

#: ``#include``s kept in the device code (those the emulator and NVRTC provide); every other
#: include (the samples' ``helper_*.h``, host headers, a sample's own ``*_common.h``) is dropped,
#: and what a case needs of it is in the case's ``prelude``.
KEPT_INCLUDES = ("cooperative_groups.h", "cooperative_groups/reduce.h", "math_constants.h")

DEVICE_WORDS = ("__global__", "__device__", "__constant__", "__shared__")
TYPE_ITEM = re.compile(r"^\s*(template\s*<.*>\s*)?(struct|class|union|enum)\b", re.S)
ALIAS_ITEM = re.compile(r"^\s*((typedef|using|static_assert)\b|namespace\s+\w+\s*=)")


@dataclasses.dataclass
class Case:
    """One sample kernel and how to check it.

    ``setup(rng)`` returns the launch arguments (NumPy arrays for pointer parameters, NumPy
    scalars); ``reference(args)`` returns ``{argument index: expected array}`` for the outputs,
    computed with NumPy from the inputs (``args`` as ``setup`` made them, before the launch), an
    entry may be ``(function, expected)`` to compare ``function(output)`` (a sum of partial
    results, say);
    ``launch`` holds ``grid``/``block``/``shared_mem`` (or ``n_threads``), or is a function of
    ``args`` returning them."""

    name: str
    paths: Sequence[str]
    kernel: str
    setup: Callable[[np.random.Generator], list[Any]]
    reference: Callable[[list[Any]], dict[int, np.ndarray]]
    launch: dict[str, Any] | Callable[[list[Any]], dict[str, Any]]
    template_args: Any = None
    prelude: str = ""
    rtol: float = 1e-5
    atol: float = 1e-6
    whole_file: bool = False
    #: functions of the file left out of the device code (ones using what the emulator lacks)
    leave_out: Sequence[str] = ()
    #: ``__constant__`` variables set before the launch (``CudaKernel.set_constant``)
    constants: dict[str, Any] = dataclasses.field(default_factory=dict)


# -- device code of a sample file ------------------------------------------------------------


def _strip_comments(text: str) -> str:
    """``text`` with comments replaced by spaces (newlines kept), strings left alone."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == '"' or c == "'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(text[i : j + 1])
            i = j + 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def device_code(text: str, leave_out: Sequence[str] = ()) -> str:
    """The device part of a CUDA source: preprocessor lines (``#include`` only of
    :data:`KEPT_INCLUDES`), ``typedef``/``using``/namespace aliases, struct and class
    definitions, and every top-level declaration or definition whose head says
    ``__global__``, ``__device__``, ``__constant__`` or ``__shared__``. Host functions (``main``
    included) and host variables are left out, so a sample program's kernels compile alone."""
    text = _strip_comments(text)
    kept: list[str] = []
    item: list[str] = []
    depth = 0
    at_line_start = True
    i, n = 0, len(text)

    def flush() -> None:
        body = "".join(item)
        item.clear()
        head = body.split("{", 1)[0]
        if any(re.search(rf"\b{re.escape(name)}\s*\(", head) for name in leave_out):
            return
        if any(w in head for w in DEVICE_WORDS) or TYPE_ITEM.match(head) or ALIAS_ITEM.match(head):
            kept.append(body.strip())

    while i < n:
        c = text[i]
        if depth == 0 and at_line_start and c == "#":
            j = i
            while True:  # the directive with its continuation lines
                k = text.find("\n", j)
                k = n if k < 0 else k
                if k > 0 and text[k - 1] == "\\":
                    j = k + 1
                    continue
                break
            line = text[i:k]
            include = re.match(r"#\s*include\s*[<\"]([^>\"]+)[>\"]", line)
            if include is None or include.group(1) in KEPT_INCLUDES:
                kept.append(line.strip())
            i = k
            continue
        if c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            item.append(text[i : j + 1])
            i = j + 1
            at_line_start = False
            continue
        item.append(c)
        if c == "\n":
            at_line_start = True
        elif not c.isspace():
            at_line_start = False
        if c == "{":
            depth += 1
        elif c == "}":
            depth = max(depth - 1, 0)
            if depth == 0:
                head = "".join(item).split("{", 1)[0]
                rest = text[i + 1 :].lstrip()
                # a function body ends the item; a struct/class/enum/initialiser waits for `;`
                if ")" in head and not TYPE_ITEM.match(head) and "=" not in head.split("(")[0]:
                    if not rest.startswith(";"):
                        flush()
        elif c == ";" and depth == 0:
            flush()
        i += 1
    return "\n".join(kept) + "\n"


# -- the cases -------------------------------------------------------------------------------
# Inputs and references are written here, from what each kernel computes; nothing is taken
# from the samples' host code.


def _f32(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return rng.standard_normal(shape).astype(np.float32)


def _vector_add_setup(rng):
    n = 5000
    return [_f32(rng, n), _f32(rng, n), np.zeros(n, np.float32), np.int32(n)]


def _matmul_setup(rng):
    ha, wa, wb = 64, 48, 80  # multiples of the 16x16 tile
    a, b = _f32(rng, ha, wa), _f32(rng, wa, wb)
    return [np.zeros((ha, wb), np.float32), a, b, np.int32(wa), np.int32(wb)]


def _scalar_prod_setup(rng):
    vectors, elements = 8, 2048
    return [
        np.zeros(vectors, np.float32),
        _f32(rng, vectors * elements),
        _f32(rng, vectors * elements),
        np.int32(vectors),
        np.int32(elements),
    ]


def _transpose_setup(rng):
    h, w = 64, 96  # multiples of the 32x32 tile
    return [np.zeros((w, h), np.float32), _f32(rng, h, w), np.int32(w), np.int32(h)]


def _transpose_case(kernel: str) -> Case:
    return Case(
        name=f"transpose/{kernel}",
        paths=["Samples/6_Performance/transpose/transpose.cu"],
        kernel=kernel,
        setup=_transpose_setup,
        reference=lambda a: {0: a[1].T},
        launch=lambda a: {"grid": (int(a[2]) // 32, int(a[3]) // 32), "block": (32, 16)},
        rtol=0,
        atol=0,
    )


def _reduce_setup(rng):
    n = 4096
    return [_f32(rng, n), np.zeros(n // 256, np.float32), np.uint32(n)]


def _reduce_case(kernel: str, template_args: Any, per_block: int) -> Case:
    def reference(a):
        return {1: a[0].reshape(-1, per_block).sum(axis=1, dtype=np.float64).astype(np.float32)}

    return Case(
        name=f"reduction/{kernel}",
        paths=["Samples/2_Concepts_and_Techniques/reduction/reduction_kernel.cu"],
        kernel=kernel,
        template_args=template_args,
        setup=lambda rng: [
            *_reduce_setup(rng)[:1],
            np.zeros(4096 // per_block, np.float32),
            np.uint32(4096),
        ],
        reference=reference,
        launch={"grid": 4096 // per_block, "block": 256, "shared_mem": 256 * 4},
        leave_out=("multi_warp_cg_reduce",),
        rtol=1e-4,
        atol=1e-4,
    )


def _shfl_scan_setup(rng):
    n = 1024
    return [rng.integers(0, 10, n).astype(np.int32), np.int32(32)]


def _shfl_scan_reference(a):
    blocks = a[0].reshape(-1, 256)
    return {0: np.cumsum(blocks, axis=1, dtype=np.int64).astype(np.int32).ravel()}


def _histogram_setup(rng):
    words = 4096  # uint4 words
    data = rng.integers(0, 2**32, words * 4, dtype=np.uint32)
    return [np.zeros(8 * 64, np.uint32), data, np.uint32(words)]


def _histogram_reference(a):
    bins = np.bincount(a[1].view(np.uint8) >> 2, minlength=64).astype(np.uint32)
    return {0: (lambda partial: partial.reshape(8, 64).sum(axis=0, dtype=np.uint32), bins)}


#: the separable convolution's filter (set into the sample's ``__constant__ c_Kernel``)
CONVOLUTION_RADIUS = 8
CONVOLUTION_FILTER = (
    np.exp(-0.5 * (np.arange(-8, 9) / 3.0) ** 2)
    / np.exp(-0.5 * (np.arange(-8, 9) / 3.0) ** 2).sum()
).astype(np.float32)


def _convolution_setup(rng):
    w, h = 256, 128  # rows: w % 128 == 0, h % 4 == 0; columns: w % 16 == 0, h % 64 == 0
    return [np.zeros((h, w), np.float32), _f32(rng, h, w), np.int32(w), np.int32(h), np.int32(w)]


def _convolve(src: np.ndarray, axis: int) -> np.ndarray:
    """``dst[i] = sum_j filter[R - j] * src[i + j]`` along ``axis``, zero outside the image."""
    r = CONVOLUTION_RADIUS
    pad = [(0, 0), (0, 0)]
    pad[axis] = (r, r)
    padded = np.pad(src.astype(np.float64), pad)
    n = src.shape[axis]
    out = np.zeros(src.shape)
    for j in range(-r, r + 1):
        window = np.take(padded, np.arange(r + j, r + j + n), axis=axis)
        out += float(CONVOLUTION_FILTER[r - j]) * window
    return out.astype(np.float32)


def _convolution_case(kernel: str, axis: int, launch: Callable[[list[Any]], dict[str, Any]]):
    return Case(
        name=f"convolutionSeparable/{kernel}",
        paths=["Samples/2_Concepts_and_Techniques/convolutionSeparable/convolutionSeparable.cu"],
        kernel=kernel,
        setup=_convolution_setup,
        reference=lambda a: {0: _convolve(a[1], axis)},
        launch=launch,
        prelude=f"#define KERNEL_RADIUS {CONVOLUTION_RADIUS}\n"
        "#define KERNEL_LENGTH (2 * KERNEL_RADIUS + 1)\n",
        constants={"c_Kernel": CONVOLUTION_FILTER},
        rtol=1e-4,
        atol=1e-5,
    )


CASES: list[Case] = [
    Case(
        name="vectorAdd",
        paths=[
            "Samples/0_Introduction/vectorAdd/vectorAdd.cu",
            "Samples/0_Introduction/vectorAdd_nvrtc/vectorAdd_kernel.cu",
        ],
        kernel="vectorAdd",
        setup=_vector_add_setup,
        reference=lambda a: {2: a[0] + a[1]},
        launch=lambda a: {"n_threads": int(a[3])},
        rtol=0,
        atol=0,
    ),
    Case(
        name="matrixMul",
        paths=["Samples/0_Introduction/matrixMul_nvrtc/matrixMul_kernel.cu"],
        kernel="matrixMulCUDA_block16",
        setup=_matmul_setup,
        reference=lambda a: {0: a[1] @ a[2]},
        launch=lambda a: {"grid": (a[0].shape[1] // 16, a[0].shape[0] // 16), "block": (16, 16)},
        rtol=1e-4,
        atol=1e-4,
    ),
    Case(
        name="scalarProd",
        paths=["Samples/2_Concepts_and_Techniques/scalarProd/scalarProd_kernel.cuh"],
        kernel="scalarProdGPU",
        setup=_scalar_prod_setup,
        reference=lambda a: {
            0: (a[1].astype(np.float64) * a[2])
            .reshape(int(a[3]), -1)
            .sum(axis=1)
            .astype(np.float32)
        },
        launch={"grid": 4, "block": 256},
        rtol=1e-4,
        atol=1e-3,
    ),
    _transpose_case("transposeNaive"),
    _transpose_case("transposeCoalesced"),
    _transpose_case("transposeNoBankConflicts"),
    _transpose_case("transposeDiagonal"),
    _reduce_case("reduce0", ("float",), 256),
    _reduce_case("reduce3", ("float",), 512),
    _reduce_case("reduce4", ("float", 256), 512),
    Case(
        name="shfl_scan",
        paths=["Samples/2_Concepts_and_Techniques/shfl_scan/shfl_scan.cu"],
        kernel="shfl_scan_test",  # partial_sums = NULL by default: left out
        setup=_shfl_scan_setup,
        reference=_shfl_scan_reference,
        launch={"grid": 4, "block": 256, "shared_mem": 8 * 4},
        rtol=0,
        atol=0,
    ),
    _convolution_case(
        "convolutionRowsKernel",
        1,
        lambda a: {"grid": (int(a[2]) // 128, int(a[3]) // 4), "block": (16, 4)},
    ),
    _convolution_case(
        "convolutionColumnsKernel",
        0,
        lambda a: {"grid": (int(a[2]) // 16, int(a[3]) // 64), "block": (16, 8)},
    ),
    Case(
        name="histogram64",
        paths=["Samples/2_Concepts_and_Techniques/histogram/histogram64.cu"],
        kernel="histogram64Kernel",
        setup=_histogram_setup,
        reference=_histogram_reference,
        launch={"grid": 8, "block": 64},
        prelude=(
            "typedef unsigned int uint;\ntypedef unsigned char uchar;\n"
            "#define HISTOGRAM64_BIN_COUNT 64\n#define HISTOGRAM64_THREADBLOCK_SIZE 64\n"
            "#define UMUL(a, b) ((a) * (b))\n#define UMAD(a, b, c) (UMUL((a), (b)) + (c))\n"
        ),
        rtol=0,
        atol=0,
    ),
]


# -- running ---------------------------------------------------------------------------------


def _reason(exc: BaseException) -> str:
    text = getattr(exc, "full_message", None) or str(exc)
    first = " ".join(text.split())
    return f"{type(exc).__name__}: {first[:400]}"


def _refusal_classes() -> tuple[type[BaseException], ...]:
    from cunumpy import exceptions as e

    return (
        e.CudaSignatureError,
        e.CudaCompileError,  # EmulationCompileError too
        e.KernelArgumentTypeError,
        e.KernelArgumentValueError,
        e.CudaStructError,
        e.CudaConstantError,
    )


def cuda_include_dirs() -> list[str]:
    """On a GPU, the toolkit's include folders (``cooperative_groups.h``, and CUDA 13's
    ``cccl/``), which NVRTC does not search by itself; none under emulation."""
    if os.environ.get("CUNUMPY_FAKE_CUPY"):
        return []
    bases = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"]
    try:
        import cupy

        bases.append(cupy.cuda.get_cuda_path())
    except Exception:  # noqa: BLE001 - only a hint where to look
        pass
    found: list[str] = []
    for base in filter(None, bases):
        include = Path(base) / "include"
        if (include / "cooperative_groups.h").is_file() and str(include) not in found:
            found.append(str(include))
            if (include / "cccl").is_dir():
                found.append(str(include / "cccl"))
    return found


def run_case(case: Case, checkout: Path, seed: int = 0) -> dict[str, Any]:
    """Runs one case on the current device (the fake CuPy's or CuPy's)."""
    import cupy

    from cunumpy.kernels import CudaKernel

    entry: dict[str, Any] = {"name": case.name, "kernel": case.kernel}
    path = next((checkout / p for p in case.paths if (checkout / p).is_file()), None)
    if path is None:
        entry.update(status="missing", reason=f"none of {list(case.paths)} in {checkout}")
        return entry
    entry["file"] = str(path.relative_to(checkout)) if path.is_relative_to(checkout) else str(path)
    text = path.read_text(errors="replace")
    source = case.prelude + (text if case.whole_file else device_code(text, case.leave_out))
    rng = np.random.default_rng(seed)
    host = case.setup(rng)
    inputs = [a.copy() if isinstance(a, np.ndarray) else a for a in host]
    launch = case.launch(host) if callable(case.launch) else dict(case.launch)
    try:
        kernel = CudaKernel(
            source,
            case.kernel,
            template_args=case.template_args,
            source_dir=str(path.parent),
            include_dirs=cuda_include_dirs(),
        )
        device = [cupy.asarray(a) if isinstance(a, np.ndarray) else a for a in host]
        kernel.check_args(*device)
        kernel.compile()
        for name, value in case.constants.items():
            kernel.set_constant(name, value)
    except _refusal_classes() as exc:
        entry.update(status="refused", reason=_reason(exc))
        return entry
    try:
        kernel(*device, **launch)
        outputs = {
            i: cupy.asnumpy(device[i])
            for i in range(len(device))
            if isinstance(host[i], np.ndarray)
        }
        expected = case.reference(inputs)
    except Exception as exc:  # noqa: BLE001 - every runtime error is a failed case, reported
        entry.update(status="failed", reason=_reason(exc))
        return entry
    worst = 0.0
    for index, want in expected.items():
        got = outputs[index]
        if isinstance(want, tuple):
            transform, want = want
            got = transform(got)
        got = got.reshape(np.shape(want))
        if not np.allclose(got, want, rtol=case.rtol, atol=case.atol):
            bad = int(np.sum(~np.isclose(got, want, rtol=case.rtol, atol=case.atol)))
            entry.update(
                status="failed",
                reason=f"argument {index}: {bad} of {got.size} elements differ from NumPy's",
            )
            return entry
        if got.size:
            diff = np.abs(got.astype(np.float64) - np.asarray(want, dtype=np.float64))
            worst = max(worst, float(diff.max()))
    entry.update(status="passed", max_abs_error=worst, compared=sorted(expected))
    return entry


def load_cases(files: Sequence[str]) -> list[Case]:
    """:data:`CASES` plus the ``CASES`` of each file."""
    cases = list(CASES)
    for file in files:
        spec = importlib.util.spec_from_file_location(f"_cuda_sample_cases_{len(cases)}", file)
        if spec is None or spec.loader is None:
            raise SystemExit(f"cannot import cases from {file}")
        module = importlib.util.module_from_spec(spec)
        module.Case = Case  # type: ignore[attr-defined]
        spec.loader.exec_module(module)
        cases.extend(module.CASES)
    return cases


def run_device(checkout: Path, cases: list[Case]) -> dict[str, Any]:
    """Every case on the device of this process, with the counts."""
    results = []
    for case in cases:
        try:
            results.append(run_case(case, checkout))
        except Exception as exc:  # noqa: BLE001 - a broken case is reported, the rest still run
            results.append(
                {
                    "name": case.name,
                    "kernel": case.kernel,
                    "status": "failed",
                    "reason": _reason(exc),
                    "traceback": traceback.format_exc(limit=3),
                }
            )
    counts = {
        k: sum(r["status"] == k for r in results)
        for k in ("passed", "failed", "refused", "missing")
    }
    return {"ran": counts["passed"] + counts["failed"], **counts, "cases": results}


def _child(device: str, args: argparse.Namespace) -> dict[str, Any]:
    env = dict(os.environ)
    if device == "emulated":
        env["CUNUMPY_FAKE_CUPY"] = "1"
    else:
        env.pop("CUNUMPY_FAKE_CUPY", None)
    command = [sys.executable, __file__, str(args.checkout), "--device", device, "--in-process"]
    for f in args.cases:
        command += ["--cases", f]
    for name in args.only:
        command += ["--only", name]
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    try:
        return json.loads(done.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        return {"error": f"the {device} run exited with {done.returncode}: {done.stderr[-2000:]}"}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkout", type=Path, help="a clone of NVIDIA/cuda-samples")
    parser.add_argument("--device", choices=("emulated", "cupy", "all"), default="all")
    parser.add_argument("--cases", action="append", default=[], help="a .py file with CASES")
    parser.add_argument("--only", action="append", default=[], help="run only these case names")
    parser.add_argument("--out", type=Path, help="also write the JSON summary here")
    parser.add_argument("--in-process", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    checkout = args.checkout.resolve()

    if args.in_process:
        import cunumpy as xp

        cases = [c for c in load_cases(args.cases) if not args.only or c.name in args.only]
        if args.device == "cupy" and (
            os.environ.get("CUNUMPY_FAKE_CUPY") or not xp.cupy_available()
        ):
            print(json.dumps({"skipped": "no CUDA GPU with CuPy on this machine"}))
            return 0
        print(json.dumps(run_device(checkout, cases)))
        return 0

    if not checkout.is_dir():
        print(
            json.dumps(
                {
                    "checkout": str(checkout),
                    "error": "not a folder: pass a clone of https://github.com/NVIDIA/cuda-samples",
                }
            )
        )
        return 2
    devices = ("emulated", "cupy") if args.device == "all" else (args.device,)
    summary: dict[str, Any] = {"checkout": str(checkout), "devices": {}}
    for device in devices:
        summary["devices"][device] = _child(device, args)
    text = json.dumps(summary, indent=2)
    print(text)
    if args.out is not None:
        args.out.write_text(text + "\n")
    failed = any(d.get("failed", 0) or "error" in d for d in summary["devices"].values())
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
