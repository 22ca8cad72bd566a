"""cunumpy: NumPy code and compiled kernels, on the CPU or on NVIDIA GPUs.

``import cunumpy as xp`` gives the array API of NumPy or CuPy (through array-api-compat),
selected by ``CUNUMPY_BACKEND`` at import or :func:`set_backend` later, plus explicit,
counted conversions between them and the kernel layer (``xp.kernels``).
"""

from __future__ import annotations

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
from ._host import evaluate_on_host, host_call, setup_on_host
from ._toplevel import default_float_dtype, require_version

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
    petsc,
    profiling,
    rng,
    xp,  # the backend module of cunumpy 0.7 (xp.xp.array_backend)
)
from ._scipy import scipy  # noqa: E402  (SciPy or cupyx.scipy, per backend)
from ._staging import to_host_async  # noqa: E402
from .kernels import fuse  # noqa: E402  (cunumpy's own fuse, not the backend's)

__all__ = [
    "MIN_CUPY_VERSION",
    "algorithms",
    "integrate",
    "optimize",
    "petsc",
    "scipy",
    "arguments",
    "as_device_array",
    "assert_same_backend",
    "backend_info",
    "cuda",
    "cupy_available",
    "cupy_backend",
    "cupy_version_supported",
    "default_float_dtype",
    "evaluate_on_host",
    "exceptions",
    "fuse",
    "get_array_backend",
    "get_array_module",
    "get_backend",
    "host_call",
    "is_cpu",
    "is_gpu",
    "kernels",
    "memory",
    "mpi",
    "numpy_backend",
    "profiling",
    "require_version",
    "rng",
    "same_backend",
    "set_backend",
    "setup_on_host",
    "synchronize",
    "to_host_async",
    "to_cunumpy",
    "to_cupy",
    "to_numpy",
    "use_backend",
    "xp",
]

#: The documentation of the names computed on access (they cannot carry a docstring).
__attribute_docs__ = {
    "numpy_backend": "Whether the active backend is NumPy (cunumpy 0.7's name; read on access).",
    "cupy_backend": "Whether the active backend is CuPy (cunumpy 0.7's name; read on access).",
}

_OWN_NAMES = {name for name in globals() if not name.startswith("__")} | {
    "numpy_backend",
    "cupy_backend",
}


def __getattr__(name: str) -> Any:
    if name == "numpy_backend":
        return get_backend() == "numpy"
    if name == "cupy_backend":
        return get_backend() == "cupy"
    if name.startswith("__"):
        raise AttributeError(name)
    module = _backend.current_module()
    try:
        return getattr(module, name)
    except AttributeError:
        pass
    from ._removed import missing_attribute

    raise missing_attribute("cunumpy", name, backend=module.__name__)


_backend.install_namespace(globals(), _OWN_NAMES)
_backend.initialize_from_environment()
