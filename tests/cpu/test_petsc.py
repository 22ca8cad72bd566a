"""xp.petsc without petsc4py (PETSc builds from source, which this machine does not do): the
import error names what to install."""

from __future__ import annotations

import numpy as np
import pytest

import cunumpy as xp


def test_petsc_vec_without_petsc4py_says_what_to_install():
    try:
        import petsc4py  # noqa: F401
    except ImportError:
        pass
    else:
        pytest.skip("petsc4py is installed: tests/gpu and a PETSc build cover it")
    from cunumpy.exceptions import PetscUnavailableError

    with pytest.raises(PetscUnavailableError, match="needs petsc4py") as info:
        xp.petsc.petsc_vec(np.zeros(3))
    assert isinstance(info.value, ImportError)
