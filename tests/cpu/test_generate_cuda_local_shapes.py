"""Local arrays of fixed shape in generated CUDA: their extents are written as numbers, so that
NVRTC sees the trip count of each loop over them, unrolls it and keeps the array in registers
(read from the array view, the loops stayed rolled and struphy's ``push_vxb_implicit`` kept its
3 x 3 matrices in local memory); a local array given a second shape or another array is refused,
since its extents would no longer hold. The generated kernel agrees with the host kernel on the
emulated device."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pytest

from cunumpy.exceptions import CudaPortUnsupportedError
from cunumpy.kernel_testing import assert_kernels_agree
from cunumpy.kernels import Kernel, generate_cuda

TESTS = Path(__file__).resolve().parents[1]
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))

import port_local_shape_kernels as pl  # noqa: E402
from port_test_support import needs_compiler  # noqa: E402

LOCALS = ("identity", "b_prod", "rhs", "lhs", "lhs_inv", "v", "vec", "res")


def line_of(statement: str) -> int:
    """The line of port_local_shape_kernels.py that holds `statement`."""
    lines = Path(pl.__file__).read_text().splitlines()
    return next(i for i, text in enumerate(lines, 1) if text.strip() == statement)


def test_extents_of_fixed_shape_locals_are_numbers():
    src = str(generate_cuda(pl.crank_nicolson_rotation))
    body = src[src.index("__global__") :]
    for name in LOCALS:
        assert f"{name}.shape[" not in src, name
    # the whole-array updates loop over literal extents
    assert "cunumpy_k0 < 3; ++cunumpy_k0" in body
    assert "cunumpy_k1 < 3; ++cunumpy_k1" in body
    # n0, n1 = lhs.shape; v[-1]; len(v)
    assert re.search(r"\bn0 = 3;", body) and re.search(r"\bn1 = 3;", body)
    assert "(res(3 - 1) * 3)" in body


def test_array_arguments_keep_their_extents():
    """A helper's array argument is a view of whatever the caller passes: its extents stay
    read from the view (after inlining, the caller's numbers reach them)."""
    src = str(generate_cuda(pl.crank_nicolson_rotation))
    helper = src[src.index("__device__ void matrix_vector(") :]
    helper = helper[: helper.index("\n}\n")]
    assert "a.shape[0]" in helper and "b.shape[0]" in helper


@pytest.mark.parametrize(
    ("kernel", "statement", "words"),
    [
        (
            pl.reallocated_with_other_shape,
            "w = zeros(4)",
            "allocated with shape [4] here and with shape [3] before",
        ),
        (
            pl.rebound_to_another_array,
            "w = u",
            "rebinding local array 'w' (allocated with shape [3])",
        ),
    ],
)
def test_a_local_given_another_shape_or_array_is_refused(kernel, statement, words):
    with pytest.raises(CudaPortUnsupportedError) as info:
        generate_cuda(kernel)
    assert info.value.line == line_of(statement)
    assert words in str(info.value)


def test_the_refused_kernels_run_on_the_host():
    """They are valid Python: what is refused is only their translation."""
    x, out = np.arange(5.0), np.zeros(5)
    pl.reallocated_with_other_shape(x, out)
    np.testing.assert_array_equal(out, 4.0)
    pl.rebound_to_another_array(x, out)
    np.testing.assert_array_equal(out, x)


@needs_compiler
@pytest.mark.parametrize("label", sorted(pl.CASES))
def test_generated_kernel_matches_the_host_kernel(label, emulated):
    host, make_args = pl.CASES[label]
    src = generate_cuda(host)
    out = assert_kernels_agree(Kernel(host, src.cuda_kernel()), make_args, rtol=1e-12, atol=1e-12)
    assert any(np.any(a != 0) for a in out.values())
