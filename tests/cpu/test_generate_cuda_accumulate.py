"""``xp.kernels.generate_cuda`` on accumulation kernels in struphy's style: the loop hands each
marker to a helper that adds into a shared grid at cells computed from the marker's position
(``particle_to_mat_kernels`` / ``filler_kernels``). The ``+=`` / ``-=`` inside the helpers
become atomic adds (tests/gpu/test_generate_cuda_gpu.py shows plain adds losing updates on
the GPU); any other write or a read of the shared grid in a helper is refused, naming the
helper, its line and the array."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import cunumpy as xp
from cunumpy.exceptions import CudaPortRaceError, CudaPortUnsupportedError
from cunumpy.kernel_testing import (
    assert_kernels_agree,
)
from cunumpy.kernels import Kernel, generate_cuda

TESTS = Path(__file__).resolve().parents[1]
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))

import port_accumulate_kernels as pa  # noqa: E402
from port_test_support import needs_compiler  # noqa: E402

HELPERS = str(TESTS / "port_accumulate_helpers.py")


def _markers(rng, n):
    m = np.empty((n, 3))
    m[:, 0] = rng.uniform(0.0, 1.0, size=n)
    m[:, 1] = rng.uniform(0.0, 1.0, size=n)
    m[:, 2] = rng.uniform(0.5, 1.5, size=n)
    m[::9, 2] = -1.0  # holes, skipped
    return m


def args_charge_1d(backend, seed):
    rng = np.random.default_rng(seed)
    return (xp.asarray(_markers(rng, 400)), 400, xp.zeros(12), 1.0 / 12)


def args_charge_2d(backend, seed):
    rng = np.random.default_rng(seed)
    return (xp.asarray(_markers(rng, 400)), 400, xp.zeros((6, 5)), 1.0 / 6)


CASES = {"charge_1d": args_charge_1d, "charge_2d": args_charge_2d}


def test_plus_equal_in_helpers_becomes_atomic_adds():
    src = generate_cuda(pa.charge_2d)
    assert src.writes == (("grid", 41, "atomic"),)
    assert src.atomics == ("grid",)
    assert src.helpers == (
        "port_accumulate_helpers__add_cell",
        "port_accumulate_helpers__fill_grid",
    )
    # the helper that adds, reached through the one the kernel calls
    assert (
        "// port_accumulate_helpers.py:28: grid[(i + k) % n0, j % n1] += w * b[k] * (1.0 - gy)\n"
        "        cunumpy_atomic_add(&grid(" in src
    )
    assert src.count("cunumpy_atomic_add(") == 2
    assert "#include <cunumpy/atomic.cuh>" in src
    assert (
        "// Atomic adds in helpers (their parameter receives a shared array they only add "
        "into): port_accumulate_helpers__add_cell(grid), port_accumulate_helpers__fill_grid(grid)."
        in src
    )
    assert "line 41: write to grid: atomic add" in src.describe()
    # a helper of the kernel's own module, adding itself and through another
    one = generate_cuda(pa.charge_1d)
    assert one.atomics == ("grid",)
    assert one.count("cunumpy_atomic_add(") == 2
    assert (
        "__device__ void scale_add(long long i, double s, double w, CArray1D<double> grid)" in one
    )


@needs_compiler
@pytest.mark.parametrize("name", sorted(CASES))
def test_helper_accumulation_agrees_with_the_host_kernel(name, emulated):
    host = getattr(pa, name)
    kernel = Kernel(host, generate_cuda(host).cuda_kernel())
    out = assert_kernels_agree(
        kernel, CASES[name], rtol=1e-12, atol=1e-12, outputs=["grid"], shuffle_seed=3
    )
    (grid,) = out.values()
    # every valid marker's weight lands on the grid (the bilinear weights sum to one)
    markers = _markers(np.random.default_rng(0), 400)
    assert grid.sum() == pytest.approx(markers[markers[:, 2] >= 0.0, 2].sum(), rel=1e-12)


@pytest.mark.parametrize(
    ("kernel", "helper", "line", "what", "construct"),
    [
        (
            "set_in_helper",
            "port_accumulate_helpers__set_cell",
            35,
            "assigns (=)",
            "helper writes array",
        ),
        (
            "read_in_helper",
            "port_accumulate_helpers__add_neighbour",
            41,
            "reads",
            "read of accumulated array",
        ),
    ],
)
def test_other_writes_in_helpers_are_refused_naming_helper_line_and_array(
    kernel, helper, line, what, construct
):
    with pytest.raises(CudaPortRaceError) as info:
        generate_cuda(getattr(pa, kernel))
    err = info.value
    assert (err.function, err.line, err.array, err.construct) == (helper, line, "grid", construct)
    assert err.file == HELPERS
    assert f"{helper}, line {line} of {HELPERS}: {helper}() {what}" in str(err)
    assert "'grid' (the kernel's 'grid', which every iteration shares)" in str(err)


def test_assignment_in_a_helper_of_the_same_module_is_refused():
    with pytest.raises(CudaPortRaceError) as info:
        generate_cuda(pa.set_same_module)
    err = info.value
    # store_helper writes at the index it is given (helper_owned.rs), which is not the loop
    # variable: refused at the kernel's call
    assert (err.function, err.line, err.array) == ("set_same_module", 64, "grid")
    assert "to store_helper(), which writes it at the index it is given" in str(err)


@pytest.mark.parametrize(
    ("kernel", "line", "array"),
    [("local_and_shared", 72, "tmp"), ("scratch_and_shared", 107, "args.w")],
)
def test_a_thread_own_array_where_the_helper_adds_atomically_is_refused(kernel, line, array):
    """A local array or a struct's scratch field is the thread's own (local memory), where
    atomic adds are not defined: the helper adding atomically into the grid cannot take it."""
    with pytest.raises(CudaPortUnsupportedError) as info:
        generate_cuda(getattr(pa, kernel))
    err = info.value
    assert (err.function, err.line, err.array) == (kernel, line, array)
    assert f"passes '{array}', an array of the thread's own" in str(err)
    assert "scale_add(), whose adds into 'grid' are atomic" in str(err)
