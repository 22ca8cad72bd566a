"""Host twins of ``cunumpy/random.cuh``: counter-based Philox4x32-10 random numbers in NumPy.

``philox_uniform(seed, stream, counter)`` returns exactly the doubles that
``cunumpy_uniform(seed, stream, counter)`` returns in a kernel, so a host implementation and a
CUDA kernel that draw by (seed, stream, counter) agree bit for bit. All functions broadcast
their arguments (Python ints or integer arrays, taken modulo 2**64) and are vectorised.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = [
    "philox4x32_10",
    "philox_normal",
    "philox_normal2",
    "philox_uniform",
    "philox_uniform2",
    "random_bits",
]

_M0 = np.uint64(0xD2511F53)
_M1 = np.uint64(0xCD9E8D57)
_W0 = np.uint32(0x9E3779B9)
_W1 = np.uint32(0xBB67AE85)
_MASK32 = np.uint64(0xFFFFFFFF)
_SHIFT32 = np.uint64(32)


def _u64(x: Any) -> np.ndarray:
    """Integers (any sign, Python or NumPy) as uint64, wrapping modulo 2**64."""
    a = np.asarray(x)
    if a.dtype == np.uint64:
        return a
    if a.dtype.kind in "iub":
        return a.astype(np.int64).view(np.uint64) if a.dtype.kind == "i" else a.astype(np.uint64)
    if a.dtype == object:
        return np.vectorize(lambda v: int(v) % (1 << 64), otypes=[np.uint64])(a)
    raise TypeError(f"seed, stream and counter must be integers, got dtype {a.dtype}")


def philox4x32_10(ctr: Any, k0: Any, k1: Any) -> np.ndarray:
    """The Philox-4x32-10 bijection: ``ctr`` has a last axis of 4 uint32 words, ``k0`` and
    ``k1`` are the key words; returns uint32 words of the same shape (broadcast)."""
    c = np.asarray(ctr, dtype=np.uint32)
    k0a = np.asarray(k0, dtype=np.uint32)
    k1a = np.asarray(k1, dtype=np.uint32)
    c0, c1, c2, c3 = (c[..., i] for i in range(4))
    with np.errstate(over="ignore"):
        for rnd in range(10):
            if rnd:
                k0a = k0a + _W0
                k1a = k1a + _W1
            p0 = _M0 * c0.astype(np.uint64)
            p1 = _M1 * c2.astype(np.uint64)
            hi0 = (p0 >> _SHIFT32).astype(np.uint32)
            lo0 = (p0 & _MASK32).astype(np.uint32)
            hi1 = (p1 >> _SHIFT32).astype(np.uint32)
            lo1 = (p1 & _MASK32).astype(np.uint32)
            c0, c1, c2, c3 = hi1 ^ c1 ^ k0a, lo1, hi0 ^ c3 ^ k1a, lo0
    c0, c1, c2, c3 = np.broadcast_arrays(c0, c1, c2, c3)
    return np.stack([c0, c1, c2, c3], axis=-1).astype(np.uint32)


def random_bits(seed: Any, stream: Any, counter: Any) -> np.ndarray:
    """``cunumpy_random_bits``: 4 uint32 words (last axis) per broadcast (seed, stream,
    counter)."""
    s, st, ct = np.broadcast_arrays(_u64(seed), _u64(stream), _u64(counter))
    ctr = np.stack(
        [
            (ct & _MASK32).astype(np.uint32),
            (ct >> _SHIFT32).astype(np.uint32),
            (st & _MASK32).astype(np.uint32),
            (st >> _SHIFT32).astype(np.uint32),
        ],
        axis=-1,
    )
    return philox4x32_10(ctr, (s & _MASK32).astype(np.uint32), (s >> _SHIFT32).astype(np.uint32))


def _to_uniform(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    m = ((a.astype(np.uint64) >> np.uint64(5)) << np.uint64(26)) | (
        b.astype(np.uint64) >> np.uint64(6)
    )
    return m.astype(np.float64) * (1.0 / 9007199254740992.0)


def _result(x: np.ndarray) -> Any:
    return x[()] if x.ndim == 0 else x


def philox_uniform(seed: Any, stream: Any, counter: Any) -> Any:
    """Doubles in [0, 1) with 53 random bits, bit-identical to ``cunumpy_uniform``."""
    r = random_bits(seed, stream, counter)
    return _result(_to_uniform(r[..., 0], r[..., 1]))


def philox_uniform2(seed: Any, stream: Any, counter: Any) -> Any:
    """The second uniform of the same bits, bit-identical to ``cunumpy_uniform2``."""
    r = random_bits(seed, stream, counter)
    return _result(_to_uniform(r[..., 2], r[..., 3]))


def _normal(seed: Any, stream: Any, counter: Any, branch: Any) -> Any:
    r = random_bits(seed, stream, counter)
    u1 = 1.0 - _to_uniform(r[..., 0], r[..., 1])
    u2 = _to_uniform(r[..., 2], r[..., 3])
    return _result(np.sqrt(-2.0 * np.log(u1)) * branch(2.0 * np.pi * u2))


def philox_normal(seed: Any, stream: Any, counter: Any) -> Any:
    """Standard normals by Box-Muller (``cunumpy_normal``; may differ in the last bits)."""
    return _normal(seed, stream, counter, np.cos)


def philox_normal2(seed: Any, stream: Any, counter: Any) -> Any:
    """The sine branch of the same pair (``cunumpy_normal2``)."""
    return _normal(seed, stream, counter, np.sin)
