"""The tiled mapping of fused stencils on the emulated device (``CUNUMPY_FAKE_CUPY=1``): a
2-D five-point Laplacian and a 3-D seven-point one, odd sizes whose tiles do not divide the
shape, negative steps, non-contiguous inputs, float32 and float64, each bit for bit NumPy's
result (the generated CUDA C runs in the CPU emulator, every pointer bounds-checked); and
``CUNUMPY_FUSION_STENCIL_TILES`` choosing the rows per lane or the flat mapping."""

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

CASES = """
import json
import numpy as np
import cupy
from cunumpy.kernels import fuse

rng = np.random.default_rng(7)


def lap(u):
    return u[1:-1, 2:] + u[1:-1, :-2] + u[2:, 1:-1] + u[:-2, 1:-1] - 4.0 * u[1:-1, 1:-1]


def lap3(u):
    m = slice(1, -1)
    return (
        u[2:, m, m] + u[:-2, m, m] + u[m, 2:, m] + u[m, :-2, m] + u[m, m, 2:] + u[m, m, :-2]
        - 6.0 * u[m, m, m]
    )


CASES = {
    # 43 rows: five whole tiles of eight and a cut one; 69 columns: three warps, the last
    # with five lanes
    "odd_f64": (lap, [rng.standard_normal((45, 71))]),
    "odd_f32": (lap, [rng.standard_normal((19, 40)).astype(np.float32)]),
    "negative_steps": (lambda u: lap(u[::-1, ::-2]), [rng.standard_normal((30, 101))]),
    "non_contiguous": (lap, [rng.standard_normal((60, 90))[::2, 3:]]),
    "laplacian_3d": (lap3, [rng.standard_normal((7, 13, 37))]),
    "row_vector": (
        lambda u, w: (u[2:] - u[:-2]) * w[None, :],
        [rng.standard_normal((21, 33)), rng.standard_normal(33).astype(np.float32)],
    ),
}
report = {}
for name in NAMES:
    f, args = CASES[name]
    fused = fuse(f, kernel_name=name)
    dev = [cupy.asarray(a) for a in args]
    got = cupy.asnumpy(fused(*dev))
    want = f(*args)
    source = fused.plan(*dev).cuda_source()
    report[name] = {
        "tiled": "tile < nt" in source,
        "same": got.dtype == want.dtype and got.shape == want.shape
        and got.tobytes() == want.tobytes(),
    }
print(json.dumps(report))
"""


def run_fake(names, tiles=None):
    env = {**os.environ, "CUNUMPY_FAKE_CUPY": "1", "OMP_NUM_THREADS": "1"}
    env.pop("CUNUMPY_BACKEND", None)
    env.pop("CUNUMPY_FUSION_STENCIL_TILES", None)
    if tiles is not None:
        env["CUNUMPY_FUSION_STENCIL_TILES"] = tiles
    code = f"import cunumpy\nNAMES = {names!r}\n" + textwrap.dedent(CASES)
    result = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
        cwd=TESTS,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_tiled_stencils_are_numpys_bit_for_bit():
    names = [
        "odd_f64",
        "odd_f32",
        "negative_steps",
        "non_contiguous",
        "laplacian_3d",
        "row_vector",
    ]
    report = run_fake(names)
    assert report == {n: {"tiled": True, "same": True} for n in names}


def test_the_setting_chooses_rows_or_the_flat_mapping():
    # three rows a lane (43 rows: a cut tile of one), then the flat mapping
    assert run_fake(["odd_f64"], tiles="3") == {"odd_f64": {"tiled": True, "same": True}}
    assert run_fake(["odd_f64"], tiles="0") == {"odd_f64": {"tiled": False, "same": True}}
