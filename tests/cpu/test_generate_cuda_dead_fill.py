"""The translator leaves out the zero fill of a local ``zeros(...)`` array only where it proves
that no read can see the zeros (the B-spline recurrence of struphy's ``b_d_splines_slim``:
``left[j]`` written at the top of iteration ``j``, only ``left[0..j]`` read), and keeps it
wherever a read could: the generated CUDA agrees with the host kernel on the emulated device in
both cases, and the kernels that need their zeros would give other numbers without them."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from cunumpy.kernel_testing import assert_kernels_agree
from cunumpy.kernels import Kernel, generate_cuda

TESTS = Path(__file__).resolve().parents[1]
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))

import port_fill_kernels as pf  # noqa: E402
from port_test_support import needs_compiler  # noqa: E402

NOTE = "not filled with zeros: the loop below writes each element before any read of it"


def fills(src: str, name: str) -> bool:
    return f"{name}_data[cunumpy_f] = (double)0;" in src


def test_recurrence_locals_are_declared_without_their_fill():
    src = str(generate_cuda(pf.bspline_values))
    assert src.count(NOTE) == 2
    assert not fills(src, "left") and not fills(src, "right")
    # the declaration and the size check stay
    assert "left = CArray1D<double>{left_data, {(long long)(degree)}};" in src
    assert "local array 'right'" in src


def test_zeros_a_helper_overwrites_whole_are_declared_without_their_fill():
    src = str(generate_cuda(pf.rows_via_helper))
    assert src.count(NOTE) == 1
    assert not fills(src, "row")


@pytest.mark.parametrize(
    ("kernel", "array"),
    [
        (pf.reads_ahead, "acc"),
        (pf.read_after_loop, "acc"),
        (pf.conditional_write, "acc"),
        (pf.handed_to_helper, "acc"),
        (pf.zeros_in_a_branch, "acc"),
        (pf.rows_via_tail_helper, "row"),
        (pf.rows_via_reading_helper, "row"),
    ],
)
def test_fills_a_read_can_see_are_kept(kernel, array):
    src = str(generate_cuda(kernel))
    assert NOTE not in src
    assert fills(src, array)


def test_the_kept_fills_matter():
    """The kernels that keep their fills read zeros: the host result differs from one where
    the locals start with other values (so the parity tests below would catch a dropped fill)."""
    x = np.linspace(0.5, 1.5, 11)
    values = np.linspace(-1.0, 1.0, 44).reshape(11, 4)
    pf_sevens = dict(vars(pf))
    pf_sevens["zeros"] = lambda n, dtype=float: np.full(n, 7.0)
    for kernel, args in [
        (pf.reads_ahead, (x, 5)),
        (pf.read_after_loop, (x, 5)),
        (pf.conditional_write, (x, 5)),
        (pf.rows_via_tail_helper, (values,)),
        (pf.rows_via_reading_helper, (values,)),
    ]:
        out, out_sevens = np.zeros(11), np.zeros(11)
        kernel(*args[:1], out, *args[1:])
        type(kernel)(kernel.__code__, pf_sevens)(*args[:1], out_sevens, *args[1:])
        assert not np.allclose(out, out_sevens), kernel.__name__


@needs_compiler
@pytest.mark.parametrize("label", sorted(pf.CASES))
def test_generated_kernel_matches_the_host_kernel(label, emulated):
    host, make_args = pf.CASES[label]
    src = generate_cuda(host)
    out = assert_kernels_agree(Kernel(host, src.cuda_kernel()), make_args, rtol=1e-12, atol=1e-12)
    assert any(np.any(a != 0) for a in out.values())
