"""tests/fusion_semantics_cases.py on the GPU: the wider ufunc set, float16, in-place updates
of CuPy arguments and `out=` give NumPy's results."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

cupy = pytest.importorskip("cupy")

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from fusion_semantics_cases import CASES, check_case  # noqa: E402


@pytest.mark.parametrize(("name", "func", "args"), CASES, ids=[c[0] for c in CASES])
def test_numpy_semantics_on_gpu(name, func, args):
    # (the GPU's math library may differ from NumPy's by an ulp or two)
    check_case(func, args, cupy.asarray, rtol=1e-6)


def test_argument_updated_in_place_that_aliases_another_on_gpu():
    import numpy as np

    import cunumpy as xp

    def add_twice(x, y):
        x += y
        x += y

    want = np.arange(16.0).reshape(4, 4)
    add_twice(want, want.T)
    a = cupy.asarray(np.arange(16.0).reshape(4, 4))
    xp.fuse(add_twice)(a, a.T)
    np.testing.assert_array_equal(cupy.asnumpy(a), want)
    b = cupy.ones(4)
    xp.fuse(add_twice)(b, b)
    np.testing.assert_array_equal(cupy.asnumpy(b), 4.0)
