"""``xp.clip`` on the CuPy backend: Python-scalar bounds go to ``cupy.clip`` as kernel scalars.

array_api_compat's ``clip`` copies each scalar bound to the device (``asarray``) and clips with
masks, several kernels and two host-to-device copies per call; ``cupy.clip`` with weak Python
scalars is one kernel, keeps ``x.dtype`` (as the array API asks) and copies nothing. Other
bounds (arrays, NumPy scalars, an integer array with float bounds) keep the array API rules."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any


def _scalar_bound(bound: Any, integral: bool) -> bool:
    if bound is None:
        return True
    if integral:
        return type(bound) is int  # a float bound on integers: the array API's own rules
    return type(bound) in (int, float)


def device_clip(compat_clip: Callable[..., Any]) -> Callable[..., Any]:
    """``compat_clip`` (array_api_compat.cupy.clip) with the one-kernel path for scalar bounds."""

    @functools.wraps(compat_clip)
    def clip(x: Any, /, min: Any = None, max: Any = None, **kwargs: Any) -> Any:
        cupy = sys.modules.get("cupy")
        if cupy is None or not isinstance(x, cupy.ndarray) or (min is None and max is None):
            return compat_clip(x, min, max, **kwargs)
        kind = x.dtype.kind
        integral = kind in "iu"
        if kind not in "iuf" or set(kwargs) - {"out"}:
            return compat_clip(x, min, max, **kwargs)
        if not (_scalar_bound(min, integral) and _scalar_bound(max, integral)):
            return compat_clip(x, min, max, **kwargs)
        if integral:  # bounds outside the dtype's range: no bound (array_api_compat does so too)
            info = cupy.iinfo(x.dtype)
            min = None if min is not None and min <= info.min else min
            max = None if max is not None and max >= info.max else max
            if (min is not None and min > info.max) or (max is not None and max < info.min):
                return compat_clip(x, min, max, **kwargs)
            if min is None and max is None:
                out = kwargs.get("out")
                if out is None:
                    return x.copy()
                out[...] = x
                return out
        return cupy.clip(x, min, max, **kwargs)

    return clip
