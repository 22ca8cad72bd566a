"""PETSc vectors over cunumpy arrays without copies (``xp.petsc.petsc_vec``), through DLPack.

petsc4py is optional and not a dependency: it is imported when :func:`petsc_vec` is called.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._conversions import is_cupy_array
from .exceptions import (
    InvalidArgumentError,
    InvalidArgumentTypeError,
    InvalidStateError,
    PetscUnavailableError,
)

__all__ = ["petsc_vec"]


def _petsc() -> Any:
    try:
        from petsc4py import PETSc
    except ImportError as err:
        raise PetscUnavailableError(
            "cunumpy.petsc.petsc_vec needs petsc4py (pip install petsc4py; it builds PETSc)"
        ) from err
    return PETSc


def petsc_vec(array: Any, comm: Any = None) -> Any:
    """Wrap `array` as a PETSc vector that shares its memory (DLPack; never a copy).

    Parameters
    ----------
    array : numpy.ndarray or cupy.ndarray
        A C-contiguous array of PETSc's scalar type (``PETSc.ScalarType``, usually float64).
        PETSc sees a multi-dimensional array in row-major order, as ``array.ravel()``.
    comm : mpi4py.MPI.Comm or PETSc.Comm, optional
        The vector's communicator; PETSc's default (``COMM_WORLD``) if None. With several
        processes, `array` is this process's part.

    Returns
    -------
    petsc4py.PETSc.Vec
        A ``seq``/``mpi`` vector for a NumPy array, ``seqcuda``/``mpicuda`` (or HIP) for a CuPy
        array. It keeps `array` alive.

    Raises
    ------
    PetscUnavailableError
        If petsc4py is not installed (an ``ImportError``).
    TypeError
        If `array` is not an array or has another dtype than ``PETSc.ScalarType``.
    ValueError
        If `array` is not C-contiguous.
    RuntimeError
        If `array` is on the GPU and this PETSc has neither CUDA nor HIP (PETSc would silently
        work on a host copy).

    Notes
    -----
    PETSc and CuPy may use different streams: call :func:`cunumpy.synchronize` before PETSc
    reads what CuPy wrote, and before CuPy reads what PETSc wrote.

    Examples
    --------
    >>> b_vec = xp.petsc.petsc_vec(xp.zeros(100))  # doctest: +SKIP
    >>> b_vec.getSize()  # doctest: +SKIP
    100
    """
    petsc = _petsc()
    on_device = is_cupy_array(array)
    if not (on_device or isinstance(array, np.ndarray)):
        raise InvalidArgumentTypeError(
            f"cunumpy.petsc.petsc_vec: array must be a NumPy or CuPy array, got "
            f"{type(array).__name__}"
        )
    scalar = np.dtype(petsc.ScalarType)
    if array.dtype != scalar:
        raise InvalidArgumentTypeError(
            f"cunumpy.petsc.petsc_vec: array must have PETSc's scalar type {scalar}, got "
            f"{array.dtype} (convert it explicitly: array.astype({scalar.name}))"
        )
    if not array.flags.c_contiguous:
        raise InvalidArgumentError(
            "cunumpy.petsc.petsc_vec: array must be C-contiguous (PETSc reads it in place), got "
            f"strides {array.strides}"
        )
    if on_device and not any(petsc.Sys.hasExternalPackage(p) for p in ("cuda", "hip")):
        raise InvalidStateError(
            "cunumpy.petsc.petsc_vec: the array is on the GPU but this PETSc was built without "
            "CUDA or HIP; it would silently work on a host copy"
        )
    return petsc.Vec().createWithDLPack(array.reshape(-1), comm=comm)
