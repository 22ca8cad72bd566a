"""Exception classes of cunumpy.

They are defined in Python so that each can also inherit the built-in exception a user
would expect to catch (``TypeError``, ``ValueError``, ``RuntimeError``).
"""

from __future__ import annotations

__all__ = [
    "CunumpyError",
    "BackendError",
    "BackendUnavailableError",
    "MixedBackendError",
    "CupyUnavailableError",
]


class CunumpyError(Exception):
    """Base class of every error raised by cunumpy itself."""


class BackendError(CunumpyError, ValueError):
    """An unknown or malformed backend name."""


class BackendUnavailableError(CunumpyError, RuntimeError):
    """The CuPy backend was required (``strict=True``) but cannot work on this machine."""


class MixedBackendError(CunumpyError, TypeError):
    """Arrays that live on different backends were passed where one backend is required."""


class CupyUnavailableError(CunumpyError, ImportError):
    """CuPy was needed (for example by ``to_cupy``) but is not installed or sees no GPU."""
