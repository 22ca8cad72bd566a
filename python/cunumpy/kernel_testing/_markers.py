"""pytest markers and the ``backend`` fixture of ``cunumpy.kernel_testing``, built on first use
so that importing the package does not import pytest."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import Any

from .._backend import cupy_available, cupy_unavailable_reason, use_backend

__all__ = [
    "cuda_required",
    "gpu_available",
    "device_backend_available",
    "cuda_gate",
    "LAZY_NAMES",
]

#: The names built by :func:`lazy` (they need pytest).
LAZY_NAMES = (
    "BACKENDS",
    "backend",
    "requires_cupy",
    "requires_device_backend",
    "requires_warp_shuffle",
    "requires_high_dim_cuda_views",
    "requires_bounds_check_views",
)

# The capability markers: the check behind each, and what a skip says.
_CAPABILITIES = {
    "requires_warp_shuffle": "warp shuffles (reduce.cuh, scan.cuh)",
    "requires_high_dim_cuda_views": "Array5D..Array16D views",
    "requires_bounds_check_views": "bounds-checked views (-DCUNUMPY_BOUNDS_CHECK)",
}

_built: dict[str, Any] = {}


def cuda_required() -> bool:
    """Whether ``CUNUMPY_REQUIRE_CUDA`` (``1``, ``true``, ``yes``) turns skips into failures."""
    return os.environ.get("CUNUMPY_REQUIRE_CUDA", "").strip().lower() in {"1", "true", "yes"}


def _fake_active() -> bool:
    cupy = sys.modules.get("cupy")
    return cupy is not None and bool(getattr(cupy, "__cunumpy_fake__", False))


def device_backend_available() -> bool:
    """Whether the CuPy backend works here: a GPU, or the emulated device backend
    (``CUNUMPY_FAKE_CUPY=1``), on which CUDA kernels run in the CPU emulator."""
    return cupy_available()


def gpu_available() -> bool:
    """Whether a real CuPy sees a CUDA GPU (not the emulated device backend)."""
    return cupy_available() and not _fake_active()


def _reason(need: str) -> str:
    if _fake_active() and need == "gpu":
        return "needs a GPU: the emulated device backend (CUNUMPY_FAKE_CUPY) is active"
    return f"CuPy/GPU not available ({cupy_unavailable_reason()})"


def cuda_gate(need: str = "device") -> bool:
    """The condition of the skip markers: ``True`` (skip) when the need is not met, unless
    ``CUNUMPY_REQUIRE_CUDA`` is set, in which case the test fails with the reason."""
    ok = gpu_available() if need == "gpu" else device_backend_available()
    if ok:
        return False
    if cuda_required():
        import pytest

        pytest.fail(f"CUNUMPY_REQUIRE_CUDA is set but {_reason(need)}", pytrace=False)
    return True


def _condition(need: str) -> str:
    # A string condition is evaluated when the test runs, so the fake CuPy installed by a
    # conftest and the environment at run time count, not those at collection.
    return f"__import__('cunumpy.kernel_testing._markers', fromlist=['_']).cuda_gate({need!r})"


def lazy(name: str) -> Any:
    """Builds (once) one of :data:`LAZY_NAMES`."""
    if name in _built:
        return _built[name]
    import pytest

    if name == "requires_cupy":
        value: Any = pytest.mark.skipif(_condition("gpu"), reason="CuPy/GPU not available")
    elif name == "requires_device_backend":
        value = pytest.mark.skipif(
            _condition("device"),
            reason="neither a GPU nor the emulated device backend is available",
        )
    elif name in _CAPABILITIES:
        value = pytest.mark.skipif(
            "__import__('cunumpy.kernel_testing._sessions', fromlist=['_'])"
            f".capability_gate({name!r})",
            reason=f"needs {_CAPABILITIES[name]}: a CUDA GPU or the emulated device, not HIP",
        )
    elif name == "BACKENDS":
        value = ["numpy", pytest.param("cupy", marks=lazy("requires_device_backend"))]
    elif name == "backend":

        @pytest.fixture(params=lazy("BACKENDS"))
        def backend(request: Any) -> Iterator[str]:
            """Runs the test once per backend, inside ``use_backend``."""
            strict = request.param == "cupy"
            with use_backend(request.param, strict=strict) as active:
                yield active

        value = backend
    else:
        raise AttributeError(f"module 'cunumpy.kernel_testing' has no attribute {name!r}")
    _built[name] = value
    return value
