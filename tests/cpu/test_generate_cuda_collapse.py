"""``xp.kernels.generate_cuda`` collapsing loop nests (tests/port_collapse_kernels.py): the
perfect nest of independent loops under the parallel one runs as one flat thread index (one
thread per grid point, the innermost loop fastest), as deep as every write stays owned by one
iteration of the nest; the generated kernels agree with their host versions on the emulated
device, the threads shuffled (a race between threads would show)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import cunumpy as xp
from cunumpy.kernel_testing import (
    assert_kernels_agree,
)
from cunumpy.kernels import Kernel, generate_cuda

TESTS = Path(__file__).resolve().parents[1]
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))

import port_collapse_kernels as pc  # noqa: E402
from port_test_support import needs_compiler  # noqa: E402


def _normal(rng, *shape):
    return xp.asarray(rng.normal(size=shape))


def args_scale_2d(backend, seed):
    rng = np.random.default_rng(seed)
    return (_normal(rng, 7, 5), xp.zeros((7, 5)), 0.5)


def args_shifted_3d(backend, seed):
    rng = np.random.default_rng(seed)
    s, e, p = np.array([2, 1, 3]), np.array([6, 4, 9]), np.array([1, 2, 1])
    shape = tuple(p + e - s + 2)
    return (
        _normal(rng, *shape),
        xp.zeros(shape),
        xp.asarray(s),
        xp.asarray(e),
        xp.asarray(p),
    )


def args_row_dot(backend, seed):
    rng = np.random.default_rng(seed)
    return (_normal(rng, 6, 4, 5), _normal(rng, 5), xp.zeros((6, 4)))


def args_tensor_fixed(backend, seed):
    rng = np.random.default_rng(seed)
    return (_normal(rng, 5, 3), _normal(rng, 4, 2), _normal(rng, 3, 2), xp.zeros((5, 4)))


def args_histogram_2d(backend, seed):
    rng = np.random.default_rng(seed)
    return (xp.asarray(rng.integers(0, 7, size=(9, 8))), _normal(rng, 9, 8), xp.zeros(7))


def args_last_in_row(backend, seed):
    rng = np.random.default_rng(seed)
    return (_normal(rng, 6, 5), xp.zeros(6), xp.zeros((6, 5)))


def args_row_totals(backend, seed):
    rng = np.random.default_rng(seed)
    return (_normal(rng, 6, 5), xp.zeros(6))


def args_lower_triangle(backend, seed):
    rng = np.random.default_rng(seed)
    return (_normal(rng, 6, 6),)


def args_diag_rows_3d(backend, seed):
    rng = np.random.default_rng(seed)
    return (_normal(rng, 4, 3, 5), xp.zeros((4, 3, 5)), xp.asarray(np.array([3, 2, 4])))


def args_carried_level(backend, seed):
    rng = np.random.default_rng(seed)
    return (_normal(rng, 5, 4), xp.zeros((5, 4)))


def args_masked_3d(backend, seed):
    rng = np.random.default_rng(seed)
    m1, m3 = rng.normal(size=4), rng.normal(size=6)
    m1[1], m3[2] = -1.0, -1.0  # at least one skipped
    return (_normal(rng, 4, 3, 6), xp.asarray(m1), xp.asarray(m3), xp.zeros((4, 3, 6)))


def args_tensor_helper(backend, seed):
    rng = np.random.default_rng(seed)
    return (_normal(rng, 5, 3), _normal(rng, 3, 4), xp.zeros((5, 4)))


# kernel: (arguments, the loops collapsed with the parallel one, the thread count of the
# arguments of seed 0)
CASES = {
    "scale_2d": (args_scale_2d, ("j",), 7 * 5),
    "shifted_3d": (args_shifted_3d, ("i2", "i3"), 5 * 4 * 4),
    "row_dot": (args_row_dot, ("j",), 6 * 4),
    "tensor_fixed": (args_tensor_fixed, ("j",), 5 * 4),
    "histogram_2d": (args_histogram_2d, ("j",), 9 * 8),
    "last_in_row": (args_last_in_row, (), 6),
    "row_totals": (args_row_totals, (), 6),
    "lower_triangle": (args_lower_triangle, (), 6),
    "diag_rows_3d": (args_diag_rows_3d, ("i2", "i3"), 4 * 3 * 5),
    "carried_level": (args_carried_level, (), 5),
    "masked_3d": (args_masked_3d, ("j", "k"), 4 * 3 * 6),
    "tensor_helper": (args_tensor_helper, ("j",), 5 * 4),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_what_is_collapsed(name):
    make, collapsed, threads = CASES[name]
    src = generate_cuda(getattr(pc, name))
    assert tuple(v for v, _ in src.collapsed) == collapsed
    with xp.use_backend("numpy"):
        assert src.n_threads_of(make("numpy", 0)) == threads
    first = src.describe().splitlines()[0]
    if collapsed:
        names = ", ".join([src.loop_var, *collapsed])
        assert f"one ({names}) per thread" in first, first
        assert "collapsed with the loops nested in it" in src
    else:
        assert "collapsed" not in first
        assert "one iteration per thread" in src


def test_decisions_name_the_collapsed_loops():
    src = generate_cuda(pc.shifted_3d)
    text = src.describe()
    assert text.splitlines()[0] == (
        "shifted_3d: parallel loop `for i1 in range(...)` at line 22, collapsed with "
        "`for i2` at line 24, `for i3` at line 25: one (i1, i2, i3) per thread"
    )
    assert "write to out: indexed by (i1, i2, i3): safe" in text
    assert src.collapsed == (("i2", 24), ("i3", 25))


@needs_compiler
@pytest.mark.parametrize("name", sorted(CASES))
def test_collapsed_kernels_agree_with_the_host_kernel(name, emulated):
    host = getattr(pc, name)
    kernel = Kernel(host, generate_cuda(host).cuda_kernel())
    assert_kernels_agree(kernel, CASES[name][0], rtol=1e-12, atol=1e-12, shuffle_seed=5)


@needs_compiler
def test_any_launch_shape_covers_the_nest(emulated):
    """The flat index is grid-stride: fewer threads than points still cover every point."""
    src = generate_cuda(pc.scale_2d)
    kernel = src.cuda_kernel()
    rng = np.random.default_rng(1)
    a = rng.normal(size=(7, 5))
    expected = np.zeros((7, 5))
    pc.scale_2d(a, expected, 0.5)
    with xp.use_backend("cupy"):
        b = xp.zeros((7, 5))
        kernel(xp.asarray(a), b, 0.5, n_threads=3)
        np.testing.assert_allclose(xp.to_numpy(b), expected, rtol=1e-15, atol=0)


GRID_KERNEL = """
def scale(a: "float[:,:,:]", b: "float[:,:,:]", c: float):
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            for k in range(a.shape[2]):
                b[i, j, k] = c * a[i, j, k]
"""

GRID_TEST_ARGS = """
import numpy as np

import cunumpy as xp

RTOL = 1e-12
ATOL = 1e-12


def make_args(backend, seed):
    rng = np.random.default_rng(seed)
    return (xp.asarray(rng.normal(size=(4, 3, 5))), xp.zeros((4, 3, 5)), 1.5)
"""


@needs_compiler
def test_port_command_says_which_loops_are_collapsed(tmp_path):
    import os
    import subprocess

    folder = tmp_path / "gridpkg" / "scale"
    folder.mkdir(parents=True)
    (tmp_path / "gridpkg" / "__init__.py").write_text("")
    (folder / "__init__.py").write_text("")
    (folder / "scale_kernels.py").write_text(GRID_KERNEL)
    (folder / "scale_test_args.py").write_text(GRID_TEST_ARGS)
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    result = subprocess.run(
        [sys.executable, "-m", "cunumpy", "port", "gridpkg.scale.scale_kernels:scale"],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert (
        "parallel loop `for i in range(...)` at line 3, collapsed with `for j` at line 4, "
        "`for k` at line 5: one (i, j, k) per thread" in result.stdout
    )
    assert "line 6: write to b: indexed by (i, j, k): safe" in result.stdout
    assert "parity: the generated kernel agrees with the host kernel" in result.stdout
    written = (folder / "scale_cuda.cu").read_text()
    assert "collapsed with the loops nested in it (lines 3, 4, 5" in written
