"""The global CUDA debug switch (``CUNUMPY_CUDA_DEBUG``, ``set_cuda_debug``, ``cuda_debug``)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from .. import _config

_state = {"debug": _config.cuda_debug()}


def set_cuda_debug(enabled: bool) -> None:
    """Debug mode for kernels created or compiled from now on: ``-lineinfo
    -DCUNUMPY_BOUNDS_CHECK`` and a synchronize after each launch."""
    _state["debug"] = bool(enabled)


def get_cuda_debug() -> bool:
    """Whether kernels created now compile in debug mode (see :func:`set_cuda_debug`)."""
    return _state["debug"]


@contextlib.contextmanager
def cuda_debug(enabled: bool = True) -> Iterator[None]:
    """Debug mode for kernels created inside the block."""
    previous = _state["debug"]
    _state["debug"] = bool(enabled)
    try:
        yield
    finally:
        _state["debug"] = previous
