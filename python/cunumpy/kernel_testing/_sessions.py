"""Running kernels on the emulated device from tests: ``emulated_launches``,
``fake_cupy_session``, ``run_in_fake_cupy_subprocess``, and the capability checks behind the
``requires_warp_shuffle``/``_high_dim_cuda_views``/``_bounds_check_views`` markers.

This module does not import pytest (only a failing subprocess does, to report it).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence

from .._backend import use_backend
from .._emulate import close_emulation_block, open_emulation_block
from ..cuda._limits import is_hip
from ..exceptions import InvalidStateError
from ._markers import cuda_gate, device_backend_available

__all__ = [
    "bounds_check_views_available",
    "emulated_launches",
    "fake_cupy_session",
    "high_dim_cuda_views_available",
    "run_in_fake_cupy_subprocess",
    "warp_shuffle_available",
]


@contextlib.contextmanager
def emulated_launches(
    *, compiler: str | os.PathLike[str] | None = None, options: Sequence[str] = ()
) -> Iterator[None]:
    """Runs every ``CudaKernel`` launch of the block in the CPU emulator, on NumPy arrays too.

    Inside the block a launch with NumPy arrays (for pointer and view parameters) runs the
    kernel on the CPU and writes the arrays in place, with the checks of a GPU launch, as
    :func:`emulate_cuda_kernel` does; ``options`` are extra host-compiler options (for example
    ``-ffp-contract=off`` for NumPy-exact floating point) and ``compiler`` the host C++
    compiler (instead of ``$CXX``). Fake-CuPy arrays work too. The setting is process-wide
    (also on a GPU machine: every launch in the block is emulated) and blocks nest.
    """
    block = tuple(str(o) for o in options)
    open_emulation_block(block)
    previous_cxx = os.environ.get("CXX")
    if compiler is not None:
        os.environ["CXX"] = os.fspath(compiler)
    try:
        yield
    finally:
        close_emulation_block(block)
        if compiler is not None:
            if previous_cxx is None:
                os.environ.pop("CXX", None)
            else:
                os.environ["CXX"] = previous_cxx


@contextlib.contextmanager
def fake_cupy_session(
    *, compiler: str | os.PathLike[str] | None = None, options: Sequence[str] = ()
) -> Iterator[None]:
    """The CuPy backend on the emulated device for a block: ``use_backend("cupy",
    strict=True)`` plus :func:`emulated_launches`. Raises ``RuntimeError`` unless the fake CuPy
    is installed (``CUNUMPY_FAKE_CUPY=1`` or ``install_fake_cupy()``)."""
    from ._emulation import fake_cupy_active

    if not fake_cupy_active():
        raise InvalidStateError(
            "fake_cupy_session needs the fake CuPy: set CUNUMPY_FAKE_CUPY=1 before importing "
            "cunumpy, or call cunumpy.kernel_testing.install_fake_cupy() first"
        )
    with use_backend("cupy", strict=True), emulated_launches(compiler=compiler, options=options):
        yield


# Launchers set these to tell a child it was started by MPI; the child must run serially.
_MPI_LAUNCHER_PREFIXES = ("OMPI_", "PMI_", "PMIX_", "MPI_LOCALRANKID", "MPI_LOCALNRANKS", "HYDI_")


def _mpi_rank() -> int:
    for var in ("OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID"):
        value = os.environ.get(var)
        if value is not None and value.strip().isdigit():
            return int(value)
    return 0


def run_in_fake_cupy_subprocess(
    code: str, *, env: Mapping[str, str] | None = None, timeout: float | None = None
) -> subprocess.CompletedProcess[str] | None:
    """Runs ``code`` in a fresh ``python -X faulthandler -c code`` on the emulated device.

    The child gets ``CUNUMPY_FAKE_CUPY=1``, ``OMP_NUM_THREADS=1`` and ``MAYBEMPI=0``, without
    the variables of an MPI launcher, plus ``env``. A crash (a signal) or a non-zero exit fails
    the calling test with ``pytest.fail``, showing how it ended and the last 50 lines of its
    output; otherwise the finished process is returned. Under MPI only rank 0 runs it (the
    others return ``None``). Use it for code that may kill the process.
    """
    if _mpi_rank() != 0:
        return None
    child_env = {k: v for k, v in os.environ.items() if not k.startswith(_MPI_LAUNCHER_PREFIXES)}
    child_env.update({"CUNUMPY_FAKE_CUPY": "1", "OMP_NUM_THREADS": "1", "MAYBEMPI": "0"})
    if env:
        child_env.update(env)
    args = [sys.executable, "-X", "faulthandler", "-c", code]
    done = subprocess.run(
        args, env=child_env, capture_output=True, text=True, timeout=timeout, check=False
    )
    if done.returncode != 0:
        import pytest

        if done.returncode < 0:
            try:
                how = f"signal {signal.Signals(-done.returncode).name}"
            except ValueError:
                how = f"signal {-done.returncode}"
        else:
            how = f"exit code {done.returncode}"

        def tail(text: str) -> str:
            return "\n".join(text.splitlines()[-50:])

        pytest.fail(
            f"the fake-CuPy subprocess ended with {how}\n--- stdout (last 50 lines) ---\n"
            f"{tail(done.stdout)}\n--- stderr (last 50 lines) ---\n{tail(done.stderr)}",
            pytrace=False,
        )
    return done


def warp_shuffle_available() -> bool:
    """Whether kernels using warp shuffles (``cunumpy/reduce.cuh``, ``__shfl_*_sync``) can run
    here: on a CUDA GPU or on the emulated device (whose emulator runs warp intrinsics), not on
    a HIP build of CuPy, where they are not ported."""
    return device_backend_available() and not is_hip()


def high_dim_cuda_views_available() -> bool:
    """Whether kernels taking ``Array5D``..``Array16D`` views can run here (a CUDA GPU or the
    emulated device; not HIP)."""
    return device_backend_available() and not is_hip()


def bounds_check_views_available() -> bool:
    """Whether kernels with ``-DCUNUMPY_BOUNDS_CHECK`` views can run here (a CUDA GPU or the
    emulated device; not HIP)."""
    return device_backend_available() and not is_hip()


def capability_gate(marker: str) -> bool:
    """The condition of the capability marker ``marker``: skip on HIP always (a known gap, so
    not even ``CUNUMPY_REQUIRE_CUDA`` fails it); otherwise as ``requires_device_backend``
    (a failure under ``CUNUMPY_REQUIRE_CUDA`` when there is no device)."""
    if is_hip():
        return True
    return cuda_gate("device")
