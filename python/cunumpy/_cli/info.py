"""``cunumpy info``: what is installed and what works (like ``numba -s``)."""

from __future__ import annotations

import argparse
import os
import platform
import sys
from importlib import metadata
from typing import Any

from ._output import folder_size, human_bytes, print_json

PACKAGES = (
    "numpy",
    "array-api-compat",
    "cupy-cuda13x",
    "cupy-cuda12x",
    "cupy",
    "numba",
    "pyccel",
    "mpi4py",
    "matplotlib",
)
# the device limits a launch is checked against (CUDA runtime property names)
LIMITS = (
    "maxThreadsPerBlock",
    "maxThreadsDim",
    "maxGridSize",
    "sharedMemPerBlock",
    "sharedMemPerBlockOptin",
    "regsPerBlock",
    "warpSize",
    "multiProcessorCount",
    "totalGlobalMem",
    "major",
    "minor",
)


def add_parser(subparsers: Any) -> None:
    """Adds ``info``."""
    parser = subparsers.add_parser(
        "info", help="versions, backend, CUDA and compilers found (or why not), devices, caches"
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.set_defaults(func=run)


def collect() -> dict[str, Any]:
    """The report as plain data."""
    import cunumpy
    from cunumpy import _core
    from cunumpy.kernel_testing import emulation_cache_dir, emulation_compiler

    versions: dict[str, str | None] = {
        "cunumpy": cunumpy.__version__,
        "python": platform.python_version(),
    }
    for name in PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    backend = cunumpy.backend_info()
    cuda = dict(_core.cuda_backend_info([p for p in sys.path if p]))
    compiler = emulation_compiler()
    kernel_cache = _core.kernel_cache_dir()
    emu_cache = emulation_cache_dir()
    caches = {}
    for label, path in (("kernels", kernel_cache), ("emulation", emu_cache)):
        files, size = folder_size(path)
        caches[label] = {"path": None if path is None else str(path), "files": files, "bytes": size}
    return {
        "versions": versions,
        "platform": platform.platform(),
        "backend": backend["backend"],
        "cupy": {
            "available": backend["cupy_available"],
            "why_not": backend.get("cuda_unavailable_reason"),
            "min_version": backend["min_cupy_version"],
        },
        "cuda": cuda,
        "host_compiler": {
            "path": compiler,
            "why_not": None if compiler else "no $CXX, c++, g++ or clang++ found",
        },
        "devices": _devices() if backend["cupy_available"] else [],
        "caches": caches,
        "environment": {
            k: v
            for k, v in sorted(os.environ.items())
            if k.startswith("CUNUMPY_") or k in ("CXX", "CUDA_VISIBLE_DEVICES", "MAYBEMPI")
        },
    }


def _devices() -> list[dict[str, Any]]:
    import cupy

    runtime = cupy.cuda.runtime
    out = []
    for device in range(runtime.getDeviceCount()):
        props = runtime.getDeviceProperties(device)
        name = props.get("name", b"")
        entry: dict[str, Any] = {
            "id": device,
            "name": name.decode() if isinstance(name, bytes) else str(name),
        }
        for key in LIMITS:
            if key in props:
                value = props[key]
                entry[key] = list(value) if isinstance(value, tuple) else value
        with cupy.cuda.Device(device):
            free, total = runtime.memGetInfo()
        entry["memory_free"], entry["memory_total"] = free, total
        out.append(entry)
    return out


def run(args: argparse.Namespace) -> int:
    """Prints the report; exit status 0."""
    report = collect()
    if args.json:
        print_json(report)
        return 0
    print(
        f"cunumpy {report['versions']['cunumpy']} on Python {report['versions']['python']}"
        f" ({report['platform']})"
    )
    print("packages:")
    for name, version in report["versions"].items():
        if name not in ("cunumpy", "python"):
            print(f"  {name:<18} {version or 'not installed'}")
    print(f"backend: {report['backend']}")
    cupy = report["cupy"]
    print(
        "CuPy: "
        + ("works" if cupy["available"] else f"not usable: {cupy['why_not']}")
        + f" (needs >= {cupy['min_version']})"
    )
    cuda = report["cuda"]
    if "driver" in cuda:
        d = cuda["driver"]
        version = d["version"]
        count = d.get("device_count", d.get("device_count_error"))
        print(
            f"CUDA driver: {d['library']} (CUDA {version // 1000}.{version % 1000 // 10}),"
            f" devices: {count}"
        )
    else:
        print(f"CUDA driver: not found: {cuda.get('driver_error')}")
    if "nvrtc" in cuda:
        n = cuda["nvrtc"]
        print(
            f"NVRTC: {n['library']} (version {n['version']}), architectures "
            + " ".join(f"sm_{a}" for a in n["supported_archs"])
        )
    else:
        print(f"NVRTC: not found: {cuda.get('nvrtc_error')}")
    compiler = report["host_compiler"]
    print(f"host C++ compiler (emulator, CPU loops): {compiler['path'] or compiler['why_not']}")
    for device in report["devices"]:
        print(
            f"device {device['id']}: {device['name']} (sm_{device.get('major')}"
            f"{device.get('minor')}), {human_bytes(device['memory_total'])},"
            f" {device.get('multiProcessorCount')} SMs"
        )
        limits = ", ".join(f"{k}={device[k]}" for k in LIMITS[:6] if k in device)
        print(f"  limits: {limits}")
    for label, cache in report["caches"].items():
        where = cache["path"] or "off"
        print(f"{label} cache: {where}: {cache['files']} file(s), {human_bytes(cache['bytes'])}")
    if report["environment"]:
        print("environment: " + ", ".join(f"{k}={v}" for k, v in report["environment"].items()))
    return 0
