"""The first call of a fused three-kernel plan on the emulated device with empty caches: each
run is a new process (``CUNUMPY_FAKE_CUPY=1``) with a new, empty emulation cache and kernel
cache, which times ``f(a)`` for ``f = fuse(lambda a: (a - a.mean()) / a.std())`` (three
launches: the mean, the variance, the elementwise result): trace, plan, the one C++ compile of
the plan's source, load and run. Median of ``--runs`` runs; issue 22's line is 3 s on a 2-core
machine. Prints JSON. Needs a host C++ compiler, no GPU: ``python benches/emulated_first_call.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

CHILD = r"""
import json, time
import numpy as np
import cunumpy as xp  # with CUNUMPY_FAKE_CUPY=1 this installs the emulated CuPy
import cupy

f = xp.kernels.fuse(lambda a: (a - a.mean()) / a.std(), kernel_name="first_call")
host = np.random.default_rng(0).standard_normal(100_000)
a = cupy.asarray(host)
kernels = len(f.plan(a).kernels)
start = time.perf_counter()
out = f(a)
first = time.perf_counter() - start
start = time.perf_counter()
f(a)
second = time.perf_counter() - start
ok = bool(np.allclose(cupy.asnumpy(out), (host - host.mean()) / host.std(), rtol=1e-12))
print(json.dumps({"first_call_s": first, "second_call_s": second, "kernels": kernels, "ok": ok}))
"""


def one_run() -> dict:
    with tempfile.TemporaryDirectory() as emu, tempfile.TemporaryDirectory() as kernels:
        env = dict(
            os.environ,
            CUNUMPY_FAKE_CUPY="1",
            CUNUMPY_EMULATION_CACHE=emu,
            CUNUMPY_CACHE_DIR=kernels,
        )
        env.pop("CUNUMPY_REQUIRE_CUDA", None)  # set by scripts/gpu-check; this is the emulator
        proc = subprocess.run(
            [sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, check=True
        )
        return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--device", default="emulated", help="accepted for run_all; emulated only")
    args = parser.parse_args()
    runs = [one_run() for _ in range(args.runs)]
    firsts = [r["first_call_s"] for r in runs]
    print(
        json.dumps(
            {
                "benchmark": "emulated_first_call",
                "cpu_count": os.cpu_count(),
                "kernels": runs[0]["kernels"],
                "all_results_match_numpy": all(r["ok"] for r in runs),
                "first_call_s": firsts,
                "first_call_median_s": statistics.median(firsts),
                "target_s": 3.0,
                "second_call_s": statistics.median(r["second_call_s"] for r in runs),
            },
            indent=1,
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
