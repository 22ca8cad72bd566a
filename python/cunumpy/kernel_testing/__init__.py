"""Testing kernels: parity of host and CUDA versions, pytest markers and the ``backend`` fixture,
``device_function_kernel`` (a ``__device__`` function wrapped in a kernel), the CPU emulator
(``emulate_cuda_kernel``, ``emulate_metal_kernel``, ``emulated_launches``,
``fake_cupy_session``, ``run_in_fake_cupy_subprocess``).

Not imported by ``import cunumpy``, and importing it does not import pytest: ``BACKENDS``,
``backend``, ``requires_cupy`` and ``requires_device_backend`` are built on first access.
With ``CUNUMPY_REQUIRE_CUDA=1`` the markers and :func:`assert_kernels_agree` fail instead of
skipping.
"""

from __future__ import annotations

from typing import Any

from . import _markers
from ._device_function import device_function_kernel, device_function_source
from ._emulation import (
    compile_for_emulation,
    emulate_cuda_kernel,
    emulate_metal_kernel,
    emulation_cache_dir,
    emulation_compiler,
    fake_cupy_active,
    host_buffer,
    install_fake_cupy,
    shuffled_threads,
    uninstall_fake_cupy,
)
from ._markers import cuda_gate, cuda_required, device_backend_available, gpu_available
from ._parity import TEST_ARGS_SETTINGS, assert_kernels_agree, check_parity, parity_cases
from ._sessions import (
    bounds_check_views_available,
    emulated_launches,
    fake_cupy_session,
    high_dim_cuda_views_available,
    run_in_fake_cupy_subprocess,
    warp_shuffle_available,
)

__all__ = [
    "BACKENDS",
    "TEST_ARGS_SETTINGS",
    "assert_kernels_agree",
    "backend",
    "check_parity",
    "cuda_gate",
    "cuda_required",
    "device_backend_available",
    "device_function_kernel",
    "device_function_source",
    "gpu_available",
    "parity_cases",
    "requires_cupy",
    "requires_device_backend",
    "compile_for_emulation",
    "emulate_cuda_kernel",
    "emulate_metal_kernel",
    "emulation_cache_dir",
    "emulation_compiler",
    "fake_cupy_active",
    "host_buffer",
    "install_fake_cupy",
    "shuffled_threads",
    "uninstall_fake_cupy",
    "bounds_check_views_available",
    "emulated_launches",
    "fake_cupy_session",
    "high_dim_cuda_views_available",
    "requires_bounds_check_views",
    "requires_high_dim_cuda_views",
    "requires_warp_shuffle",
    "run_in_fake_cupy_subprocess",
    "warp_shuffle_available",
]


#: The documentation of the names built on first access (they cannot carry a docstring).
__attribute_docs__ = {
    "BACKENDS": "The backends a parity test runs on: ``numpy``, and ``cupy`` marked with "
    "``requires_device_backend``; the ``backend`` fixture is parametrised with it.",
    "requires_cupy": "A pytest mark that skips a test without CuPy and a GPU (fails instead "
    "with ``CUNUMPY_REQUIRE_CUDA=1``).",
    "requires_device_backend": "A pytest mark that skips a test without a device backend "
    "(a GPU, or the emulated device of ``CUNUMPY_FAKE_CUPY=1``); fails instead with "
    "``CUNUMPY_REQUIRE_CUDA=1``.",
    "requires_warp_shuffle": "A pytest mark (cunumpy 0.7's name) that skips a test needing "
    "warp shuffles where no device (a GPU or the emulated one) exists, or on HIP.",
    "requires_high_dim_cuda_views": "A pytest mark (cunumpy 0.7's name) that skips a test "
    "needing views of more than three dimensions where no device exists, or on HIP.",
    "requires_bounds_check_views": "A pytest mark (cunumpy 0.7's name) that skips a test "
    "needing bounds-checked views where no device exists, or on HIP.",
}


def __getattr__(name: str) -> Any:
    if name in _markers.LAZY_NAMES:
        return _markers.lazy(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
