"""Random numbers: seeded generators per process and rank, and the host twins of ``random.cuh``.

- :data:`random_streams` / :class:`RandomStreams`: one reproducible generator per process,
  backend and MPI rank (``random_streams.seed(42, rank=rank)``); :func:`get_rng` a fresh NumPy
  or CuPy ``Generator``; :data:`BIT_GENERATORS` the NumPy bit generators ``seed`` accepts.
- ``philox_*``: counter-based Philox4x32-10 numbers for (seed, stream, counter), the values a
  kernel draws with ``cunumpy/random.cuh``. Uniforms are bit-identical to the device ones (and
  to cunumpy 0.7.1's); normals use the host's ``log``/``sqrt``/``sin``/``cos``, which can differ
  from the device's in the last bit. Arguments broadcast; the results live on the backend of
  the array arguments (NumPy for Python ints and NumPy arrays, CuPy for CuPy arrays).

The module is called ``rng`` so that ``xp.random`` stays the backend's own ``random`` module.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._conversions import is_cupy_array, to_cupy
from ._random_streams import BIT_GENERATORS, RandomStreams, get_rng, random_streams
from .exceptions import InvalidArgumentTypeError

__all__ = [
    "BIT_GENERATORS",
    "RandomStreams",
    "get_rng",
    "philox4x32_10",
    "philox_normal",
    "philox_normal2",
    "philox_uniform",
    "philox_uniform2",
    "random_bits",
    "random_streams",
]

# Philox-4x32 multipliers and key increments (Salmon et al., SC'11), as in random.cuh.
_M0 = 0xD2511F53
_M1 = 0xCD9E8D57
_W0 = 0x9E3779B9
_W1 = 0xBB67AE85
_MASK32 = 0xFFFFFFFF
_TWO_PI = 6.283185307179586
_TWO_POW_M53 = 1.0 / 9007199254740992.0


def _namespace(*values: Any) -> Any:
    """CuPy when any argument is a CuPy array (the results go where the data is), else NumPy."""
    if any(is_cupy_array(v) for v in values):
        import cupy

        return cupy
    return np


def _u64(value: Any, xp: Any, name: str) -> Any:
    """``value`` as uint64 on ``xp``; integers of any sign wrap modulo 2**64 (as C does)."""
    if is_cupy_array(value):
        if value.dtype.kind not in "iub":
            raise InvalidArgumentTypeError(
                f"cunumpy.rng: {name} must be integers, got a {value.dtype} array"
            )
        return value.astype(xp.uint64, copy=False)
    a = np.asarray(value)
    if a.dtype == object:  # Python ints beyond int64
        a = np.vectorize(lambda v: int(v) % (1 << 64), otypes=[np.uint64])(a)
    elif a.dtype.kind == "i":
        a = a.astype(np.int64).view(np.uint64)
    elif a.dtype.kind in "ub":
        a = a.astype(np.uint64)
    else:
        raise InvalidArgumentTypeError(f"cunumpy.rng: {name} must be integers, got dtype {a.dtype}")
    if xp is np:
        return a
    if a.ndim == 0:
        return np.uint64(a[()])  # a scalar operand: no copy to the device
    return to_cupy(a)  # a host array beside device arrays: one counted copy


def philox4x32_10(counter: Any, key0: Any, key1: Any) -> Any:
    """The Philox-4x32-10 bijection, as ``cunumpy_philox4x32_10`` in ``random.cuh``.

    ``counter`` has a last axis of 4 uint32 words; ``key0`` and ``key1`` are the two 32-bit key
    words (broadcast against ``counter[..., 0]``). Returns uint32 words of shape ``(..., 4)`` on
    the backend of the inputs.
    """
    xp = _namespace(counter, key0, key1)
    ctr = _u64(counter, xp, "counter") & xp.uint64(_MASK32)
    words = [ctr[..., i] for i in range(4)]
    k0 = _u64(key0, xp, "key0") & xp.uint64(_MASK32)
    k1 = _u64(key1, xp, "key1") & xp.uint64(_MASK32)
    mask, shift = xp.uint64(_MASK32), xp.uint64(32)
    m0, m1, w0, w1 = xp.uint64(_M0), xp.uint64(_M1), xp.uint64(_W0), xp.uint64(_W1)
    c0, c1, c2, c3 = words
    for _ in range(10):
        p0 = m0 * c0  # both factors < 2**32: the product is exact in uint64
        p1 = m1 * c2
        c0, c1, c2, c3 = (p1 >> shift) ^ c1 ^ k0, p1 & mask, (p0 >> shift) ^ c3 ^ k1, p0 & mask
        k0 = (k0 + w0) & mask
        k1 = (k1 + w1) & mask
    return xp.stack(xp.broadcast_arrays(c0, c1, c2, c3), axis=-1).astype(xp.uint32)


def random_bits(seed: Any, stream: Any, counter: Any) -> Any:
    """``cunumpy_random_bits``: the 4 uint32 words (last axis) for each broadcast (seed, stream,
    counter). The Philox counter is (counter lo, counter hi, stream lo, stream hi), the key the
    seed."""
    xp = _namespace(seed, stream, counter)
    s, st, ct = xp.broadcast_arrays(*_broadcast_u64(xp, seed, stream, counter))
    mask, shift = xp.uint64(_MASK32), xp.uint64(32)
    words = xp.stack([ct & mask, ct >> shift, st & mask, st >> shift], axis=-1)
    return philox4x32_10(words, s & mask, s >> shift)


def _broadcast_u64(xp: Any, seed: Any, stream: Any, counter: Any) -> list[Any]:
    values = [_u64(seed, xp, "seed"), _u64(stream, xp, "stream"), _u64(counter, xp, "counter")]
    if xp is np:
        return values
    # Device arrays broadcast against scalars; give the scalars the broadcast shape.
    shape = np.broadcast_shapes(*(np.shape(v) for v in values))
    return [xp.full(shape, v, dtype=xp.uint64) if np.ndim(v) == 0 else v for v in values]


def _to_uniform(xp: Any, hi: Any, lo: Any) -> Any:
    """The top 53 bits of the 64-bit word ``hi:lo`` times 2**-53 (``cunumpy_u64_to_uniform``)."""
    word = (hi.astype(xp.uint64) << xp.uint64(32)) | lo.astype(xp.uint64)
    return (word >> xp.uint64(11)).astype(xp.float64) * _TWO_POW_M53


def _result(xp: Any, x: Any) -> Any:
    return x[()] if xp is np and x.ndim == 0 else x


def philox_uniform2(seed: Any, stream: Any, counter: Any) -> tuple[Any, Any]:
    """Two uniform doubles in [0, 1) per (seed, stream, counter): ``(u0, u1)``.

    Bit-identical to ``cunumpy_uniform2(seed, stream, counter, &u0, &u1)`` in a kernel, 53
    random bits each (``u0`` from words 0-1 of the Philox output, ``u1`` from words 2-3).
    ``stream`` is e.g. a particle id and ``counter`` the time step; use a new counter for every
    random decision of a step.

    >>> u0, u1 = xp.rng.philox_uniform2(42, np.arange(3, dtype=np.uint64), 0)
    """
    xp = _namespace(seed, stream, counter)
    r = random_bits(seed, stream, counter)
    return (
        _result(xp, _to_uniform(xp, r[..., 0], r[..., 1])),
        _result(xp, _to_uniform(xp, r[..., 2], r[..., 3])),
    )


def philox_uniform(seed: Any, stream: Any, counter: Any) -> Any:
    """One uniform double in [0, 1) per (seed, stream, counter): the first of
    :func:`philox_uniform2`, bit-identical to ``cunumpy_uniform``."""
    return philox_uniform2(seed, stream, counter)[0]


def philox_normal2(seed: Any, stream: Any, counter: Any) -> tuple[Any, Any]:
    """Two standard normal doubles per (seed, stream, counter): ``(z0, z1)``.

    The Box-Muller transform of :func:`philox_uniform2` (radius from ``1 - u0``, angle from
    ``u1``), as ``cunumpy_normal2(seed, stream, counter, &z0, &z1)`` in a kernel; equal to the
    device values up to the last bit of the math functions.
    """
    xp = _namespace(seed, stream, counter)
    u0, u1 = philox_uniform2(seed, stream, counter)
    radius = xp.sqrt(-2.0 * xp.log(1.0 - u0))
    angle = _TWO_PI * u1
    return radius * xp.cos(angle), radius * xp.sin(angle)


def philox_normal(seed: Any, stream: Any, counter: Any) -> Any:
    """One standard normal double per (seed, stream, counter): the first of
    :func:`philox_normal2` (``cunumpy_normal`` in a kernel)."""
    return philox_normal2(seed, stream, counter)[0]
