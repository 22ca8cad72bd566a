"""``xp.kernels.generate_cuda`` on parallel loops with a counter (``out[counter] = ...;
counter += 1``, struphy's marker compaction): each iteration recounts the increments of the
iterations before it (at once when every iteration raises the counter alike), the arrays
indexed by the counter are the iteration's own; the generated CUDA agrees with the host
kernel on the emulated device. True loop-carried scalars, counters read without a later
increment and counters whose increments depend on what the loop writes are refused with the
line."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from cunumpy.exceptions import CudaPortRaceError
from cunumpy.kernel_testing import (
    assert_kernels_agree,
)
from cunumpy.kernels import Kernel, generate_cuda

TESTS = Path(__file__).resolve().parents[1]
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))

import port_counters as pc  # noqa: E402
from port_test_support import needs_compiler  # noqa: E402


@needs_compiler
@pytest.mark.parametrize("label", sorted(pc.CASES))
def test_counter_kernel_matches_the_host_kernel(label, emulated):
    host, make_args = pc.CASES[label]
    src = generate_cuda(host)
    assert {w[2] for w in src.writes} == {"owned"}
    out = assert_kernels_agree(Kernel(host, src.cuda_kernel()), make_args, rtol=1e-12, atol=1e-12)
    assert any(np.any(a != 0) for a in out.values())


def test_counter_is_recounted_and_owns_its_rows():
    src = generate_cuda(pc.evaluate_markers)
    assert "const long long cunumpy_counter_init = counter;" in src
    assert "for (long long cunumpy_j = 0; cunumpy_j < i; cunumpy_j += 1) {" in src
    # the recount keeps the tests and the increments, not the writes
    recount = src[src.index("cunumpy_j = 0") : src.index("        e1 = markers(0, i);")]
    assert "e1 = markers(0, cunumpy_j);" in recount
    assert "mat(" not in recount
    # every iteration raises the counter by 1 unless remove_outside: then no recount at all
    assert "if ((((remove_outside) ? 0 : 1)) == (1)) {" in src
    assert "counter = cunumpy_counter_init + i * (((remove_outside) ? 0 : 1));" in src
    assert {(w[0], w[2]) for w in src.writes} == {("mat", "owned")}
    assert "  counters (recounted per iteration): counter" in src.describe()
    two = generate_cuda(pc.pull_markers)
    # range(1, n, 2): the iterations before i are (i - 1) / 2
    assert "counter_o = cunumpy_counter_o_init + (i - 1) / 2 * (1);" in two
    assert "cunumpy_j < i; cunumpy_j += 2" in two
    # a condition that changes with the iteration, one branch raising and one not: the
    # recount always runs
    one = generate_cuda(pc.compact_positive)
    assert "cunumpy_counter_init + " not in one
    assert "if (values(cunumpy_j) > 0.0) {" in one


@pytest.mark.parametrize(
    ("host", "line", "construct", "array", "words"),
    [
        (pc.running_sum, 74, "scalar update", None, "'total'"),
        (pc.counter_read_without_increment, 83, "counter", None, "ends without raising it"),
        (pc.counter_of_written_flags, 93, "counter", "flags", "the parallel loop writes"),
    ],
)
def test_uncountable_scalars_are_refused(host, line, construct, array, words):
    with pytest.raises(CudaPortRaceError) as err:
        generate_cuda(host)
    e = err.value
    assert (e.line, e.construct, e.array) == (line, construct, array)
    assert words in str(e)
    assert host.__name__ in str(e)


@needs_compiler
def test_a_count_added_after_the_loop_stays_a_reduction(emulated):
    import cunumpy as xp

    src = generate_cuda(pc.count_positive)
    assert src.writes == (("out", 158, "reduction"),)
    assert "cunumpy_count_init" in src and "cunumpy_j" not in src

    def make(backend, seed):
        rng = np.random.default_rng(seed)
        return xp.asarray(rng.normal(size=300)), xp.asarray(np.zeros(1))

    out = assert_kernels_agree(Kernel(pc.count_positive, src.cuda_kernel()), make)
    assert all(np.all(a > 100) for a in out.values() if a.shape == (1,))
