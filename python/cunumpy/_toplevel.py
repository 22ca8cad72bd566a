"""Small top-level helpers: the default float dtype and the version requirement."""

from __future__ import annotations

import re
from typing import Any

from . import _backend, _core
from .exceptions import CunumpyVersionError

__all__ = ["default_float_dtype", "require_version"]


def default_float_dtype() -> Any:
    """The active backend's ``float64`` dtype: write ``dtype=xp.default_float_dtype()`` where
    an explicit, portable precision matters (``dtype=float`` depends on platform defaults).

    >>> import cunumpy as xp
    >>> xp.asarray([0.5], dtype=xp.default_float_dtype()).dtype
    dtype('float64')
    """
    return _backend.current_module().float64


def _numeric(version: str) -> tuple[int, ...]:
    match = re.match(r"\d+(?:\.\d+)*", version.strip())
    if match is None:
        raise CunumpyVersionError(f"require_version: {version!r} is not a version such as '0.8.0'")
    parts = [int(p) for p in match.group(0).split(".")]
    while len(parts) > 1 and parts[-1] == 0:
        parts.pop()
    return tuple(parts)


def require_version(minimum: str) -> None:
    """Raises :class:`~cunumpy.exceptions.CunumpyVersionError` (an ``ImportError``) when the
    installed cunumpy is older than ``minimum``.

    Only the numeric part counts (``"0.8.0"`` and ``"0.8.0.dev1"`` are equal); nothing is
    checked when the installed version is unknown (``0.0.0+unknown``). A program that needs a
    feature of a given release fails at its start with a clear message instead of later with
    an ``AttributeError``.
    """
    installed = _core.__version__
    wanted = _numeric(minimum)
    if installed.startswith("0.0.0+unknown"):
        return
    if _numeric(installed) < wanted:
        raise CunumpyVersionError(
            f"this program needs cunumpy {minimum} or newer; {installed} is installed "
            "(pip install --upgrade cunumpy)"
        )
