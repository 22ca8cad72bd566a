"""Building blocks of particle codes: Morton keys, sorting by cell, segment sums, compaction.

Every function works on NumPy arrays, on the emulated device and on CuPy arrays, and returns
its arrays on the backend of its input. On a real GPU the hot ones run as cunumpy CUDA kernels
(:mod:`cunumpy.algorithms` keeps them in ``_algorithms_cuda``): ``morton_keys``,
``segment_sum``/``SegmentPlan.sum`` (atomics), ``cell_offsets``, ``segment_boundaries`` and
``compact_by_mask`` (one scan shared by every array), and ``sort_by_key`` sorts the narrowest
unsigned key that holds the key range. Their device twins for kernels are the shipped headers
``cunumpy/morton.cuh`` and ``cunumpy/scan.cuh``.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from types import ModuleType
from typing import Any

import numpy as np

from . import _algorithms_cuda as _gpu
from ._conversions import is_cupy_array
from .exceptions import AlgorithmTypeError, AlgorithmValueError, MixedBackendError

__all__ = [
    "MAX_MORTON_LEVELS",
    "SegmentPlan",
    "cell_offsets",
    "compact_by_mask",
    "morton_decode",
    "morton_encode",
    "morton_keys",
    "morton_scales",
    "segment_boundaries",
    "segment_sum",
    "sort_by_key",
]

#: Bits per axis a 64-bit Morton key can hold, by dimension.
MAX_MORTON_LEVELS: dict[int, int] = {2: 32, 3: 21}

# NumPy sorts 16-bit integers with a radix sort; above this size, wider integer keys are sorted
# by 16-bit digits (LSD), which beats NumPy's stable sort of 64-bit integers.
_RADIX_MIN_SIZE = 4096


def _module(a: Any) -> ModuleType:
    """NumPy or the ``cupy`` module (real or fake) that `a` belongs to."""
    return sys.modules["cupy"] if is_cupy_array(a) else np


def _kernels(a: Any) -> bool:
    """Whether `a` is on a real GPU (or the emulator when a test asks), where the CUDA
    kernels run."""
    return is_cupy_array(a) and _gpu.kernels_enabled(sys.modules["cupy"])


def _same_backend(where: str, first: Any, *others: Any) -> None:
    side = is_cupy_array(first)
    for other in others:
        if is_cupy_array(other) != side:
            raise MixedBackendError(
                f"cunumpy.algorithms.{where}: every array must be on the backend of the first "
                f"({'cupy' if side else 'numpy'}), got a {type(other).__module__} array"
            )


def _host_read(mod: ModuleType, *values: Any) -> list[Any]:
    """Small device values read back together (one synchronization)."""
    if mod is np:
        return [v.item() if hasattr(v, "item") else v for v in values]
    return mod.stack([mod.asarray(v, dtype=mod.int64) for v in values]).tolist()


def _integer_keys(where: str, name: str, keys: Any) -> Any:
    if keys.ndim != 1:
        raise AlgorithmValueError(
            f"cunumpy.algorithms.{where}: {name} must be 1D, got shape {tuple(keys.shape)}"
        )
    if keys.dtype.kind not in "iu":
        raise AlgorithmTypeError(
            f"cunumpy.algorithms.{where}: {name} must have an integer dtype, got {keys.dtype}"
        )
    return keys


def _along(where: str, arrays: Sequence[Any], n: int, axis: int) -> None:
    for i, a in enumerate(arrays):
        if a.ndim == 0 or not -a.ndim <= axis < a.ndim or a.shape[axis] != n:
            raise AlgorithmValueError(
                f"cunumpy.algorithms.{where}: array {i} must have {n} entries along axis "
                f"{axis}, got shape {tuple(a.shape)}"
            )


# -- Morton keys ------------------------------------------------------------------------------


def _ndim_and_levels(where: str, ndim: int, levels: Any) -> int:
    if ndim not in MAX_MORTON_LEVELS:
        raise AlgorithmValueError(
            f"cunumpy.algorithms.{where}: Morton keys have 2 or 3 axes, got {ndim}"
        )
    if isinstance(levels, bool) or not isinstance(levels, int | np.integer):
        raise AlgorithmTypeError(
            f"cunumpy.algorithms.{where}: levels must be an int, got {type(levels).__name__}"
        )
    if not 1 <= int(levels) <= MAX_MORTON_LEVELS[ndim]:
        raise AlgorithmValueError(
            f"cunumpy.algorithms.{where}: levels must be 1 to {MAX_MORTON_LEVELS[ndim]} in "
            f"{ndim}D, got {levels}"
        )
    return int(levels)


def morton_scales(lower: Sequence[float], upper: Sequence[float], levels: int) -> np.ndarray:
    """Return the cells per unit length of every axis, ``2**levels / (upper - lower)``.

    Pass them with `lower` to ``cunumpy_morton_key2``/``cunumpy_morton_key3``
    (``cunumpy/morton.cuh``) and a kernel computes the keys of :func:`morton_keys`, bit for bit.

    Parameters
    ----------
    lower, upper : sequence of float
        Corners of the box, one value per axis (2 or 3).
    levels : int
        Bits per axis: 1 to 32 in 2D, 1 to 21 in 3D.

    Returns
    -------
    numpy.ndarray of float64
        One scale per axis, always on the host.

    Raises
    ------
    AlgorithmValueError
        If the corners differ in length, have 2 or 3 entries, are equal on an axis, or if
        `levels` is out of range.

    Examples
    --------
    >>> xp.algorithms.morton_scales([0.0, 0.0], [1.0, 2.0], 4)
    array([16.,  8.])
    """
    lo = np.asarray(lower, dtype=np.float64)
    hi = np.asarray(upper, dtype=np.float64)
    if lo.ndim != 1 or lo.shape != hi.shape:
        raise AlgorithmValueError(
            "cunumpy.algorithms.morton_scales: lower and upper must be sequences of the same "
            f"length, got shapes {lo.shape} and {hi.shape}"
        )
    levels = _ndim_and_levels("morton_scales", lo.size, levels)
    if np.any(lo == hi) or not np.all(np.isfinite(lo) & np.isfinite(hi)):
        raise AlgorithmValueError(
            "cunumpy.algorithms.morton_scales: the box must be finite and have a nonzero "
            f"extent on every axis, got lower={lo.tolist()} upper={hi.tolist()}"
        )
    return np.float64(2.0**levels) / (hi - lo)


def _spread(mod: ModuleType, v: Any, ndim: int) -> Any:
    """The bits of `v` (uint64) moved to every `ndim`-th bit, as in ``cunumpy/morton.cuh``."""
    u = mod.uint64
    steps = (
        [(16, 0x0000FFFF0000FFFF), (8, 0x00FF00FF00FF00FF), (4, 0x0F0F0F0F0F0F0F0F),
         (2, 0x3333333333333333), (1, 0x5555555555555555)]
        if ndim == 2
        else [(32, 0x001F00000000FFFF), (16, 0x001F0000FF0000FF), (8, 0x100F00F00F00F00F),
              (4, 0x10C30C30C30C30C3), (2, 0x1249249249249249)]
    )  # fmt: skip
    v = v & u(0xFFFFFFFF if ndim == 2 else 0x1FFFFF)
    for shift, mask in steps:
        v = (v | (v << u(shift))) & u(mask)
    return v


def _compact(mod: ModuleType, v: Any, ndim: int) -> Any:
    u = mod.uint64
    if ndim == 2:
        masks = [0x5555555555555555, 0x3333333333333333, 0x0F0F0F0F0F0F0F0F,
                 0x00FF00FF00FF00FF, 0x0000FFFF0000FFFF, 0x00000000FFFFFFFF]  # fmt: skip
        shifts = [1, 2, 4, 8, 16]
    else:
        masks = [0x1249249249249249, 0x10C30C30C30C30C3, 0x100F00F00F00F00F,
                 0x001F0000FF0000FF, 0x001F00000000FFFF, 0x1FFFFF]  # fmt: skip
        shifts = [2, 4, 8, 16, 32]
    v = v & u(masks[0])
    for shift, mask in zip(shifts, masks[1:], strict=True):
        v = (v | (v >> u(shift))) & u(mask)
    return v


def morton_encode(*cells: Any) -> Any:
    """Interleave the integer cell coordinates of every point into a uint64 Morton key.

    Parameters
    ----------
    *cells : array of int
        One array per axis (2 or 3), broadcast against each other; non-negative and below
        ``2**32`` (2D) or ``2**21`` (3D).

    Returns
    -------
    array of uint64
        The keys, bit ``ndim * b + a`` holding bit ``b`` of axis ``a``, on the backend of
        `cells`.

    Raises
    ------
    AlgorithmValueError
        If there are not 2 or 3 arrays, or a coordinate is negative or too large (checked: one
        synchronization on CuPy).
    AlgorithmTypeError
        If a coordinate array is not of an integer dtype.

    Examples
    --------
    >>> xp.algorithms.morton_encode(xp.asarray([1, 0, 3]), xp.asarray([0, 1, 3]))
    array([ 1,  2, 15], dtype=uint64)
    """
    ndim = len(cells)
    _ndim_and_levels("morton_encode", ndim, 1)
    mod = _module(cells[0])
    _same_backend("morton_encode", *cells)
    arrays = [mod.asarray(c) for c in cells]
    for a in arrays:
        if a.dtype.kind not in "iu":
            raise AlgorithmTypeError(
                f"cunumpy.algorithms.morton_encode: cell coordinates must be integers, got "
                f"{a.dtype}"
            )
    limit = 1 << MAX_MORTON_LEVELS[ndim]
    bad = [mod.any(a < 0) | mod.any(a >= limit) for a in arrays if a.size]
    if bad and any(_host_read(mod, *bad)):
        raise AlgorithmValueError(
            f"cunumpy.algorithms.morton_encode: cell coordinates must be in [0, 2**"
            f"{MAX_MORTON_LEVELS[ndim]}) in {ndim}D"
        )
    key = None
    for axis, a in enumerate(arrays):
        part = _spread(mod, a.astype(mod.uint64), ndim) << mod.uint64(axis)
        key = part if key is None else key | part
    return key


def morton_decode(keys: Any, ndim: int) -> tuple[Any, ...]:
    """Return the integer cell coordinates of Morton keys, the inverse of :func:`morton_encode`.

    Parameters
    ----------
    keys : array of uint64
        Morton keys.
    ndim : int
        Number of axes, 2 or 3.

    Returns
    -------
    tuple of arrays of uint64
        One array per axis, shaped like `keys`, on its backend.

    Raises
    ------
    AlgorithmValueError
        If `ndim` is not 2 or 3.

    Examples
    --------
    >>> xp.algorithms.morton_decode(xp.asarray([1, 2, 15], dtype=xp.uint64), 2)
    (array([1, 0, 3], dtype=uint64), array([0, 1, 3], dtype=uint64))
    """
    _ndim_and_levels("morton_decode", ndim, 1)
    mod = _module(keys)
    k = mod.asarray(keys)
    if k.dtype.kind not in "iu":
        raise AlgorithmTypeError(
            f"cunumpy.algorithms.morton_decode: keys must be integers, got {k.dtype}"
        )
    k = k.astype(mod.uint64)
    return tuple(_compact(mod, k >> mod.uint64(axis), ndim) for axis in range(ndim))


def morton_keys(positions: Any, lower: Sequence[float], upper: Sequence[float], levels: int) -> Any:
    """Return the Morton keys of points in the box ``[lower, upper]``.

    The cell of a point along an axis is ``floor((x - lower) * scale)`` with the
    :func:`morton_scales`, clipped to ``[0, 2**levels - 1]``: points on or outside the box get
    the cell at the nearest face, a point on a cell boundary belongs to the upper cell, and
    ``lower > upper`` on an axis reverses that axis. On a GPU one kernel computes the keys
    (``cunumpy_morton_key2``/``3`` of ``cunumpy/morton.cuh``), bit-identical to the host.

    Parameters
    ----------
    positions : array of float, shape (n, ndim)
        The points, ``ndim`` 2 or 3; must be finite.
    lower, upper : sequence of float
        Corners of the box, one value per axis.
    levels : int
        Bits per axis: 1 to 32 in 2D, 1 to 21 in 3D.

    Returns
    -------
    array of uint64, shape (n,)
        The keys, on the backend of `positions`.

    Raises
    ------
    AlgorithmValueError
        If the shapes do not match or `levels` is out of range.

    Examples
    --------
    >>> positions = xp.asarray([[0.1, 0.1], [0.9, 0.1], [0.9, 0.9]])
    >>> xp.algorithms.morton_keys(positions, [0.0, 0.0], [1.0, 1.0], levels=2)
    array([ 0,  5, 15], dtype=uint64)
    """
    scales = morton_scales(lower, upper, levels)
    ndim = scales.size
    lo = np.asarray(lower, dtype=np.float64)
    mod = _module(positions)
    pos = mod.asarray(positions)
    if pos.ndim != 2 or pos.shape[1] != ndim:
        raise AlgorithmValueError(
            f"cunumpy.algorithms.morton_keys: positions must have shape (n, {ndim}) for a "
            f"{ndim}D box, got {tuple(pos.shape)}"
        )
    if pos.dtype.kind != "f":
        raise AlgorithmTypeError(
            f"cunumpy.algorithms.morton_keys: positions must be floating point, got {pos.dtype}"
        )
    if _kernels(pos):
        return _gpu.morton_keys(mod, pos, lo, scales, int(levels))
    top = float(2**levels - 1)
    key = None
    for axis in range(ndim):
        t = (pos[:, axis].astype(mod.float64) - lo[axis]) * scales[axis]
        cell = mod.clip(mod.floor(t), 0.0, top).astype(mod.uint64)
        part = _spread(mod, cell, ndim) << mod.uint64(axis)
        key = part if key is None else key | part
    return key


# -- sorting ----------------------------------------------------------------------------------


def _narrow_keys(mod: ModuleType, keys: Any, widest: int) -> Any | None:
    """``keys - min`` in the narrowest unsigned dtype of at most `widest` bits that holds the
    key range, or None when none does (one synchronization on CuPy)."""
    kmin, kmax = _host_read(mod, mod.min(keys), mod.max(keys))
    if keys.dtype == np.uint64:  # read back through int64 on CuPy: undo the wrap-around
        kmin, kmax = kmin % 2**64, kmax % 2**64
    span = int(kmax) - int(kmin)
    for dtype in (np.uint8, np.uint16, np.uint32):
        bits = 8 * np.dtype(dtype).itemsize
        if bits <= widest and span < 2**bits:
            return (keys - keys.dtype.type(kmin)).astype(dtype)
    return None


def _radix_argsort(keys: np.ndarray) -> np.ndarray:
    """Stable argsort of integer keys by 16-bit digits, lowest first (NumPy sorts uint16 keys
    with a radix sort)."""
    kmin, kmax = int(keys.min()), int(keys.max())
    if keys.dtype.kind == "i":
        u = (keys.astype(np.int64) - np.int64(kmin)).view(np.uint64)  # wraps to the offset
    else:
        u = keys.astype(np.uint64) - np.uint64(kmin)
    span = kmax - kmin
    order = np.arange(keys.size, dtype=np.int64)
    shift = 0
    while shift == 0 or span >> shift:
        digit = ((u[order] >> np.uint64(shift)) & np.uint64(0xFFFF)).astype(np.uint16)
        order = order[np.argsort(digit, kind="stable")]
        shift += 16
    return order


def _argsort(mod: ModuleType, keys: Any) -> Any:
    if keys.dtype.kind not in "iu" or keys.size <= 1:
        return mod.argsort(keys, kind="stable").astype(mod.int64, copy=False)
    if mod is np:
        if keys.size <= _RADIX_MIN_SIZE:
            return np.argsort(keys, kind="stable").astype(np.int64)
        narrow = _narrow_keys(np, keys, 16)
        if narrow is not None:
            return np.argsort(narrow, kind="stable").astype(np.int64)
        return _radix_argsort(keys)
    narrow = _narrow_keys(mod, keys, 32)
    return mod.argsort(keys if narrow is None else narrow, kind="stable").astype(
        mod.int64, copy=False
    )


def sort_by_key(keys: Any, *arrays: Any, axis: int = 0) -> tuple[Any, ...]:
    """Sort `keys` and reorder every array the same way, with one stable argsort.

    The usual first step of a particle code: sort the particles by cell index or Morton key
    (:func:`morton_keys`), then work on contiguous ranges. Equal keys keep their order, so the
    result is reproducible. Integer keys are sorted as ``keys - keys.min()`` in the narrowest
    unsigned type that holds their range (radix sorts of 8, 16 or 32 bits instead of 64, on
    NumPy and on CuPy; one synchronization on CuPy to read the range); on NumPy, wider ranges
    of more than 4096 keys take an LSD radix sort by 16-bit digits.

    Parameters
    ----------
    keys : array, shape (n,)
        The sort keys.
    *arrays : array
        Arrays with ``n`` entries along `axis`, on the backend of `keys`.
    axis : int, optional
        The axis of every array that `keys` indexes, 0 by default; ``-1`` is the last axis of
        each array, for component-major ``(ncomp, n)`` markers next to ``(n,)`` arrays.

    Returns
    -------
    tuple of arrays
        ``(keys[order], order, *sorted_arrays)``: the int64 permutation ``order`` and each
        array taken along `axis` (new arrays).

    Raises
    ------
    AlgorithmValueError
        If `keys` is not 1D or an array has not ``n`` entries along `axis`.

    Examples
    --------
    >>> keys = xp.asarray([2, 0, 1, 0])
    >>> xp.algorithms.sort_by_key(keys, xp.asarray([10.0, 11.0, 12.0, 13.0]))
    (array([0, 0, 1, 2]), array([1, 3, 2, 0]), array([11., 13., 12., 10.]))
    """
    mod = _module(keys)
    _same_backend("sort_by_key", keys, *arrays)
    if keys.ndim != 1:
        raise AlgorithmValueError(
            f"cunumpy.algorithms.sort_by_key: keys must be 1D, got shape {tuple(keys.shape)}"
        )
    n = keys.shape[0]
    _along("sort_by_key", arrays, n, axis)
    order = _argsort(mod, keys)
    return (keys[order], order, *(mod.take(a, order, axis=axis) for a in arrays))


# -- segments ---------------------------------------------------------------------------------


def _check_n(where: str, name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 0:
        raise AlgorithmValueError(
            f"cunumpy.algorithms.{where}: {name} must be a non-negative int, got {value!r}"
        )
    return int(value)


def _sum_dtype(mod: ModuleType, values: Any) -> Any:
    return values.dtype if values.dtype.kind in "fc" else np.dtype(np.float64)


def _check_out(where: str, out: Any, shape: tuple[int, ...], dtype: Any, mod: ModuleType) -> None:
    if (
        _module(out) is not mod
        or tuple(out.shape) != shape
        or out.dtype != dtype
        or not out.flags.c_contiguous
    ):
        raise AlgorithmValueError(
            f"cunumpy.algorithms.{where}: out must be a C-contiguous {np.dtype(dtype)} array of "
            f"shape {shape} on the backend of keys, got {getattr(out, 'dtype', type(out))} of "
            f"shape {tuple(getattr(out, 'shape', ()))}"
        )


def _host_segment_sum(keys: np.ndarray, values: np.ndarray, n_seg: int, out: Any) -> np.ndarray:
    dtype = _sum_dtype(np, values)
    trailing = values.shape[1:]
    width = int(np.prod(trailing, dtype=np.int64))
    keep = keys >= 0
    k = keys[keep].astype(np.int64)
    v = values[keep].reshape(k.size, width)
    index = (k[:, None] * width + np.arange(width, dtype=np.int64)).ravel()
    if dtype.kind == "c":
        flat = np.bincount(index, weights=v.real.ravel(), minlength=n_seg * width) + 1j * (
            np.bincount(index, weights=v.imag.ravel(), minlength=n_seg * width)
        )
    else:
        flat = np.bincount(index, weights=v.ravel().astype(np.float64), minlength=n_seg * width)
    result = flat.reshape((n_seg, *trailing)).astype(dtype, copy=False)
    if out is None:
        return result
    out[...] = result
    return out


class SegmentPlan:
    """Validated segment keys, reused by repeated :meth:`sum` calls.

    The keys are copied, so later changes to the caller's array do not affect the plan. The
    setup validates them (one synchronization on CuPy); :meth:`sum` then neither validates
    again nor reads anything back from the GPU.

    Parameters
    ----------
    keys : array of int, shape (n,)
        Segment of every row; a negative key drops the row.
    n_segments : int
        Number of segments; every key must be smaller.

    Raises
    ------
    AlgorithmValueError
        If `keys` is not 1D or a key is ``>= n_segments``.
    AlgorithmTypeError
        If `keys` is not an integer array.

    Examples
    --------
    >>> plan = xp.algorithms.SegmentPlan(xp.asarray([0, 1, 0, -1]), 2)
    >>> plan.sum(xp.asarray([1.0, 2.0, 3.0, 4.0]))
    array([4., 2.])
    """

    def __init__(self, keys: Any, n_segments: int) -> None:
        self._n_segments = _check_n("SegmentPlan", "n_segments", n_segments)
        mod = _module(keys)
        _integer_keys("SegmentPlan", "keys", keys)
        if keys.size and _host_read(mod, mod.max(keys))[0] >= self._n_segments:
            raise AlgorithmValueError(
                f"cunumpy.algorithms.SegmentPlan: keys must be smaller than "
                f"n_segments={self._n_segments}"
            )
        self._mod = mod
        self._keys = keys.astype(mod.int64, copy=True)

    @property
    def n_segments(self) -> int:
        """The number of segments."""
        return self._n_segments

    def sum(self, values: Any, *, out: Any = None) -> Any:
        """Sum the rows of `values` per segment: ``out[k]`` is the sum of the rows with key
        ``k``.

        Parameters
        ----------
        values : array, shape (n, ...)
            Rows to sum, on the backend of the keys.
        out : array, optional
            A C-contiguous array of shape ``(n_segments, ...)`` and the result dtype
            (float64 for integer or bool values), overwritten.

        Returns
        -------
        array, shape (n_segments, ...)
            The sums (`out` if given). On CUDA they use atomics, so the order of the float
            additions, and the last bits, may vary between runs.
        """
        return _segment_sum(self._mod, values, self._keys, self._n_segments, out, "SegmentPlan.sum")


def _segment_sum(mod: ModuleType, values: Any, keys: Any, n_seg: int, out: Any, where: str) -> Any:
    _same_backend(where, keys, values)
    values = mod.asarray(values)
    if values.ndim == 0 or values.shape[0] != keys.shape[0]:
        raise AlgorithmValueError(
            f"cunumpy.algorithms.{where}: values must have one row per key ({keys.shape[0]}), "
            f"got shape {tuple(values.shape)}"
        )
    shape = (n_seg, *values.shape[1:])
    dtype = _sum_dtype(mod, values)
    if out is not None:
        _check_out(where, out, shape, dtype, mod)
    if _kernels(keys) and dtype.kind == "f":
        return _gpu.segment_sum(mod, values, keys, n_seg, out, dtype)
    if mod is np:
        return _host_segment_sum(keys, values, n_seg, out)
    # other backends (the emulated device, complex values on CuPy): the same with the
    # backend's bincount
    keep = keys >= 0
    width = int(np.prod(values.shape[1:], dtype=np.int64))
    index = (mod.where(keep, keys, 0)[:, None] * width + mod.arange(width)).ravel()
    weights = mod.where(keep[:, None], values.reshape(keys.shape[0], width), 0)
    if dtype.kind == "c":
        flat = mod.bincount(index, weights=weights.real.ravel(), minlength=n_seg * width) + 1j * (
            mod.bincount(index, weights=weights.imag.ravel(), minlength=n_seg * width)
        )
    else:
        flat = mod.bincount(
            index, weights=weights.ravel().astype(mod.float64), minlength=n_seg * width
        )  # noqa: E501
    result = flat.reshape(shape).astype(dtype, copy=False)
    if out is None:
        return result
    out[...] = result
    return out


def segment_sum(values: Any, keys: Any, n_segments: int, *, out: Any = None) -> Any:
    """Sum the rows of `values` per integer key.

    ``out[k]`` is the sum of the rows ``i`` with ``keys[i] == k``; negative keys drop their
    row. On CUDA the rows are added with atomics (one kernel; the float order may vary) and
    the key check costs one synchronization: use :class:`SegmentPlan` when the keys are reused.

    Parameters
    ----------
    values : array, shape (n, ...)
        Values with any trailing dimensions.
    keys : array of int, shape (n,)
        Segment of every row.
    n_segments : int
        Number of segments; every key must be smaller.
    out : array, optional
        Output to overwrite, see :meth:`SegmentPlan.sum`.

    Returns
    -------
    array, shape (n_segments, ...)
        The sums, float64 for integer or bool values, on the backend of `keys`.

    Raises
    ------
    AlgorithmValueError
        If a key is ``>= n_segments`` or the shapes do not match.
    AlgorithmTypeError
        If `keys` is not an integer array.

    Examples
    --------
    >>> keys = xp.asarray([0, 1, 0, -1])
    >>> xp.algorithms.segment_sum(xp.asarray([1.0, 2.0, 3.0, 4.0]), keys, 2)
    array([4., 2.])
    """
    n_seg = _check_n("segment_sum", "n_segments", n_segments)
    mod = _module(keys)
    _integer_keys("segment_sum", "keys", keys)
    if _kernels(keys):
        _same_backend("segment_sum", keys, values)
        values = mod.asarray(values)
        dtype = _sum_dtype(mod, values)
        if dtype.kind == "f" and values.ndim and values.shape[0] == keys.shape[0]:
            shape = (n_seg, *values.shape[1:])
            if out is not None:
                _check_out("segment_sum", out, shape, dtype, mod)
            # the kernel skips and flags keys >= n_segments: one read afterwards
            return _gpu.segment_sum(mod, values, keys, n_seg, out, dtype, checked=True)
    if keys.size and _host_read(mod, mod.max(keys))[0] >= n_seg:
        raise AlgorithmValueError(
            f"cunumpy.algorithms.segment_sum: keys must be smaller than n_segments={n_seg}"
        )
    return _segment_sum(mod, values, keys, n_seg, out, "segment_sum")


def cell_offsets(sorted_cells: Any, n_cells: int, *, check: bool = True) -> Any:
    """Return the offsets of each cell into sorted cell IDs.

    Cell ``k`` occupies ``[offsets[k], offsets[k + 1])``; empty cells have equal offsets. On
    CUDA one kernel writes the offsets and checks the input, reading every ID (one
    synchronization). With ``check=False`` (an addition to 0.7.1's signature) the IDs are
    trusted: one binary search per cell, no synchronization, the cost of ``searchsorted``
    without its ``arange``; use it when the IDs come straight from :func:`sort_by_key` in a
    time loop. Filter out negative (invalid) cell IDs first.

    Parameters
    ----------
    sorted_cells : array of int, shape (n,)
        Cell IDs in ``[0, n_cells)``, sorted in nondecreasing order.
    n_cells : int
        Number of cells.
    check : bool, optional
        Check that the IDs are sorted and in range (True by default). Unchecked IDs that are
        not give unspecified offsets.

    Returns
    -------
    array of int64
        ``n_cells + 1`` offsets, on the backend of `sorted_cells`.

    Raises
    ------
    AlgorithmValueError
        If `sorted_cells` is not sorted or has an ID outside ``[0, n_cells)``.

    Examples
    --------
    >>> xp.algorithms.cell_offsets(xp.asarray([0, 0, 2]), 3)
    array([0, 2, 2, 3])
    """
    n_cells = _check_n("cell_offsets", "n_cells", n_cells)
    mod = _module(sorted_cells)
    cells = _integer_keys("cell_offsets", "sorted_cells", sorted_cells)
    if _kernels(cells):
        offsets, bad = _gpu.cell_offsets(mod, cells, n_cells, bool(check))
    else:
        bad = False
        if cells.size and check:
            unsorted = mod.any(cells[1:] < cells[:-1]) if cells.size > 1 else False
            bad = any(_host_read(mod, unsorted, cells[0] < 0, cells[-1] >= n_cells))
        offsets = mod.searchsorted(cells, mod.arange(n_cells + 1), side="left").astype(
            mod.int64, copy=False
        )
    if bad:
        raise AlgorithmValueError(
            "cunumpy.algorithms.cell_offsets: sorted_cells must be sorted in nondecreasing order "
            f"with every ID in [0, {n_cells})"
        )
    return offsets


def segment_boundaries(sorted_keys: Any) -> tuple[Any, Any, Any]:
    """Return the runs of equal keys in sorted integer keys.

    Sparse, negative and uint64 (Morton) keys are supported. The output length is known only
    after a scan, so on CUDA this synchronizes once: compute the boundaries once and reuse them.

    Parameters
    ----------
    sorted_keys : array of int, shape (n,)
        Keys sorted in nondecreasing order.

    Returns
    -------
    unique_keys : array of int
        The distinct keys.
    starts, stops : array of int64
        Run ``i`` is the half-open slice ``[starts[i], stops[i])`` of the input.

    Raises
    ------
    AlgorithmValueError
        If `sorted_keys` is not 1D or not sorted.
    AlgorithmTypeError
        If `sorted_keys` is not an integer array.

    Examples
    --------
    >>> xp.algorithms.segment_boundaries(xp.asarray([3, 3, 5, 9, 9, 9]))
    (array([3, 5, 9]), array([0, 2, 3]), array([2, 3, 6]))
    """
    mod = _module(sorted_keys)
    keys = _integer_keys("segment_boundaries", "sorted_keys", sorted_keys)
    if _kernels(keys):
        result = _gpu.segment_boundaries(mod, keys)
    else:
        n = keys.shape[0]
        if n > 1 and _host_read(mod, mod.any(keys[1:] < keys[:-1]))[0]:
            result = None
        else:
            first = mod.ones(n, dtype=bool)
            if n > 1:
                first[1:] = keys[1:] != keys[:-1]
            starts = mod.flatnonzero(first).astype(mod.int64, copy=False)
            stops = mod.concatenate([starts[1:], mod.full(1, n, dtype=mod.int64)])[: starts.size]
            result = (keys[starts], starts, stops)
    if result is None:
        raise AlgorithmValueError(
            "cunumpy.algorithms.segment_boundaries: sorted_keys must be sorted in nondecreasing "
            "order"
        )
    return result


def compact_by_mask(mask: Any, *arrays: Any, axis: int = 0) -> int:
    """Move the entries where `mask` is True to the front of every array, in place.

    The usual step after particles left the domain: keep the live ones at the front, in their
    original order, and continue with ``markers[:n]``. The entries after the first ``n`` are
    unspecified. The count is needed on the host, so on CuPy each call synchronizes once (after
    all the copies are queued); the scan of the mask is shared by every array.

    Parameters
    ----------
    mask : array of bool, shape (n,)
        True for the entries to keep.
    *arrays : array
        Arrays with ``n`` entries along `axis`, on the backend of `mask`; modified in place.
    axis : int, optional
        The axis of every array that `mask` indexes, 0 by default; ``-1`` is the last axis of
        each array, for component-major ``(ncomp, n)`` markers next to ``(n,)`` arrays.

    Returns
    -------
    int
        The number of kept entries.

    Raises
    ------
    AlgorithmTypeError
        If `mask` is not a 1D boolean array.
    AlgorithmValueError
        If an array does not have ``n`` entries along `axis`.

    Examples
    --------
    >>> x = xp.asarray([1.0, 2.0, 3.0, 4.0])
    >>> n = xp.algorithms.compact_by_mask(xp.asarray([True, False, True, False]), x)
    >>> x[:n]
    array([1., 3.])
    """
    mod = _module(mask)
    _same_backend("compact_by_mask", mask, *arrays)
    if mask.ndim != 1 or mask.dtype != np.bool_:
        raise AlgorithmTypeError(
            "cunumpy.algorithms.compact_by_mask: mask must be a 1D boolean array, got dtype "
            f"{mask.dtype}, {mask.ndim}D"
        )
    n = mask.shape[0]
    _along("compact_by_mask", arrays, n, axis)
    if _kernels(mask):
        return _gpu.compact_by_mask(mod, mask, arrays, axis)
    index = mod.flatnonzero(mask)
    kept = int(index.shape[0])
    for a in arrays:
        ax = axis % a.ndim
        target = (slice(None),) * ax + (slice(0, kept),)
        a[target] = mod.take(a, index, axis=ax)
    return kept
