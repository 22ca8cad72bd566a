"""tests/fusion_semantics_cases.py on the emulated device (``CUNUMPY_FAKE_CUPY=1``): the wider
ufunc set, float16, in-place updates and `out=` run as generated CUDA C in the CPU emulator
and give NumPy's results; the caller's (fake) device arrays see the updates. One process for
all cases, so the fake never leaks into other tests."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from cunumpy.kernel_testing import emulation_compiler

pytestmark = [
    pytest.mark.cxx,
    pytest.mark.skipif(emulation_compiler() is None, reason="needs a host C++ compiler"),
]

TESTS = Path(__file__).resolve().parents[1]


def test_numpy_semantics_on_the_emulated_device():
    code = """
        import cunumpy, cupy, traceback
        from fusion_semantics_cases import CASES, check_case
        failed = []
        for name, func, args in CASES:
            try:
                check_case(func, args, cupy.asarray)
            except Exception:
                failed.append(name + ": " + traceback.format_exc(limit=2))
        print("\\n".join(failed))
        raise SystemExit(1 if failed else 0)
    """
    env = {**os.environ, "CUNUMPY_FAKE_CUPY": "1", "OMP_NUM_THREADS": "1"}
    env.pop("CUNUMPY_BACKEND", None)
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
        cwd=TESTS,
    )
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-3000:]


def test_argument_updated_in_place_that_aliases_another_on_the_emulated_device():
    # `f(x, x.T)` and `f(x, x)` with two in-place updates: NumPy's result (the call runs unfused)
    code = """
        import numpy as np, cunumpy as xp, cupy

        def add_twice(x, y):
            x += y
            x += y

        want = np.arange(16.0).reshape(4, 4)
        add_twice(want, want.T)
        a = cupy.asarray(np.arange(16.0).reshape(4, 4))
        xp.fuse(add_twice)(a, a.T)
        np.testing.assert_array_equal(xp.to_numpy(a), want)
        b = cupy.asarray(np.ones(4))
        xp.fuse(add_twice)(b, b)
        np.testing.assert_array_equal(xp.to_numpy(b), 4.0)
    """
    env = {**os.environ, "CUNUMPY_FAKE_CUPY": "1", "OMP_NUM_THREADS": "1"}
    env.pop("CUNUMPY_BACKEND", None)
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        cwd=TESTS,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
