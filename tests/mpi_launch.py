"""Runs a Python program under the test environment's real ``mpiexec`` (MPICH from the
``mpich`` wheel, pinned in requirements/test.txt), or serially."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# Launcher variables of an outer MPI job must not leak into the programs we start.
_LAUNCHER_PREFIXES = ("PMI_", "PMIX_", "OMPI_", "MPI_LOCAL", "HYDRA_", "MAYBEMPI")


def mpiexec() -> str:
    """The ``mpiexec`` next to this Python (the venv's MPI); skip when MPI is not installed."""
    here = Path(sys.executable).parent / "mpiexec"
    found = str(here) if here.exists() else shutil.which("mpiexec")
    if found is None:
        pytest.skip("needs mpiexec (pip install mpi4py mpich, as `make test` does)")
    return found


def environment(backend: str, **extra: str) -> dict[str, str]:
    """The environment of a program on ``backend``: "numpy", "emulated" or "gpu"."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(_LAUNCHER_PREFIXES)}
    env.pop("CUNUMPY_FAKE_CUPY", None)
    if backend == "emulated":
        env.update(CUNUMPY_BACKEND="cupy", CUNUMPY_FAKE_CUPY="1")
    elif backend == "gpu":
        env.update(CUNUMPY_BACKEND="cupy")
    else:
        env.update(CUNUMPY_BACKEND="numpy")
    env.update(extra)
    return env


def run(
    program: Path | str,
    *args: str,
    ranks: int | None,
    backend: str = "numpy",
    timeout: int = 600,
    **extra_env: str,
) -> subprocess.CompletedProcess[str]:
    """Runs ``program`` on ``ranks`` MPI ranks (``None``: plainly, no launcher) and fails the
    test with its output when it exits non-zero."""
    command = [sys.executable, str(program), *args]
    if ranks is not None:
        command = [mpiexec(), "-n", str(ranks), *command]
    result = subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
        env=environment(backend, **extra_env),
    )
    if result.returncode != 0:
        pytest.fail(
            f"{' '.join(command)} exited {result.returncode}\n"
            f"stdout:\n{result.stdout[-4000:]}\nstderr:\n{result.stderr[-4000:]}",
            pytrace=False,
        )
    return result
