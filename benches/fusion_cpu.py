"""The fused CPU executor vs NumPy (and numexpr when importable), float64, 10^7 and 10^4
elements: best-of-N wall times and ratios measured in the same run. Prints JSON.

``index_expressions``: the indexing shapes of benches/fusion.py (a 1-D three-point stencil, a
2-D five-point Laplacian, a gather ``a[idx] * b``, ``a.max(axis=1) - a.min(axis=1)`` on a tall
matrix) against NumPy and numexpr (given the shifted views, and the gathered array, as its
inputs: numexpr does not index), with the memory-traffic ceiling: the least bytes the
expression moves (inputs read once, the result written once) over the two-thread copy rate
measured alternately with it. The row reduction, which mostly reads, is also set against a
plain two-thread read of its input (``np.sum`` of each half on its own thread), timed
alternately with it; the gather against its random-read ceiling (the longer of its streams at
the copy rate and its table reads at the rate of a plain two-thread C loop reading the table at
random places, timed alternately with it). numexpr is in requirements/bench.txt."""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np


def best(fn, *args, repeat):
    fn(*args)
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - t)
    return min(times)


def best_interleaved(f, g, repeat):
    """Best times of `f()` and `g()`, called alternately: both see the same machine state
    (this VM's memory bandwidth drifts by 10-30% over a minute when its neighbours are busy)."""
    f()
    g()
    tf, tg = [], []
    for _ in range(repeat):
        t = time.perf_counter()
        f()
        tf.append(time.perf_counter() - t)
        t = time.perf_counter()
        g()
        tg.append(time.perf_counter() - t)
    return min(tf), min(tg)


_POOL = None


def two_thread_copy(src, dst):
    """np.copyto of each half on its own thread (NumPy releases the GIL while copying)."""
    global _POOL
    if _POOL is None:
        from concurrent.futures import ThreadPoolExecutor

        _POOL = ThreadPoolExecutor(2)
    half = src.size // 2
    parts = [(dst[:half], src[:half]), (dst[half:], src[half:])]
    list(_POOL.map(lambda p: np.copyto(*p), parts))


def _halves(*arrays):
    half = arrays[0].size // 2
    return [tuple(x[:half] for x in arrays), tuple(x[half:] for x in arrays)]


def two_thread_add(a, b, out):
    two_thread_copy(a[:0], out[:0])  # starts the pool
    list(_POOL.map(lambda p: np.add(*p), _halves(a, b, out)))


def two_thread_sum(a):
    """np.sum of each half of `a` (flat) on its own thread: a plain read of its bytes."""
    two_thread_copy(a[:0], a[:0].copy())
    list(_POOL.map(lambda p: np.sum(p[0]), _halves(a.reshape(-1))))


def two_thread_dot(a, b):
    two_thread_copy(a[:0], a[:0].copy())
    list(_POOL.map(lambda p: np.dot(*p), _halves(a, b)))


_RANDOM_READ_C = r"""
#include <stdint.h>
/* n reads of a[j] at pseudo-random j < table (a power of two): no index stream, nothing
   written; four independent generators so that the index arithmetic is not a chain */
double random_read(const double* a, long long table, long long n, unsigned long long seed) {
    uint64_t x0 = seed, x1 = seed ^ 0x9e3779b97f4a7c15ULL, x2 = seed * 3 + 1, x3 = seed * 7 + 5;
    const uint64_t m = (uint64_t)table - 1;
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    for (long long i = 0; i + 3 < n; i += 4) {
        x0 = x0 * 6364136223846793005ULL + 1442695040888963407ULL;
        x1 = x1 * 6364136223846793005ULL + 1442695040888963407ULL;
        x2 = x2 * 6364136223846793005ULL + 1442695040888963407ULL;
        x3 = x3 * 6364136223846793005ULL + 1442695040888963407ULL;
        s0 += a[(x0 >> 29) & m]; s1 += a[(x1 >> 29) & m];
        s2 += a[(x2 >> 29) & m]; s3 += a[(x3 >> 29) & m];
    }
    return s0 + s1 + s2 + s3;
}
"""


def random_reader():
    """A two-thread random read of a table (``reader(a, n)``), compiled with the host C
    compiler; None without one. What this machine's caches and memory deliver to reads at
    random places, the rate a gather's table reads cannot beat."""
    import ctypes
    import shutil
    import subprocess
    import tempfile
    from pathlib import Path

    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        return None
    folder = Path(tempfile.mkdtemp())
    (folder / "rr.c").write_text(_RANDOM_READ_C)
    built = subprocess.run(
        [cc, "-O2", "-shared", "-fPIC", "-o", str(folder / "rr.so"), str(folder / "rr.c")],
        capture_output=True,
    )
    if built.returncode != 0:
        return None
    lib = ctypes.CDLL(str(folder / "rr.so"))  # ctypes releases the GIL during the call
    lib.random_read.restype = ctypes.c_double
    lib.random_read.argtypes = [
        ctypes.c_void_p,
        ctypes.c_longlong,
        ctypes.c_longlong,
        ctypes.c_ulonglong,
    ]

    def reader(a, n):
        two_thread_copy(a[:0], a[:0].copy())  # starts the pool
        halves = [(n // 2, 1), (n - n // 2, 2)]
        list(_POOL.map(lambda h: lib.random_read(a.ctypes.data, a.size, *h), halves))

    return reader


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cpu")  # scripts/gpu-check passes it; ignored
    parser.add_argument("--n", type=int, default=10**7)
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--grid", type=int, default=8192)
    opts = parser.parse_args()
    import cunumpy as xp
    from cunumpy.kernels import host_loop_status, set_host_loops

    # steady state: kernels that compile are built before their first timed call
    set_host_loops("sync")
    try:
        import numexpr
    except ImportError:
        numexpr = None
    exprs = {
        "a*b + c*d - 2.5*a": (lambda a, b, c, d: a * b + c * d - 2.5 * a, 4, "a*b + c*d - 2.5*a"),
        "exp(-a*a)*sin(b) + c": (
            lambda a, b, c: xp.exp(-a * a) * xp.sin(b) + c,
            3,
            "exp(-a*a)*sin(b) + c",
        ),
        "sum((a-b)**2)": (lambda a, b: xp.sum((a - b) ** 2), 2, "sum((a-b)**2)"),
        "a - mean(a)": (lambda a: a - xp.mean(a), 1, None),
    }
    # bytes each expression must move at least: its arrays read once (a - mean(a) reads a
    # twice) and its result written
    traffic = {"a*b + c*d - 2.5*a": 5, "exp(-a*a)*sin(b) + c": 4, "sum((a-b)**2)": 2}
    traffic["a - mean(a)"] = 3
    result = {"benchmark": "fusion_cpu", "dtype": "float64", "sizes": {}}
    rng = np.random.default_rng(0)
    for n in (opts.n, 10**4):
        arrays = [rng.standard_normal(n) for _ in range(4)]
        repeat = opts.repeat if n >= 10**6 else 200
        copy_s = best(np.copy, arrays[0], repeat=repeat)
        target = np.empty_like(arrays[0])
        copy2_s = best(two_thread_copy, arrays[0], target, repeat=repeat)
        copy2_new_s = best(lambda x: two_thread_copy(x, np.empty_like(x)), arrays[0], repeat=repeat)
        add_s = best(two_thread_add, arrays[0], arrays[1], target, repeat=repeat)
        dot_s = best(two_thread_dot, arrays[0], arrays[1], repeat=repeat)
        rows = {
            # what streaming kernels with ordinary loads and stores reach on this machine:
            # NumPy's add (read 2, write 1) and BLAS dot (read 2), each half on a thread
            "two_thread_add_GBps": 24 * n / add_s / 1e9,
            "two_thread_dot_read_GBps": 16 * n / dot_s / 1e9,
            "copy_GBps": 16 * n / copy_s / 1e9,
            # into an existing array (memcpy: non-temporal stores, no read of the target)
            "two_thread_copy_GBps": 16 * n / copy2_s / 1e9,
            # into a new array, as np.copy and every fused call that returns an array do
            "two_thread_copy_new_array_GBps": 16 * n / copy2_new_s / 1e9,
        }
        for name, (fn, k, ne_expr) in exprs.items():
            args = arrays[:k]
            fused = xp.fuse(fn)
            with xp.use_backend("numpy"):
                if n >= 10**6:
                    t_fuse, t_copy2 = best_interleaved(
                        lambda f=fused, a=args: f(*a),
                        lambda x=arrays[0], y=target: two_thread_copy(x, y),
                        repeat,
                    )
                else:
                    # small sizes: the copy's thread pool would disturb the call it alternates with
                    t_fuse, t_copy2 = best(fused, *args, repeat=repeat), copy2_s
                t_np = best(fn, *args, repeat=repeat)
            row = {"cunumpy_fuse_ms": t_fuse * 1e3, "numpy_ms": t_np * 1e3}
            row["cunumpy_fuse_GBps"] = traffic[name] * 8 * n / t_fuse / 1e9
            # the two-thread copy timed alternately with this expression
            row["two_thread_copy_GBps"] = 16 * n / t_copy2 / 1e9
            row["speedup_vs_numpy"] = t_np / t_fuse
            if numexpr is not None and ne_expr is not None:
                local = dict(zip("abcd", args, strict=False))
                t_ne = best(
                    lambda e=ne_expr, ld=local: numexpr.evaluate(e, local_dict=ld), repeat=repeat
                )
                row["numexpr_ms"] = t_ne * 1e3
                row["speedup_vs_numexpr"] = t_ne / t_fuse
            rows[name] = row
        # the copy reference again after the expressions; the run's best copy is the
        # strictest reference
        copy2_after_s = best(two_thread_copy, arrays[0], target, repeat=repeat)
        rows["two_thread_copy_GBps_before_after"] = [
            rows["two_thread_copy_GBps"],
            16 * n / copy2_after_s / 1e9,
        ]
        best_copy = max(
            rows["two_thread_copy_GBps_before_after"]
            + [rows[name]["two_thread_copy_GBps"] for name in exprs]
        )
        rows["two_thread_copy_GBps"] = best_copy
        for name in exprs:
            rate = rows[name]["cunumpy_fuse_GBps"]
            # against the copy timed alternately with it, and against the run's best copy
            rows[name]["ratio_vs_two_thread_copy"] = rate / rows[name]["two_thread_copy_GBps"]
            rows[name]["ratio_vs_best_two_thread_copy"] = rate / best_copy
            rows[name]["ratio_vs_two_thread_copy_new_array"] = (
                rate / rows["two_thread_copy_new_array_GBps"]
            )
        result["sizes"][str(n)] = rows
    result["index_expressions"] = index_expressions(xp, opts.n, opts.grid, opts.repeat)
    result["host_loops"] = host_loop_status()
    print(json.dumps(result, indent=2))
    return 0


def index_expressions(xp, n: int, grid: int, repeat: int) -> dict:
    """The indexing shapes on the CPU executor vs NumPy and numexpr (see the module docstring)."""
    try:
        import numexpr
    except ImportError:
        numexpr = None
    rng = np.random.default_rng(1)
    table = 1 << 22
    u, b = rng.standard_normal(n), rng.standard_normal(n)
    g = rng.standard_normal((grid, grid))
    a = rng.standard_normal(table)
    idx = rng.integers(0, table, n)
    tall = rng.standard_normal((n // 16, 16))
    cases = {
        "stencil_1d": (
            lambda u: u[2:] - 2.0 * u[1:-1] + u[:-2],
            (u,),
            8 * n + 8 * (n - 2),
            lambda: numexpr.evaluate(
                "p - 2.0 * q + r", local_dict={"p": u[2:], "q": u[1:-1], "r": u[:-2]}
            ),
        ),
        "laplacian_2d": (
            lambda u: u[1:-1, 2:] + u[1:-1, :-2] + u[2:, 1:-1] + u[:-2, 1:-1] - 4.0 * u[1:-1, 1:-1],
            (g,),
            8 * grid * grid + 8 * (grid - 2) ** 2,
            lambda: numexpr.evaluate(
                "e + w + s + n - 4.0 * c",
                local_dict={
                    "e": g[1:-1, 2:],
                    "w": g[1:-1, :-2],
                    "s": g[2:, 1:-1],
                    "n": g[:-2, 1:-1],
                    "c": g[1:-1, 1:-1],
                },
            ),
        ),
        "a[idx] * b": (
            lambda a, i, b: a[i] * b,
            (a, idx, b),
            8 * table + 3 * 8 * n,
            # numexpr cannot gather: NumPy's a[idx], then numexpr's product
            lambda: numexpr.evaluate("x * b", local_dict={"x": a[idx], "b": b}),
        ),
        "max(axis=1) - min(axis=1)": (
            lambda a: a.max(axis=1) - a.min(axis=1),
            (tall,),
            8 * n + 8 * (n // 16),
            None,  # numexpr reduces only as the last operation, one reduction per call
        ),
    }
    target = np.empty(n)
    reader = random_reader()
    rows = {}
    for name, (fn, args, nbytes, ne) in cases.items():
        fused = xp.fuse(fn)
        with xp.use_backend("numpy"):
            t_fuse, t_copy2 = best_interleaved(
                lambda f=fused, x=args: f(*x), lambda: two_thread_copy(u, target), repeat
            )
            t_np = best(fn, *args, repeat=repeat)
        copy_rate = 16 * n / t_copy2 / 1e9
        row = {
            "least_bytes_moved": nbytes,
            "cunumpy_fuse_ms": t_fuse * 1e3,
            "cunumpy_fuse_kernels": len(fused.plan(*args).kernels),
            "numpy_ms": t_np * 1e3,
            "cunumpy_fuse_GBps": nbytes / t_fuse / 1e9,
            "two_thread_copy_GBps": copy_rate,
            "ratio_vs_ceiling": nbytes / t_fuse / 1e9 / copy_rate,
            "speedup_vs_numpy": t_np / t_fuse,
        }
        if name == "max(axis=1) - min(axis=1)":
            # reading is most of what it does: a plain two-thread read of its input, timed
            # alternately with it (on this machine a read moves fewer bytes a second than a
            # copy counted as bytes read + written)
            with xp.use_backend("numpy"):
                t_fuse_r, t_read = best_interleaved(
                    lambda f=fused, x=args: f(*x), lambda x=args[0]: two_thread_sum(x), repeat
                )
            row["two_thread_read_of_input_ms"] = t_read * 1e3
            row["ratio_vs_two_thread_read_of_input"] = t_read / t_fuse_r
        if name == "a[idx] * b" and reader is not None:
            # the table is read at random places: bytes at the copy rate do not bound it. The
            # gather's ceiling: its streams (idx, b, the result) at the copy rate or its n
            # random table reads at the machine's random-read rate, whichever takes longer
            a = args[0]
            with xp.use_backend("numpy"):
                t_fuse_g, t_random = best_interleaved(
                    lambda f=fused, x=args: f(*x), lambda t=a: reader(t, n), repeat
                )
            t_ceiling = max(3 * 8 * n / (copy_rate * 1e9), t_random)
            row["random_reads_per_s"] = n / t_random
            row["random_read_ceiling_ms"] = t_ceiling * 1e3
            row["ratio_vs_random_read_ceiling"] = t_ceiling / t_fuse_g
        if numexpr is not None and ne is not None:
            t_ne = best(ne, repeat=repeat)
            row["numexpr_ms"] = t_ne * 1e3
            row["speedup_vs_numexpr"] = t_ne / t_fuse
        elif ne is not None:
            row["numexpr_ms"] = "numexpr is not installed"
        rows[name] = row
    return rows


if __name__ == "__main__":
    sys.exit(main())
