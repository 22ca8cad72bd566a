"""cunumpy: NumPy code and compiled kernels, on the CPU or on NVIDIA GPUs.

``import cunumpy as xp`` gives the array API of NumPy or CuPy (through array-api-compat),
selected by ``CUNUMPY_BACKEND`` at import or :func:`set_backend` later, plus explicit,
counted conversions between them and the kernel layer (``xp.kernels``).
"""

from __future__ import annotations

import sys as _sys
from typing import Any

from . import _backend, _core
from ._backend import (
    MIN_CUPY_VERSION,
    backend_info,
    cupy_available,
    cupy_version_supported,
    get_backend,
    set_backend,
    use_backend,
)
from ._conversions import (
    as_device_array,
    assert_same_backend,
    get_array_backend,
    get_array_module,
    is_cpu,
    is_gpu,
    same_backend,
    synchronize,
    to_cunumpy,
    to_cupy,
    to_numpy,
)

__version__: str = _core.__version__

from . import (  # noqa: E402  (public submodules)
    algorithms,
    arguments,
    cuda,
    exceptions,
    integrate,
    kernels,
    memory,
    mpi,
    optimize,
    profiling,
    rng,
)
from ._scipy import scipy  # noqa: E402  (SciPy or cupyx.scipy, per backend)
from .kernels import fuse  # noqa: E402  (cunumpy's own fuse, not the backend's)

__all__ = [
    "MIN_CUPY_VERSION",
    "algorithms",
    "integrate",
    "optimize",
    "scipy",
    "arguments",
    "as_device_array",
    "assert_same_backend",
    "backend_info",
    "cuda",
    "cupy_available",
    "cupy_version_supported",
    "exceptions",
    "fuse",
    "get_array_backend",
    "get_array_module",
    "get_backend",
    "is_cpu",
    "is_gpu",
    "kernels",
    "memory",
    "mpi",
    "profiling",
    "rng",
    "same_backend",
    "set_backend",
    "synchronize",
    "to_cunumpy",
    "to_cupy",
    "to_numpy",
    "use_backend",
]

_OWN_NAMES = {name for name in globals() if not name.startswith("__")} | {
    "numpy_backend",
    "cupy_backend",
    "xp",
}


def __getattr__(name: str) -> Any:
    if name == "numpy_backend":
        return get_backend() == "numpy"
    if name == "cupy_backend":
        return get_backend() == "cupy"
    if name == "xp":
        return _backend.current_module()
    if name.startswith("__"):
        raise AttributeError(name)
    module = _backend.current_module()
    try:
        return getattr(module, name)
    except AttributeError:
        # Name cunumpy, not the backend module the lookup fell through to.
        raise AttributeError(
            f"module 'cunumpy' has no attribute {name!r} (nor has the {get_backend()} "
            f"backend's namespace, {module.__name__})",
            name=name,
            obj=_sys.modules[__name__],
        ) from None


_backend.install_namespace(globals(), _OWN_NAMES)
_backend.initialize_from_environment()
