"""Seeded random generators per process, backend and MPI rank (``xp.rng.random_streams``).

A seed and a rank name one stream: the NumPy ``SeedSequence(seed, spawn_key=(rank,))``. Each
backend draws from its own child of it (spawn key ``(rank, 0)`` for NumPy, ``(rank, 1)`` for
CuPy), so a run with the same seed and number of ranks repeats exactly, ranks draw independent
numbers, and the values equal cunumpy 0.7's for the same seed.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._backend import get_backend
from .exceptions import RandomStreamsError

__all__ = ["BIT_GENERATORS", "RandomStreams", "get_rng", "random_streams"]

BIT_GENERATORS = ("MT19937", "PCG64", "PCG64DXSM", "Philox", "SFC64")
"""The NumPy bit generators :meth:`RandomStreams.seed` accepts by name."""

_DEFAULT_BIT_GENERATOR = "PCG64"
# The last spawn-key word of each backend's child sequence (part of the reproducible streams).
_BACKEND_KEY = {"numpy": 0, "cupy": 1}


def _cupy() -> Any:
    import cupy

    return cupy


def _backend_name(backend: str | None, where: str) -> str:
    name = get_backend() if backend is None else backend
    if name not in _BACKEND_KEY:
        raise RandomStreamsError(
            f"RandomStreams.{where}: backend must be 'numpy' or 'cupy', got {backend!r}"
        )
    return name


class RandomStreams:
    """One seeded random generator per process and backend (``xp.rng.random_streams``).

    ``seed(value, rank=...)`` picks the stream; until then (or after ``seed(None)``) it is
    seeded from the operating system. The draw methods (``random``, ``uniform``, ``normal``,
    ``standard_normal``) use the generator of the active backend, created on first use, or the
    one passed as ``rng=``; their results live on that generator's backend. A new instance is
    independent of :data:`random_streams`.

    >>> streams = xp.rng.RandomStreams()
    >>> streams.seed(42, rank=1)
    >>> v = streams.normal(0.0, 1.0, (10, 3))
    """

    def __init__(self) -> None:
        self._sequence: np.random.SeedSequence | None = None
        self._bit_generator = _DEFAULT_BIT_GENERATOR
        self._generators: dict[str, Any] = {}

    def __repr__(self) -> str:
        if self._sequence is None:
            return "RandomStreams(not seeded)"
        seq = self._sequence
        return (
            f"RandomStreams(entropy={seq.entropy}, spawn_key={seq.spawn_key}, "
            f"bit_generator={self._bit_generator!r})"
        )

    def seed(self, value: int | None, rank: int = 0, bit_generator: str | None = None) -> None:
        """Seeds every draw of this process with the stream ``(value, rank)``.

        The generators of all backends are replaced. NumPy's global state (and CuPy's, on the
        CuPy backend) is seeded from the same stream, for code that calls ``np.random.*``.
        ``bit_generator`` is one of :data:`BIT_GENERATORS` (``"PCG64"`` by default; CuPy always
        uses its own). Raises :class:`~cunumpy.exceptions.RandomStreamsError` (a
        ``ValueError``) for an unknown name.
        """
        if bit_generator is not None and bit_generator not in BIT_GENERATORS:
            raise RandomStreamsError(
                f"RandomStreams.seed: bit_generator must be one of {', '.join(BIT_GENERATORS)}; "
                f"got {bit_generator!r}"
            )
        self._bit_generator = bit_generator or _DEFAULT_BIT_GENERATOR
        entropy = None if value is None else int(value)
        self._sequence = np.random.SeedSequence(entropy=entropy, spawn_key=(int(rank),))
        self._generators.clear()
        global_seed = int(self._sequence.generate_state(1)[0])
        np.random.seed(global_seed)
        if get_backend() == "cupy":
            _cupy().random.seed(global_seed)

    def _child(self, backend: str) -> np.random.SeedSequence:
        if self._sequence is None:
            self._sequence = np.random.SeedSequence()
        return np.random.SeedSequence(
            entropy=self._sequence.entropy,
            spawn_key=(*self._sequence.spawn_key, _BACKEND_KEY[backend]),
        )

    def generator(self, backend: str | None = None) -> Any:
        """The process's generator of ``backend`` (``"numpy"`` or ``"cupy"``; the active one by
        default), created on first use: a ``numpy.random.Generator`` or a
        ``cupy.random.Generator``."""
        name = _backend_name(backend, "generator")
        if name not in self._generators:
            child = self._child(name)
            if name == "numpy":
                bits = getattr(np.random, self._bit_generator)(child)
                self._generators[name] = np.random.Generator(bits)
            else:
                state = int(child.generate_state(1, dtype=np.uint64)[0])
                self._generators[name] = _cupy().random.default_rng(state)
        return self._generators[name]

    def make_generator(self, seed: int | None = None, backend: str | None = None) -> Any:
        """A generator for one component: a new one seeded with ``seed``, or the shared
        :meth:`generator` when ``seed`` is None. ``backend="numpy"`` for a component that draws
        on the host whatever the active backend."""
        if seed is None:
            return self.generator(backend)
        name = _backend_name(backend, "make_generator")
        if name == "numpy":
            return np.random.default_rng(int(seed))
        return _cupy().random.default_rng(int(seed))

    def _rng(self, rng: Any) -> Any:
        return self.generator() if rng is None else rng

    def random(self, size: int | tuple[int, ...] | None = None, rng: Any = None) -> Any:
        """Uniform samples in [0, 1) of shape ``size`` (a scalar for None)."""
        return self._rng(rng).random(size=size)

    def standard_normal(self, size: int | tuple[int, ...] | None = None, rng: Any = None) -> Any:
        """Standard normal samples of shape ``size`` (a scalar for None)."""
        return self._rng(rng).standard_normal(size=size)

    def normal(
        self,
        loc: Any = 0.0,
        scale: Any = 1.0,
        size: int | tuple[int, ...] | None = None,
        rng: Any = None,
    ) -> Any:
        """Normal samples with mean ``loc`` and standard deviation ``scale`` (also from
        generators that have only ``standard_normal``)."""
        gen = self._rng(rng)
        if hasattr(gen, "normal"):
            return gen.normal(loc=loc, scale=scale, size=size)
        return loc + scale * gen.standard_normal(size=size)

    def uniform(
        self,
        low: Any = 0.0,
        high: Any = 1.0,
        size: int | tuple[int, ...] | None = None,
        rng: Any = None,
    ) -> Any:
        """Uniform samples in [low, high) (also from generators that have only ``random``)."""
        gen = self._rng(rng)
        if hasattr(gen, "uniform"):
            return gen.uniform(low=low, high=high, size=size)
        return low + (high - low) * gen.random(size=size)


random_streams = RandomStreams()
"""The random streams of this process."""


def get_rng(seed: int | None = None) -> Any:
    """A new generator for the active backend: ``numpy.random.default_rng(seed)`` or
    ``cupy.random.default_rng(seed)`` (the same seed gives different numbers on a GPU; on the
    emulated device it gives NumPy's). Independent of :data:`random_streams`.

    >>> xp.rng.get_rng(seed=7).random(2)
    """
    if get_backend() == "cupy":
        return _cupy().random.default_rng(seed)
    return np.random.default_rng(seed)
