"""Runs every benchmark that this machine can run and prints their JSON."""

import subprocess
import sys
from pathlib import Path

import cunumpy as xp

GPU_BENCHES = [
    "launch_overhead.py",
    "kernel_dispatch.py",
    "pyccel_roundtrip.py",
    "algorithms.py",
    "cuda_graphs.py",
]


def main() -> int:
    here = Path(__file__).parent
    if not xp.cupy_available():
        print('{"skipped": "GPU benchmarks need CuPy and a GPU; run scripts/gpu-check there"}')
        return 0
    status = 0
    for name in GPU_BENCHES:
        status |= subprocess.call([sys.executable, str(here / name)])
    return status


if __name__ == "__main__":
    sys.exit(main())
