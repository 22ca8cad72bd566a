"""Fused expressions on the GPU (float64, 2^26 elements): cunumpy fuse vs CuPy eager, cupy.fuse,
torch.compile and jax.jit when importable. GB/s = bytes of inputs + outputs / best-of-20 time
(CUDA events around the whole call, host work included). Prints JSON with ratios against each
peer measured in this run and against the device's own rates, measured in the same run:

- copy rate: the faster of CuPy's ``x.copy()`` and a device-to-device ``cudaMemcpyAsync``
  (bytes read + written);
- read rate: a plain CUDA kernel that only reads (16-byte loads, four sums per thread);
- the two-read ceiling of ``a - mean(a)``: one pass at the read rate plus one at the copy rate.

The indexing shapes (``index_expressions``: a 1-D three-point stencil, a 2-D five-point
Laplacian on an 8192x8192 grid, a gather ``a[idx] * b``, ``a.max(axis=1) - a.min(axis=1)`` on
a tall matrix) report their memory-traffic ceiling: the least bytes the expression must move
(every input element read once, the result written once; for the gather, ``idx``, ``b`` and
the result streamed and the gathered table, 32 MiB so that it stays in the L2 cache, read
once) divided by the copy rate measured in this run. ``ratio_vs_ceiling`` is that ceiling's
time over the measured time (1.0: as fast as copying the bytes it must move). The gather's
row also times a plain CUDA kernel doing the same (``plain_cuda_gather``): what a hand-written
gather reaches on the device, against the ceiling and against the fused call, and a plain kernel
that only reads the table at random places (``random_reads_per_s``): the gather's random-read
ceiling (``ratio_vs_random_read_ceiling``) is the longer of its streams at the copy rate and its
table reads at that rate. Its L2-sector ceiling (``ratio_vs_l2_sector_ceiling``, the one its
target is judged by) counts the traffic where it is bounded, in the L2 cache: one 32-byte sector
for each table read and one for each 32 bytes streamed (``idx``, ``b``, the result), at the
rate the random-read kernel draws sectors from the L2 (Nsight Compute puts that kernel at 98.5%
of the L2's peak throughput and the gathers at 97%; ``scripts/gather_traffic.py``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys


def _written_with(module, name: str):
    """The benchmark expression `name` written with `module`'s functions (torch, jax.numpy):
    cupy.exp and friends cannot take their arrays."""
    return {
        "a*b + c*d - 2.5*a": lambda a, b, c, d: a * b + c * d - 2.5 * a,
        "exp(-a*a)*sin(b) + c": lambda a, b, c: module.exp(-a * a) * module.sin(b) + c,
        "sum((a-b)**2)": lambda a, b: module.sum((a - b) ** 2),
        "a - mean(a)": lambda a: a - module.mean(a),
    }[name]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="gpu")  # scripts/gpu-check passes it; ignored
    parser.add_argument("--n", type=int, default=1 << 26)
    parser.add_argument("--repeat", type=int, default=20)
    opts = parser.parse_args()
    try:
        import cupy
    except ImportError:
        print(json.dumps({"benchmark": "fusion", "skipped": "cupy is not installed"}))
        return 0
    import cunumpy as xp

    n, repeat = opts.n, opts.repeat
    rng = cupy.random.default_rng(0)
    a, b, c, d = (rng.standard_normal(n) for _ in range(4))

    def best(fn, *args):
        fn(*args)
        cupy.cuda.runtime.deviceSynchronize()
        start, stop = cupy.cuda.Event(), cupy.cuda.Event()
        times = []
        for _ in range(repeat):
            start.record()
            fn(*args)
            stop.record()
            stop.synchronize()
            times.append(cupy.cuda.get_elapsed_time(start, stop) / 1e3)
        return min(times)

    exprs = {
        "a*b + c*d - 2.5*a": (lambda a, b, c, d: a * b + c * d - 2.5 * a, (a, b, c, d), 5),
        "exp(-a*a)*sin(b) + c": (
            lambda a, b, c: xp.exp(-a * a) * xp.sin(b) + c,
            (a, b, c),
            4,
        ),
        "sum((a-b)**2)": (lambda a, b: xp.sum((a - b) ** 2), (a, b), 2),
        "a - mean(a)": (lambda a: a - xp.mean(a), (a,), 2),
    }
    eager = {
        "a*b + c*d - 2.5*a": lambda a, b, c, d: a * b + c * d - 2.5 * a,
        "exp(-a*a)*sin(b) + c": lambda a, b, c: cupy.exp(-a * a) * cupy.sin(b) + c,
        "sum((a-b)**2)": lambda a, b: cupy.sum((a - b) ** 2),
        "a - mean(a)": lambda a: a - cupy.mean(a),
    }
    # per-call costs first, in a process that has not loaded torch or jax (their threads and
    # hooks slow every later Python call)
    costs = call_costs(cupy, xp)
    out = cupy.empty_like(a)
    copy_s = min(
        best(lambda x: x.copy(), a),
        best(lambda: cupy.cuda.runtime.memcpyAsync(out.data.ptr, a.data.ptr, 8 * n, 3, 0)),
    )
    read_s = best(read_kernel(cupy, n), a)
    copy_rate, read_rate = 2 * 8 * n / copy_s / 1e9, 8 * n / read_s / 1e9
    result = {
        "benchmark": "fusion",
        "n": n,
        "dtype": "float64",
        "copy_GBps": copy_rate,
        "read_GBps": read_rate,
        # a - mean(a): read a once (the mean), then read a and write the result (2 arrays of
        # bytes counted, as for the fused call)
        "a_minus_mean_ceiling_GBps": 2 / (1 / read_rate + 2 / copy_rate),
        "expressions": {},
    }
    try:
        import torch

        torch_ok = torch.cuda.is_available()
    except ImportError:
        torch_ok = False
    try:
        import jax

        jax.config.update("jax_enable_x64", True)
        jax_ok = any(dv.platform == "gpu" for dv in jax.devices())
    except Exception:  # noqa: BLE001  (jax missing or without a GPU)
        jax_ok = False
    for name, (fn, args, arrays) in exprs.items():
        nbytes = arrays * 8 * n
        row = {}
        fused = xp.fuse(fn, kernel_name="bench")
        row["cunumpy_fuse"] = nbytes / best(fused, *args) / 1e9
        row["cupy_eager"] = nbytes / best(eager[name], *args) / 1e9
        try:
            cf = cupy.fuse(kernel_name="bench")(eager[name])
            row["cupy_fuse"] = nbytes / best(cf, *args) / 1e9
        except Exception as exc:  # noqa: BLE001  (cupy.fuse cannot fuse every expression)
            row["cupy_fuse"] = f"unsupported: {type(exc).__name__}"
        if torch_ok:
            tf = torch.compile(_written_with(torch, name))
            targs = [torch.as_tensor(x, device="cuda") for x in args]
            try:
                row["torch_compile"] = nbytes / best(tf, *targs) / 1e9
            except Exception as exc:  # noqa: BLE001
                row["torch_compile"] = f"failed: {type(exc).__name__}"
        if jax_ok:
            import jax.numpy as jnp

            jf = jax.jit(_written_with(jnp, name))
            jargs = [jnp.asarray(cupy.asnumpy(x)) for x in args]
            row["jax_jit"] = (
                nbytes / best(lambda *x, jf=jf: jf(*x).block_until_ready(), *jargs) / 1e9
            )
        ours = row["cunumpy_fuse"]
        row["ratio_vs_copy"] = ours / result["copy_GBps"]
        row["ratio_vs_read"] = ours / result["read_GBps"]
        if name == "a - mean(a)":
            row["ratio_vs_ceiling"] = ours / result["a_minus_mean_ceiling_GBps"]
        for peer in ("cupy_eager", "cupy_fuse", "torch_compile", "jax_jit"):
            if isinstance(row.get(peer), float):
                row[f"ratio_vs_{peer}"] = ours / row[peer]
        result["expressions"][name] = row
    result["index_expressions"] = index_expressions(
        cupy, xp, best, result["copy_GBps"], torch_ok, jax_ok
    )
    result["call_costs"] = costs
    print(json.dumps(result, indent=2))
    return 0


def _index_peers(module, name: str):
    """The indexing expression `name` written for `module` (cupy, torch, jax.numpy)."""
    if name == "max(axis=1) - min(axis=1)":
        if getattr(module, "__name__", "") == "torch":
            return lambda a: a.amax(dim=1) - a.amin(dim=1)
        return lambda a: a.max(axis=1) - a.min(axis=1)
    return {
        "stencil_1d": lambda u: u[2:] - 2.0 * u[1:-1] + u[:-2],
        "laplacian_2d": lambda u: (
            u[1:-1, 2:] + u[1:-1, :-2] + u[2:, 1:-1] + u[:-2, 1:-1] - 4.0 * u[1:-1, 1:-1]
        ),
        "a[idx] * b": lambda a, i, b: a[i] * b,
    }[name]


def _fused_with_tiles(xp, func, tiles: str, *args):
    """`func` fused and planned for `args` with CUNUMPY_FUSION_STENCIL_TILES set to `tiles`
    (the setting is read when a plan is made; the variable is restored after)."""
    previous = os.environ.get("CUNUMPY_FUSION_STENCIL_TILES")
    os.environ["CUNUMPY_FUSION_STENCIL_TILES"] = tiles
    try:
        fused = xp.fuse(func, kernel_name=f"bench_index_tiles{tiles}")
        fused.plan(*args)
        return fused
    finally:
        if previous is None:
            os.environ.pop("CUNUMPY_FUSION_STENCIL_TILES", None)
        else:
            os.environ["CUNUMPY_FUSION_STENCIL_TILES"] = previous


def index_cases(module, rng_normal, rng_index, n: int, grid: int):
    """(name, arguments, least bytes moved) of the indexing benchmarks on `module`'s arrays:
    the stencil over n points, the Laplacian over grid x grid, the gather of n points from a
    table of 2^22 (32 MiB), the row range of an (n/16) x 16 matrix."""
    table = 1 << 22
    u = rng_normal(n)
    g = rng_normal((grid, grid))
    a = rng_normal(table)
    idx = rng_index(table, n)
    b = rng_normal(n)
    tall = rng_normal((n // 16, 16))
    return [
        ("stencil_1d", (u,), 8 * n + 8 * (n - 2)),
        ("laplacian_2d", (g,), 8 * grid * grid + 8 * (grid - 2) ** 2),
        ("a[idx] * b", (a, idx, b), 8 * table + 3 * 8 * n),
        ("max(axis=1) - min(axis=1)", (tall,), 8 * n + 8 * (n // 16)),
    ]


def index_expressions(cupy, xp, best, copy_rate, torch_ok, jax_ok, n=1 << 26, grid=8192):
    """GB/s (least bytes moved / time) of the indexing shapes for cunumpy fuse and each peer,
    the memory-traffic ceiling and the ratios against both."""
    rng = cupy.random.default_rng(1)
    cases = index_cases(
        cupy,
        rng.standard_normal,
        lambda high, size: rng.integers(0, high, size, dtype=cupy.int64),
        n,
        grid,
    )
    rows = {}
    for name, args, nbytes in cases:
        eager = _index_peers(cupy, name)
        row = {"least_bytes_moved": nbytes, "ceiling_GBps": copy_rate}
        fused = xp.fuse(eager, kernel_name="bench_index")
        row["cunumpy_fuse"] = nbytes / best(fused, *args) / 1e9
        row["cunumpy_fuse_kernels"] = len(fused.plan(*args).kernels)
        if name == "laplacian_2d":
            # the stencil's mappings side by side (docs/internals/fusion.md, "Stencils: the
            # tiled mapping"): the flat one ("0") and the tiled one at several rows per lane
            row["cunumpy_fuse_by_stencil_tiles"] = {
                tiles: nbytes / best(_fused_with_tiles(xp, eager, tiles, *args), *args) / 1e9
                for tiles in ("0", "4", "8", "16")
            }
        row["cupy_eager"] = nbytes / best(eager, *args) / 1e9
        try:
            cf = cupy.fuse(kernel_name="bench_index")(eager)
            row["cupy_fuse"] = nbytes / best(cf, *args) / 1e9
        except Exception as exc:  # noqa: BLE001  (cupy.fuse does not index traced values)
            row["cupy_fuse"] = f"unsupported: {type(exc).__name__}"
        if torch_ok:
            import torch

            tf = torch.compile(_index_peers(torch, name))
            targs = [torch.as_tensor(x, device="cuda") for x in args]
            try:
                row["torch_compile"] = nbytes / best(tf, *targs) / 1e9
            except Exception as exc:  # noqa: BLE001
                row["torch_compile"] = f"failed: {type(exc).__name__}"
        if jax_ok:
            import jax
            import jax.numpy as jnp

            jf = jax.jit(_index_peers(jnp, name))
            jargs = [jnp.asarray(cupy.asnumpy(x)) for x in args]
            row["jax_jit"] = (
                nbytes / best(lambda *x, jf=jf: jf(*x).block_until_ready(), *jargs) / 1e9
            )
        if name == "a[idx] * b":
            # what a plain CUDA gather reaches on this device, for comparison with the ceiling
            # (each gathered 8-byte element costs the L2 a 32-byte sector)
            row["plain_cuda_gather"] = nbytes / best(gather_kernel(cupy), *args) / 1e9
            row["ratio_vs_plain_cuda_gather"] = row["cunumpy_fuse"] / row["plain_cuda_gather"]
            row["plain_cuda_gather_vs_ceiling"] = row["plain_cuda_gather"] / copy_rate
            # the table is read at random places, 32 bytes of L2 sector for each 8-byte
            # element: bytes at the copy rate do not bound it. The gather's random-read
            # ceiling: its streams (idx, b, the result) at the copy rate or its n table reads
            # at a plain random read's rate, whichever takes longer
            a, idx = args[0], args[1]
            t_fused = nbytes / (row["cunumpy_fuse"] * 1e9)
            t_plain = nbytes / (row["plain_cuda_gather"] * 1e9)
            t_random = best(random_read_kernel(cupy), a, idx.size)
            t_ceiling = max(3 * 8 * idx.size / (copy_rate * 1e9), t_random)
            row["random_reads_per_s"] = idx.size / t_random
            row["random_read_ceiling_ms"] = t_ceiling * 1e3
            row["ratio_vs_random_read_ceiling"] = t_ceiling / t_fused
            # what bounds it is the L2 cache (Nsight Compute: 97% of the L2's peak throughput
            # in the fused and the plain gather, 98.5% in the random reads, DRAM at 72% and
            # 15%): the gather's traffic in L2 sectors, one per table read and one per 32
            # bytes streamed, at the rate the random reads draw sectors (one a read)
            sectors = idx.size + 3 * 8 * idx.size / 32
            t_l2 = sectors * t_random / idx.size
            row["l2_sector_ceiling_ms"] = t_l2 * 1e3
            row["ratio_vs_l2_sector_ceiling"] = t_l2 / t_fused
            row["plain_cuda_gather_vs_l2_sector_ceiling"] = t_l2 / t_plain
        ours = row["cunumpy_fuse"]
        row["ratio_vs_ceiling"] = ours / copy_rate
        peers = [p for p in ("cupy_eager", "cupy_fuse", "torch_compile", "jax_jit")]
        for peer in peers:
            if isinstance(row.get(peer), float):
                row[f"ratio_vs_{peer}"] = ours / row[peer]
        rates = [row[p] for p in peers if isinstance(row.get(p), float)]
        if rates:
            row["ratio_vs_fastest_peer"] = ours / max(rates)
        rows[name] = row
        del args
    return rows


_READ = r"""
extern "C" __global__ void read_all(const double2* __restrict__ x, double* __restrict__ out,
                                    long long n2) {
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    const long long stride = (long long)blockDim.x * gridDim.x;
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    for (; i + 3 * stride < n2; i += 4 * stride) {
        const double2 a = x[i], b = x[i + stride], c = x[i + 2 * stride], d = x[i + 3 * stride];
        s0 += a.x + a.y; s1 += b.x + b.y; s2 += c.x + c.y; s3 += d.x + d.y;
    }
    for (; i < n2; i += stride) s0 += x[i].x + x[i].y;
    const double s = s0 + s1 + s2 + s3;
    if (s == 12345.678) out[0] = s;  // keeps the loads; never true for the benchmark's data
}
"""


def read_kernel(cupy, n):
    """A launcher of a read-only kernel over an even-length float64 array (the read rate)."""
    import numpy as np

    kernel = cupy.RawKernel(_READ, "read_all")
    sink = cupy.zeros(1)
    blocks = 32 * cupy.cuda.Device().attributes["MultiProcessorCount"]
    return lambda x: kernel((blocks,), (256,), (x, sink, np.int64(n // 2)))


_GATHER = r"""
extern "C" __global__ void gather_times(const double* __restrict__ a,
                                        const long long* __restrict__ idx,
                                        const double* __restrict__ b, double* __restrict__ out,
                                        long long table, long long n) {
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const long long j = idx[i];
    if (j < 0 || j >= table) __trap();  // as the fused kernel, an index out of range stops it
    out[i] = a[j] * b[i];
}
"""


def gather_kernel(cupy):
    """``out = a[idx] * b`` as a plain CUDA kernel (one element a thread, the launch shape that
    was fastest among the 2- to 8-element-a-thread and grid-stride variants tried on the H200,
    all within 3%): the rate a hand-written gather reaches."""
    import numpy as np

    kernel = cupy.RawKernel(_GATHER, "gather_times")

    def run(a, idx, b):
        out = cupy.empty(idx.size)
        n = idx.size
        kernel(((n + 255) // 256,), (256,), (a, idx, b, out, np.int64(a.size), np.int64(n)))
        return out

    return run


_RANDOM_READ = r"""
extern "C" __global__ void random_read(const double* __restrict__ a, double* __restrict__ sink,
                                       unsigned long long mask, long long n) {
    // n reads of a at pseudo-random places (a hash of the read's number): no index stream,
    // nothing written but a never-taken store that keeps the loads
    const long long stride = (long long)blockDim.x * gridDim.x;
    double s = 0;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        unsigned long long x = (unsigned long long)i * 0x9e3779b97f4a7c15ULL;
        x ^= x >> 31;
        s += a[(x >> 17) & mask];
    }
    if (s == 12345.678) sink[0] = s;
}
"""


def random_read_kernel(cupy):
    """``run(a, n)``: n reads of the table `a` (a power-of-two length) at random places, one a
    thread: the rate the device delivers reads at random places of that table (each one a
    32-byte L2 sector), which a gather's table reads cannot beat."""
    import numpy as np

    kernel = cupy.RawKernel(_RANDOM_READ, "random_read")
    sink = cupy.zeros(1)

    def run(a, n):
        kernel(((n + 255) // 256,), (256,), (a, sink, np.uint64(a.size - 1), np.int64(n)))

    return run


_TOUCH = r"""
extern "C" __global__ void touch(double* x, int n) {
    if (threadIdx.x == 0 && n < 0) x[0] = 1.0;
}
"""

_WARM_PROCESS = """
import sys, time
t0 = time.perf_counter()
import cunumpy as xp  # first: with CUNUMPY_FAKE_CUPY=1 it installs the emulated CuPy
import cupy
x = cupy.ones(1000)
cupy.cuda.runtime.deviceSynchronize()
t1 = time.perf_counter()
f = xp.fuse(lambda a, b: xp.sum(a * b - 2.5), kernel_name=sys.argv[1])
f(x, x)
cupy.cuda.runtime.deviceSynchronize()
t2 = time.perf_counter()
print(t2 - t1, t1 - t0)
"""


def call_costs(cupy, xp) -> dict:
    """First call of a new function (trace, plan, NVRTC compile, load, launch), the first call
    in a new process with a warm disk cache, and a cached call's host overhead (1-element
    arrays, µs per call, one sync at the end) against a 1-element CudaKernel launch."""
    import subprocess
    import time

    name = f"bench_first_{time.time_ns()}"  # a new kernel name: a source not in any cache
    x = cupy.ones(1000)
    # NVRTC and the driver are loaded once per process, not per function: load them first
    xp.fuse(lambda a: a + 1.0, kernel_name="bench_warm_up")(x)
    f = xp.fuse(lambda a, b: xp.sum(a * b - 2.5), kernel_name=name)
    cupy.cuda.runtime.deviceSynchronize()
    t = time.perf_counter()
    f(x, x)
    cupy.cuda.runtime.deviceSynchronize()
    first_s = time.perf_counter() - t
    proc = subprocess.run(
        [sys.executable, "-c", _WARM_PROCESS, name], capture_output=True, text=True, check=False
    )
    warm = proc.stdout.split() if proc.returncode == 0 else None

    def loop_us(fn, count=20000):
        fn()
        cupy.cuda.runtime.deviceSynchronize()
        t = time.perf_counter()
        for _ in range(count):
            fn()
        cupy.cuda.get_current_stream().synchronize()
        return (time.perf_counter() - t) / count * 1e6

    one = cupy.ones(1)
    out1 = cupy.empty(1)
    add = xp.fuse(lambda a: a * 2.0 + 1.0, kernel_name="bench_overhead")
    center = xp.fuse(lambda a: a - xp.mean(a), kernel_name="bench_overhead_ws")
    kernel = xp.kernels.CudaKernel(_TOUCH, "touch", block_size=1)
    n1 = cupy.int32(1)  # NumPy's int32
    loops = {
        "fused_elementwise_call_us": lambda: add(one),
        # the same call writing into a preallocated array: what fusion adds to a launch, with
        # CuPy's allocation of the result (cupy.ndarray, ~1.6-2 us) left out
        "fused_elementwise_out_call_us": lambda: add(one, out=out1),
        "cupy_allocation_us": lambda: cupy.ndarray((1,), one.dtype),
        "fused_two_kernel_call_us": lambda: center(one),
        "cuda_kernel_1_element_launch_us": lambda: kernel(one, 1, n_threads=1),
    }
    try:
        raw = cupy.RawKernel(_TOUCH, "touch")
        raw((1,), (1,), (one, n1))
        loops["cupy_raw_kernel_launch_us"] = lambda: raw((1,), (1,), (one, n1))
    except NotImplementedError as exc:  # the emulated CuPy compiles no RawKernel
        raw_unavailable = f"unavailable: {exc}"[:80]
    else:
        raw_unavailable = None
    # The loops run in rounds, one of each per round, on one core, and each keeps its best
    # round: host overheads drift over seconds, and the ratios below compare loops that
    # would otherwise be timed at different moments.
    if hasattr(os, "sched_setaffinity"):
        cores = os.sched_getaffinity(0)
        os.sched_setaffinity(0, {min(cores)})
    best = dict.fromkeys(loops, float("inf"))
    try:
        for _ in range(5):
            for key, fn in loops.items():
                best[key] = min(best[key], loop_us(fn))
    finally:
        if hasattr(os, "sched_setaffinity"):
            os.sched_setaffinity(0, cores)
    costs = {
        "first_call_new_function_s": first_s,
        "first_call_new_process_warm_cache_s": float(warm[0]) if warm else proc.stderr[-500:],
        "new_process_import_s": float(warm[1]) if warm else None,
        **best,
    }
    if raw_unavailable is not None:
        costs["cupy_raw_kernel_launch_us"] = raw_unavailable
    costs["fused_overhead_vs_cuda_kernel"] = (
        costs["fused_elementwise_call_us"] / costs["cuda_kernel_1_element_launch_us"]
    )
    costs["fused_out_overhead_vs_cuda_kernel"] = (
        costs["fused_elementwise_out_call_us"] / costs["cuda_kernel_1_element_launch_us"]
    )
    return costs


if __name__ == "__main__":
    sys.exit(main())
