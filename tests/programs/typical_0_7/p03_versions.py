"""Version checks and the backend singleton of cunumpy.xp."""

import cunumpy as xp
import cunumpy.xp as xpmod

xp.require_version("0.7.0")
try:
    xp.require_version("99.0")
except ImportError:
    print("too old")
print(xpmod.array_backend.backend == xp.get_backend())
info = xp.backend_info()
print(sorted(k for k in info if k in ("backend", "cupy_available", "versions", "device")))
print(info["backend"] == xp.get_backend(), xp.MIN_CUPY_VERSION)
