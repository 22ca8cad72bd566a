"""Reductions over a short last axis (``Strategy::LanesPerRow``: 1 to 16 lanes of a warp per
row) on the emulated device (``CUNUMPY_FAKE_CUPY=1``): the generated CUDA C runs in the CPU
emulator, warp shuffles included, against NumPy for row lengths either side of every lanes
boundary, NaNs, integer dtypes, non-contiguous inputs and a row count that leaves a warp's
last rows past the end."""

import json
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


def run_fake(code):
    env = {**os.environ, "CUNUMPY_FAKE_CUPY": "1", "OMP_NUM_THREADS": "1"}
    env.pop("CUNUMPY_BACKEND", None)
    result = subprocess.run(
        # the fake is installed by `import cunumpy`, before anything imports cupy
        [sys.executable, "-c", "import cunumpy\n" + textwrap.dedent(code)],
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
        cwd=TESTS,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result.stdout


def test_short_row_reductions_match_numpy_on_the_emulated_device():
    out = run_fake(
        """
        import json, traceback
        import numpy as np
        import cupy
        from cunumpy.kernels import fuse

        assert cunumpy._core._fake_backend_active()
        rng = np.random.default_rng(7)
        report = {}

        def check(name, fn, *arrays, lanes=None):
            try:
                f = fuse(fn, kernel_name="short_rows")
                dev = [cupy.asarray(a) for a in arrays]
                got = cupy.asnumpy(f(*dev))
                want = fn(*arrays)
                assert got.dtype == want.dtype, (got.dtype, want.dtype)
                assert got.shape == want.shape, (got.shape, want.shape)
                np.testing.assert_allclose(got, want, rtol=1e-12, atol=0, equal_nan=True)
                if lanes is not None:
                    ks = [k for k in f.plan(*dev).kernels if k["kind"] == "reduction"]
                    assert ks and ks[0]["strategy"] == "lanes_per_row", ks
                    assert ks[0]["lanes_per_row"] == lanes, ks
                report[name] = "ok"
            except Exception:
                report[name] = traceback.format_exc()[-1500:]

        def lanes_for(k):
            q = max(k // 4, 1)
            return min(1 << (q.bit_length() - 1), 16)

        rng_range = lambda a: a.max(axis=1) - a.min(axis=1)
        for k in (1, 2, 3, 7, 8, 15, 16, 17, 32, 33, 64, 65, 127, 128, 1000):
            m = 37  # not a multiple of any rows-per-warp: a warp's last rows are past the end
            a = rng.standard_normal((m, k))
            # (a row of one element is no reduction axis: the planner drops it)
            check(f"range k={k}", rng_range, a, lanes=lanes_for(k) if 1 < k < 128 else None)
            check(f"sum k={k}", lambda x: x.sum(axis=1) * 2.0, a)
            i = rng.integers(-1000, 1000, size=(m, k)).astype(np.int32)
            check(f"int32 sum k={k}", lambda x: x.sum(axis=1), i)
        check("mean k=17", lambda x: x.mean(axis=1), rng.standard_normal((37, 17)))
        check("int32 range k=17", rng_range, rng.integers(-9, 9, size=(37, 17)).astype(np.int32))
        # many rows: every thread of a block busy, more than one block
        a = rng.standard_normal((5000, 16))
        check("range 5000x16", rng_range, a, lanes=4)
        check("range 3001x2", rng_range, rng.standard_normal((3001, 2)), lanes=1)
        check("sum 3001x5", lambda x: x.sum(axis=1), rng.standard_normal((3001, 5)), lanes=1)
        # NaN anywhere in a row (first, middle, last element) gives NaN for max and min
        for k in (1, 5, 17, 65):
            for dt in (np.float64, np.float32):
                a = rng.standard_normal((40, k)).astype(dt)
                a[3, 0] = np.nan
                a[10, k // 2] = np.nan
                a[39, k - 1] = np.nan
                a[20, :] = np.nan
                check(f"nan range {dt.__name__} k={k}", rng_range, a)
                check(f"nan max {dt.__name__} k={k}", lambda x: x.max(axis=1), a)
                check(f"nan min {dt.__name__} k={k}", lambda x: x.min(axis=1), a)
        # integer dtypes and their result dtypes
        for dt in (np.int8, np.uint8, np.int16, np.uint16, np.int64, np.uint64, np.bool_):
            x = rng.integers(0, 100, size=(33, 17)).astype(dt)
            check(f"{dt.__name__} max", lambda v: v.max(axis=1), x)
            check(f"{dt.__name__} min", lambda v: v.min(axis=1), x)
        # non-contiguous inputs: every other column, a transpose, a reversed row, a 3-D
        # reduction over the last two axes
        base = rng.standard_normal((50, 66))
        check("strided columns", rng_range, base[:, ::2], lanes=lanes_for(33))
        check("offset rows", rng_range, base[3:40, 5:21], lanes=4)
        check("transposed", rng_range, np.ascontiguousarray(base[:16, :]).T)
        check("reversed rows", rng_range, base[:, ::-1][:, :15])
        t = rng.standard_normal((21, 3, 5))
        check("3-D last two axes", lambda x: x.max(axis=(1, 2)) - x.min(axis=(1, 2)), t)
        # the first and last axes reduced, the middle kept: rows of 4 x 3 spread over memory
        w = rng.integers(-50, 50, size=(4, 37, 3)).astype(np.int32)
        check(
            "outer and inner axes",
            lambda x: x.max(axis=(0, 2)) - x.sum(axis=(0, 2)),
            w,
            lanes=2,
        )
        # an epilogue reading another array, a keepdims result broadcast back
        b = rng.standard_normal(37)
        a = rng.standard_normal((37, 16))
        check("epilogue input", lambda x, y: x.max(axis=1) * y + x.min(axis=1), a, b)
        check("keepdims back", lambda x: x - x.max(axis=1, keepdims=True), a)
        # a row of zero elements: a sum is 0, max raises as NumPy's does
        z = np.zeros((9, 0))
        check("empty rows sum", lambda x: x.sum(axis=1), z)
        try:
            fuse(lambda x: x.max(axis=1), kernel_name="short_rows")(cupy.asarray(z))
            report["empty rows max"] = "no error"
        except ValueError:
            report["empty rows max"] = "ok"
        except Exception as exc:
            report["empty rows max"] = repr(exc)
        print(json.dumps(report))
        """
    )
    report = json.loads(out.strip().splitlines()[-1])
    assert len(report) >= 80
    failed = {k: v for k, v in report.items() if v != "ok"}
    assert not failed, "\n\n".join(f"{k}:\n{v}" for k, v in failed.items())
