"""The translator leaves out the zero fill of a local ``zeros(...)`` array only where it proves
that no read can see the zeros (the B-spline recurrence of struphy's ``b_d_splines_slim``:
``left[j]`` written at the top of iteration ``j``, only ``left[0..j]`` read), and keeps it
wherever a read could: the generated CUDA agrees with the host kernel on the emulated device in
both cases, and the kernels that need their zeros would give other numbers without them."""

from __future__ import annotations

import inspect
import re
import sys
import textwrap
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

NOTE = "not filled with zeros: no read below can see them (each element it reads is written first)"


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


PARTIAL = "filled only past the elements that the code below writes before any read of them"


def fill_start(helper: str, array: str) -> str | None:
    """Where the generated fill of the argument ``array`` of ``helper`` (one of the
    ``splines_*`` helpers ``each_splines`` calls) starts: ``"0"`` for the whole fill, the start
    expression for a partial one, ``None`` without a fill."""
    src = str(generate_cuda(pf.each_splines))
    body = src[src.index(f"__device__ void {helper}(") :]
    body = body[: body.index("\n}\n")]
    if f"{array}(cunumpy_k0) = 0.0;" in body:
        return "0"
    m = re.search(rf"{array}\(\((.*) \+ cunumpy_k0\)\) = 0\.0;", body)
    return m.group(1) if m else None


def test_an_argument_the_recurrence_writes_is_filled_only_past_what_it_writes():
    """struphy's ``b_d_splines_slim``: bn[0] and bn[j + 1] in iteration j are written before
    any read, so only bn[degree + 1:] keeps the fill; bd, written whole in the last iteration
    and never read, only bd[degree:]."""
    assert fill_start("splines_into", "bn") == "(cunumpy_port_max<long long>(degree, 0) + 1)"
    # bd[0..degree] is written in the last iteration, under `if j == degree - 1`
    assert fill_start("splines_into", "bd") == "cunumpy_port_max<long long>(degree, 0)"
    # also bn[0] of reading_ahead and other_condition, and bd of those writing bd[j] in each j
    # and the driver's own bn and bd, whose copy loops write them whole
    assert str(generate_cuda(pf.each_splines)).count(PARTIAL) == 8


@pytest.mark.parametrize(
    ("helper", "start"),
    [
        ("splines_reading_ahead", "1"),  # bn[0] = 1.0 only: the loop reads ahead
        ("splines_other_condition", "1"),  # pd is not j under `if j == degree - 2`
        ("splines_without_first", "0"),  # iteration 0 reads bn[0]'s zero
    ],
)
def test_an_argument_fill_a_read_can_see_stays(helper, start):
    assert fill_start(helper, "bn") == start


def test_an_argument_written_in_another_iteration_than_the_last_keeps_its_fill():
    # bd[0..degree - 1] written under `if j == degree - 2`: not the last iteration
    assert fill_start("splines_other_condition", "bd") == "0"


def test_the_kept_argument_fills_matter():
    """Filling only bn[degree + 1:] would change what the kernels whose fill stays compute
    (so the parity tests below would catch such a fill), and not what the one without it does."""
    knots, degree, x, bn_out, bd_out, _ = (np.asarray(a) for a in pf._splines_case(0)(None, 3))
    for name, changes in [
        ("splines_into", False),
        ("splines_reading_ahead", True),
        ("splines_other_condition", True),
        ("splines_without_first", True),
    ]:
        namespace = dict(vars(pf))
        source = textwrap.dedent(inspect.getsource(getattr(pf, name)))
        exec(source.replace("bn[:] = 0.0", "bn[degree + 1 :] = 0.0"), namespace)  # noqa: S102
        outs = []
        for helper in (getattr(pf, name), namespace[name]):
            bn, bd = bn_out.copy(), bd_out.copy()
            for i in range(x.size):
                helper(knots, int(degree), x[i], bn[i], bd[i])
            outs.append(np.concatenate([bn.ravel(), bd.ravel()]))
        assert (not np.array_equal(*outs)) == changes, name


def helper_body(kernel, helper: str) -> str:
    """The generated text of ``helper``, a helper that ``kernel`` calls."""
    src = str(generate_cuda(kernel))
    at = re.search(rf"__device__ \w+ {helper}\(", src).start()
    return src[at : src.index("\n}\n", at)]


def test_the_recurrence_table_and_its_divisors_go_without_their_fill():
    """struphy's ``b_der_splines_slim``: ``values`` is read only up to the diagonal of rows
    written before (no fill), ``diff`` written by each inner iteration before its read (the
    fill starts past its length)."""
    body = helper_body(pf.each_table, "der_table")
    assert "values_data[cunumpy_f]" not in body and NOTE in body
    assert "cunumpy_f = cunumpy_port_max<long long>(p, 0); cunumpy_f < diff.size()" in body


def test_a_table_read_above_its_diagonal_and_a_divisor_read_first_keep_their_fills():
    assert "values_data[cunumpy_f]" in helper_body(pf.each_table, "table_reading_above")
    assert "cunumpy_f = 0; cunumpy_f < diff.size()" in helper_body(pf.each_table, "diff_read_first")


def test_what_the_tables_leave_unread_does_not_matter():
    """Sevens instead of zeros change nothing for ``der_table`` and change what the other two
    compute (so the parity tests below would catch a fill dropped there)."""
    knots, x = np.linspace(0.0, 1.0, 12), np.linspace(0.42, 0.5, 9)

    def run(namespace, which):
        out = np.zeros((9, 8))
        type(pf.each_table)(pf.each_table.__code__, namespace)(knots, x, out, 3, which)
        return out

    sevens = dict(vars(pf), zeros=lambda shape, dtype=float: np.full(shape, 7.0))
    for name in ("der_table", "table_reading_above", "diff_read_first"):
        sevens[name] = type(getattr(pf, name))(getattr(pf, name).__code__, sevens)
    for which, changes in [(0, False), (1, True), (2, True)]:
        # der_table writes all of bn and der; the other two only bn[0] (the driver's own zeros
        # turn to sevens too)
        cols = slice(None) if which == 0 else slice(0, 1)
        plain, with_sevens = run(dict(vars(pf)), which)[:, cols], run(sevens, which)[:, cols]
        assert (not np.allclose(plain, with_sevens)) == changes, which


DEFERRED = "filled just before the call that first receives it, past what that call writes first"


def deferred_start(src: str, array: str) -> str | None:
    m = re.search(rf"for \(long long cunumpy_f = (.*); cunumpy_f < {array}\.size\(\)", src)
    return m.group(1) if m else None


def test_a_local_a_helper_writes_first_is_filled_before_the_call_past_what_it_writes():
    """struphy's ``der1 = zeros(p + 1)`` handed to ``b_der_splines_slim``, which writes
    der[0..=p] and reads none: the fill moves to the call and starts at p + 1."""
    src = str(generate_cuda(pf.each_derivs))
    assert src.count(DEFERRED) == 1
    assert deferred_start(src, "der") == "(cunumpy_port_max<long long>(p, 0) + 1)"
    assert src.index("the zeros of 'der'") < src.index("derivs_into(p, x(i), der);")


def test_a_local_whose_helper_skips_an_element_keeps_that_elements_fill():
    src = str(generate_cuda(pf.each_derivs_skipping_one))
    assert deferred_start(src, "der") == "1"  # der[0] only: the loop starts at 2


def test_what_the_helper_writes_first_does_not_need_its_zeros():
    """Sevens instead of zeros in der[0..=p] change nothing for ``derivs_into`` (it writes them
    before anyone reads them) and change ``derivs_skipping_one``'s result (der[1] is read)."""
    x, p = np.linspace(0.5, 1.5, 11), 5

    def sevens_first(n, dtype=float):
        a = np.zeros(n)
        a[: p + 1] = 7.0
        return a

    namespace = dict(vars(pf), zeros=sevens_first)
    for kernel, changes in [(pf.each_derivs, False), (pf.each_derivs_skipping_one, True)]:
        out, out_sevens = np.zeros(11), np.zeros(11)
        kernel(x, out, p)
        type(kernel)(kernel.__code__, namespace)(x, out_sevens, p)
        assert (not np.array_equal(out, out_sevens)) == changes, kernel.__name__


@needs_compiler
@pytest.mark.parametrize("label", sorted(pf.CASES))
def test_generated_kernel_matches_the_host_kernel(label, emulated):
    host, make_args = pf.CASES[label]
    src = generate_cuda(host)
    out = assert_kernels_agree(Kernel(host, src.cuda_kernel()), make_args, rtol=1e-12, atol=1e-12)
    assert any(np.any(a != 0) for a in out.values())
