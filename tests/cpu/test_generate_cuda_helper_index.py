"""``xp.kernels.generate_cuda`` on helpers that write the marker of the index they are given
(struphy's ``update_position_stage(ip, ..., args_markers)`` writing ``markers[0:3, ip]``
through ``markers = args_markers.markers``): the race proof follows the loop variable into the
helper (and the helpers it passes the struct on to), the writes are the iteration's own, and
the generated CUDA agrees with the host kernel on the emulated device. A helper writing
another element, or given an index that is not the iteration's, is refused with the line."""

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

import port_helper_index as ph  # noqa: E402
import port_kernels as pk  # noqa: E402
from port_test_support import needs_compiler  # noqa: E402


@needs_compiler
@pytest.mark.parametrize("label", sorted(ph.CASES))
def test_helper_writing_its_index_matches_the_host_kernel(label, emulated):
    host, make_args, outputs = ph.CASES[label]
    src = generate_cuda(host)
    assert {w[2] for w in src.writes} == {"owned"}
    out = assert_kernels_agree(
        Kernel(host, src.cuda_kernel()), make_args, rtol=1e-12, atol=1e-12, outputs=outputs
    )
    assert any(np.any(a != 0) for a in out.values())


def test_the_proof_follows_the_index_into_the_helpers():
    src = generate_cuda(ph.push_stage)
    assert src.writes == (("args.markers", 48, "owned"),)
    # the helpers read the field itself (the local name `markers` inlined)
    assert "__device__ void advance(" in src
    assert "args.markers(" in src
    # the right-hand side reads the rows it writes elsewhere: computed first, as in Python
    assert "cunumpy_rhs[cunumpy_k0] = " in src
    kick = generate_cuda(ph.push_kick)
    assert kick.writes == (("markers", 59, "owned"),)


@pytest.mark.parametrize(
    ("host", "line", "construct", "words"),
    [
        (ph.push_kick_first, 79, "unprovable write", "at the index it is given"),
    ],
)
def test_helpers_writing_other_elements_are_refused(host, line, construct, words):
    # (push_kick_neighbour's helper only adds into the next marker: atomic adds, accepted)
    assert generate_cuda(ph.push_kick_neighbour).atomics == ("markers",)
    with pytest.raises(CudaPortRaceError) as err:
        generate_cuda(host)
    e = err.value
    assert (e.line, e.construct, e.array) == (line, construct, "markers")
    assert words in str(e)


@needs_compiler
def test_slice_reading_its_own_array_elsewhere_matches_the_host_kernel(emulated):
    """``a[1:4, i] = a[0:3, i]``: Python reads the right-hand side whole before it stores."""
    import cunumpy as xp

    def make(backend, seed):
        return xp.asarray(np.random.default_rng(seed).normal(size=(5, 40))), 40

    src = generate_cuda(pk.shift_slice)
    out = assert_kernels_agree(Kernel(pk.shift_slice, src.cuda_kernel()), make)
    (a,) = out.values()
    assert not np.all(a[1] == a[2])  # element by element, rows 1 to 3 would all be row 0


def test_loop_over_an_index_array_runs_one_entry_per_thread():
    src = generate_cuda(ph.flip_listed)
    assert src.n_threads == "inds.shape[0]"
    assert "flip_listed: parallel loop `for ip in inds` at line" in src.describe()
    assert src.loop_var == "ip"
    assert "ip = inds(cunumpy_t);" in src
    # the proof assumes distinct entries; the kernel checks they increase strictly
    assert "if (cunumpy_t > 0 && !(inds(cunumpy_t - 1) < ip)) {" in src
    assert {(w[0], w[2]) for w in src.writes} == {("markers", "owned")}
    with pytest.raises(CudaPortRaceError) as err:
        generate_cuda(ph.flip_listed_and_inds)
    assert (err.value.construct, err.value.array) == ("for", "inds")


@needs_compiler
def test_index_array_not_increasing_stops_the_kernel(emulated):
    import cunumpy as xp
    from cunumpy.exceptions import EmulatedKernelFault

    src = generate_cuda(ph.flip_listed)
    kernel = src.cuda_kernel()
    with xp.use_backend("cupy"):
        markers = xp.asarray(np.ones((10, 20)))
        inds = xp.asarray(np.array([3, 7, 7, 9], dtype=np.int64))
        with pytest.raises(EmulatedKernelFault) as err:
            kernel(markers, inds, 0, n_threads=4)
    assert "the entries of 'inds' do not increase strictly" in str(err.value)
