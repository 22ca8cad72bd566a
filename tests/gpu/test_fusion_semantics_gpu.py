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
