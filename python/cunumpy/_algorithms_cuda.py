"""The CUDA kernels behind ``xp.algorithms`` on a GPU, launched through ``CudaKernel``.

Each replaces a composition of several CuPy calls (and host synchronizations) by one kernel
where that is faster: Morton keys in one pass, segment sums with atomics and an in-kernel key
check, cell offsets in O(n + n_cells) instead of a binary search per cell, run boundaries and
compaction scattered straight from one CUB scan, with a single read-back after all the work is
queued. The emulated device runs the NumPy-style path unless a test turns the kernels on
(:func:`use_kernels_on_fake`), which runs them in the CPU emulator.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from types import ModuleType
from typing import Any

import numpy as np

SOURCE = r"""
#include <cunumpy/index.cuh>
#include <cunumpy/reduce.cuh>
#include <cunumpy/morton.cuh>

// a / b for a, b >= 0: 32-bit division when both fit (a 64-bit one costs several times more)
__device__ __forceinline__ long long cunumpy_alg_div(long long a, long long b) {
  if (((unsigned long long)a | (unsigned long long)b) >> 32 == 0ull) {
    return (long long)((unsigned int)a / (unsigned int)b);
  }
  return a / b;
}

extern "C" __global__ void cunumpy_alg_morton_keys2(const double* pos, unsigned long long* key,
    long long n, double x0, double y0, double sx, double sy, int levels) {
  CUNUMPY_GRID_STRIDE_1D(i, n) {
    key[i] = cunumpy_morton_key2(pos[2 * i], pos[2 * i + 1], x0, y0, sx, sy, levels);
  }
}

extern "C" __global__ void cunumpy_alg_morton_keys3(const double* pos, unsigned long long* key,
    long long n, double x0, double y0, double z0, double sx, double sy, double sz, int levels) {
  CUNUMPY_GRID_STRIDE_1D(i, n) {
    key[i] = cunumpy_morton_key3(pos[3 * i], pos[3 * i + 1], pos[3 * i + 2], x0, y0, z0, sx, sy,
                                 sz, levels);
  }
}

template <typename T>
__device__ void segment_sum(const T* values, const long long* keys, T* out, long long n,
                            long long width, long long n_segments, int* bad) {
  CUNUMPY_GRID_STRIDE_1D(t, n * width) {
    const long long i = width == 1 ? t : cunumpy_alg_div(t, width);
    const long long k = keys[i];
    if (k >= n_segments) *bad = 1;
    const long long target = (k >= 0 && k < n_segments) ? k * width + (t - i * width) : -1;
    // lanes with the same target (sorted keys: often the whole warp) add up first, so each
    // distinct target takes one atomic per warp instead of one per lane
    const unsigned int same = __match_any_sync(__activemask(), target);
    T v = values[t];
    if (__popc(same) > 1) v = cunumpy_warp_sum(v, same);
    if (target >= 0 && (cunumpy_block_thread() & 31u) == (unsigned int)(__ffs((int)same) - 1)) {
      cunumpy_atomic_add(out + target, v);
    }
  }
}

extern "C" __global__ void cunumpy_alg_segment_sum_f64(const double* values,
    const long long* keys, double* out, long long n, long long width, long long n_segments,
    int* bad) {
  segment_sum(values, keys, out, n, width, n_segments, bad);
}

extern "C" __global__ void cunumpy_alg_segment_sum_f32(const float* values,
    const long long* keys, float* out, long long n, long long width, long long n_segments,
    int* bad) {
  segment_sum(values, keys, out, n, width, n_segments, bad);
}

// offsets[k] = the first i with cells[i] >= k; thread i (0..n) writes the cells in
// (cells[i-1], cells[i]], so every offset is written once
extern "C" __global__ void cunumpy_alg_cell_offsets(const long long* cells, long long* offsets,
    long long n, long long n_cells, int* bad) {
  CUNUMPY_GRID_STRIDE_1D(i, n + 1) {
    const long long prev = i == 0 ? -1 : cells[i - 1];
    const long long cur = i == n ? n_cells : cells[i];
    if (i < n && (cur < 0 || cur >= n_cells || (i > 0 && prev > cur))) *bad = 1;
    const long long lo = prev + 1 < 0 ? 0 : prev + 1;
    const long long hi = cur > n_cells ? n_cells : cur;
    for (long long k = lo; k <= hi; ++k) offsets[k] = i;
  }
}

// without the check: one binary search per cell (lower bound of k), O(n_cells log n) reads
extern "C" __global__ void cunumpy_alg_cell_offsets_search(const long long* cells,
    long long* offsets, long long n, long long n_cells) {
  CUNUMPY_GRID_STRIDE_1D(k, n_cells + 1) {
    long long lo = 0, hi = n;
    while (lo < hi) {
      const long long mid = lo + (hi - lo) / 2;
      if (cells[mid] < k) lo = mid + 1; else hi = mid;
    }
    offsets[k] = lo;
  }
}

template <typename K>
__device__ void run_starts(const K* keys, unsigned char* first, long long n, int* bad) {
  CUNUMPY_GRID_STRIDE_1D(i, n) {
    const bool start = i == 0 || keys[i] != keys[i - 1];
    if (i > 0 && keys[i] < keys[i - 1]) *bad = 1;
    first[i] = start ? 1 : 0;
  }
}

extern "C" __global__ void cunumpy_alg_run_starts_i64(const long long* keys, unsigned char* first,
                                                      long long n, int* bad) {
  run_starts(keys, first, n, bad);
}

extern "C" __global__ void cunumpy_alg_run_starts_u64(const unsigned long long* keys,
    unsigned char* first,
                                                      long long n, int* bad) {
  run_starts(keys, first, n, bad);
}

// rank[i] = inclusive count of run starts up to i: run r = rank - 1 starts at i
extern "C" __global__ void cunumpy_alg_run_bounds(const unsigned char* first, const int* rank,
    long long* starts, long long* stops, long long n) {
  CUNUMPY_GRID_STRIDE_1D(i, n) {
    if (first[i]) {
      const long long r = rank[i] - 1;
      starts[r] = i;
      if (r > 0) stops[r - 1] = i;
    }
    if (i == n - 1) stops[rank[i] - 1] = n;
  }
}

// compaction of an array seen as (outer, n, inner) words: entry i moves to rank[i] - 1
template <typename W>
__device__ void scatter_kept(const W* src, W* dst, const bool* mask, const int* rank,
                             long long outer, long long n, long long inner) {
  CUNUMPY_GRID_STRIDE_1D(t, outer * n * inner) {
    const long long row = inner == 1 ? t : cunumpy_alg_div(t, inner);
    const long long w = t - row * inner;
    const long long i = outer == 1 ? row : row - cunumpy_alg_div(row, n) * n;
    if (mask[i]) dst[((row - i) + rank[i] - 1) * inner + w] = src[t];
  }
}

template <typename W>
__device__ void copy_kept(const W* src, W* dst, const int* rank, long long outer, long long n,
                          long long inner) {
  const long long kept = n > 0 ? rank[n - 1] : 0;
  CUNUMPY_GRID_STRIDE_1D(t, outer * n * inner) {
    const long long row = inner == 1 ? t : cunumpy_alg_div(t, inner);
    const long long i = outer == 1 ? row : row - cunumpy_alg_div(row, n) * n;
    if (i < kept) dst[t] = src[t];
  }
}

"""

# the compaction kernels for each word size, spelled out so the signature parser sees them
SOURCE += "".join(
    f"""
extern "C" __global__ void cunumpy_alg_scatter_kept_{suffix}(const {word}* src, {word}* dst,
    const bool* mask, const int* rank, long long outer, long long n, long long inner) {{
  scatter_kept(src, dst, mask, rank, outer, n, inner);
}}

extern "C" __global__ void cunumpy_alg_copy_kept_{suffix}(const {word}* src, {word}* dst,
    const int* rank, long long outer, long long n, long long inner) {{
  copy_kept(src, dst, rank, outer, n, inner);
}}
"""
    for suffix, word in (
        ("u64", "unsigned long long"),
        ("u32", "unsigned int"),
        ("u8", "unsigned char"),
    )
)

_KERNELS: dict[str, Any] = {}
_ON_FAKE = False


def kernels_enabled(cupy: ModuleType) -> bool:
    """The kernels run on a real CuPy, and on the fake only inside :func:`use_kernels_on_fake`."""
    return _ON_FAKE or not getattr(cupy, "__cunumpy_fake__", False)


@contextlib.contextmanager
def use_kernels_on_fake() -> Iterator[None]:
    """Run the CUDA kernels in the emulator on the fake CuPy (tests of the kernels themselves)."""
    global _ON_FAKE
    previous, _ON_FAKE = _ON_FAKE, True
    try:
        yield
    finally:
        _ON_FAKE = previous


def _kernel(name: str) -> Any:
    kernel = _KERNELS.get(name)
    if kernel is None:
        from .kernels import CudaKernel  # the kernel layer imports lazily: no cycle at import

        kernel = CudaKernel(SOURCE, f"cunumpy_alg_{name}", block_size=256)
        _KERNELS[name] = kernel
    return kernel


def _launch(name: str, total: int, *args: Any) -> None:
    if total > 0:
        # grid-stride loops: a grid past a few waves of the GPU gains nothing
        _kernel(name)(*args, n_threads=min(total, 1 << 22))


def morton_keys(
    mod: ModuleType, pos: Any, lower: np.ndarray, scales: np.ndarray, levels: int
) -> Any:
    pos = mod.ascontiguousarray(pos, dtype=mod.float64)
    n = pos.shape[0]
    key = mod.empty(n, dtype=mod.uint64)
    if pos.shape[1] == 2:
        _launch("morton_keys2", n, pos, key, n, *map(float, lower), *map(float, scales), levels)
    else:
        _launch("morton_keys3", n, pos, key, n, *map(float, lower), *map(float, scales), levels)
    return key


def segment_sum(
    mod: ModuleType, values: Any, keys: Any, n_seg: int, out: Any, dtype: Any, checked: bool = False
) -> Any:
    from .exceptions import AlgorithmValueError

    keys = mod.ascontiguousarray(keys, dtype=mod.int64)
    values = mod.ascontiguousarray(values, dtype=dtype)
    shape = (n_seg, *values.shape[1:])
    if out is None:
        out = mod.zeros(shape, dtype=dtype)
    else:
        out.fill(0)
    n = keys.shape[0]
    width = int(np.prod(values.shape[1:], dtype=np.int64))
    bad = mod.zeros(1, dtype=mod.int32)
    suffix = "f64" if np.dtype(dtype) == np.float64 else "f32"
    _launch(f"segment_sum_{suffix}", n * width, values, keys, out, n, width, n_seg, bad)
    if checked and int(bad[0]):
        raise AlgorithmValueError(
            f"cunumpy.algorithms.segment_sum: keys must be smaller than n_segments={n_seg}"
        )
    return out


def cell_offsets(mod: ModuleType, cells: Any, n_cells: int, check: bool) -> tuple[Any, bool]:
    cells = mod.ascontiguousarray(cells, dtype=mod.int64)
    n = cells.shape[0]
    offsets = mod.empty(n_cells + 1, dtype=mod.int64)
    if not check:
        _launch("cell_offsets_search", n_cells + 1, cells, offsets, n, n_cells)
        return offsets, False
    bad = mod.zeros(1, dtype=mod.int32)
    _launch("cell_offsets", n + 1, cells, offsets, n, n_cells, bad)
    return offsets, bool(int(bad[0]))


def segment_boundaries(mod: ModuleType, keys: Any) -> tuple[Any, Any, Any] | None:
    n = keys.shape[0]
    if n == 0:
        empty = mod.zeros(0, dtype=mod.int64)
        return keys[:0].copy(), empty, empty.copy()
    typed = mod.ascontiguousarray(
        keys if keys.dtype == np.uint64 else keys.astype(mod.int64, copy=False)
    )
    first = mod.empty(n, dtype=mod.uint8)  # one byte per key: the scan reads little
    bad = mod.zeros(1, dtype=mod.int32)
    suffix = "u64" if typed.dtype == np.uint64 else "i64"
    _launch(f"run_starts_{suffix}", n, typed, first, n, bad)
    rank = mod.cumsum(first, dtype=mod.int32)
    runs, failed = mod.stack([rank[-1], bad[0]]).tolist()  # the one synchronization
    if failed:
        return None
    starts = mod.empty(runs, dtype=mod.int64)
    stops = mod.empty(runs, dtype=mod.int64)
    _launch("run_bounds", n, first, rank, starts, stops, n)
    return keys[starts], starts, stops


def _words(a: Any, axis: int) -> tuple[str, Any, int, int] | None:
    """`a` as a flat array of 8-, 4- or 1-byte words with (outer, inner) extents around `axis`,
    or None when it is not C-contiguous."""
    if not a.flags.c_contiguous:
        return None
    ax = axis % a.ndim
    outer = int(np.prod(a.shape[:ax], dtype=np.int64))
    inner_bytes = int(np.prod(a.shape[ax + 1 :], dtype=np.int64)) * a.itemsize
    flat = a.reshape(-1).view(np.uint8)
    for size, suffix, dtype in ((8, "u64", np.uint64), (4, "u32", np.uint32), (1, "u8", np.uint8)):
        if inner_bytes % size == 0 and a.data.ptr % size == 0:
            return suffix, flat.view(dtype), outer, inner_bytes // size
    return None  # pragma: no cover - 1-byte words always fit


def compact_by_mask(mod: ModuleType, mask: Any, arrays: Sequence[Any], axis: int) -> int:
    n = mask.shape[0]
    if n == 0:
        return 0
    mask = mod.ascontiguousarray(mask)
    rank = mod.cumsum(mask, dtype=mod.int32)
    generic = []
    for a in arrays:
        words = _words(a, axis) if a.size else None
        if words is None:
            generic.append(a)
            continue
        suffix, flat, outer, inner = words
        scratch = mod.empty_like(flat)
        _launch(f"scatter_kept_{suffix}", flat.size, flat, scratch, mask, rank, outer, n, inner)
        _launch(f"copy_kept_{suffix}", flat.size, scratch, flat, rank, outer, n, inner)
    kept = int(rank[-1])  # the one synchronization, after every copy is queued
    if generic:
        index = mod.flatnonzero(mask)
        for a in generic:
            ax = axis % a.ndim
            a[(slice(None),) * ax + (slice(0, kept),)] = mod.take(a, index, axis=ax)
    return kept
