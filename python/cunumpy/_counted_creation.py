"""``xp.asarray``/``xp.array`` on the CuPy backend, counted: host data given to them is a copy
to the device, recorded as ``to_device`` on a GPU as on the emulated device."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any

from . import _core
from ._ledger import record, recorded_by_caller

COUNTED = ("asarray", "array")


def _on_device(obj: Any) -> bool:
    cupy = sys.modules.get("cupy")
    if cupy is None:
        return False
    if isinstance(obj, cupy.ndarray):
        return True
    return isinstance(obj, list | tuple) and any(_on_device(v) for v in obj)


def counted(func: Callable[..., Any], name: str) -> Callable[..., Any]:
    """``func`` (a CuPy creation function) recording one ``to_device`` for host data."""

    @functools.wraps(func)
    def wrapper(obj: Any, /, *args: Any, **kwargs: Any) -> Any:
        if not _core.is_recording() or _on_device(obj):
            return func(obj, *args, **kwargs)
        with recorded_by_caller():
            out = func(obj, *args, **kwargs)
        record(
            "to_device",
            f"xp.{name}: host data to a {out.dtype} array of shape {out.shape}",
            int(out.nbytes),
        )
        return out

    return wrapper
