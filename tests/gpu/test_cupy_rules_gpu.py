"""The rules the emulated device's CuPy follows (tests/cupy_rules.py) hold for the real CuPy:
run on the GPU, they show that the fake refuses and accepts what CuPy does."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import cupy_rules  # noqa: E402

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("check", cupy_rules.CHECKS, ids=[c.__name__ for c in cupy_rules.CHECKS])
def test_real_cupy_follows_the_rule(check):
    import cupy

    check(cupy)
