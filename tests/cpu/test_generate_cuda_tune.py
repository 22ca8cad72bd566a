"""``GeneratedCuda.tuned_kernel``: every candidate build is launched on the caller's arguments,
and what the kernel writes (in place, atomically, into a struct's field) is put back before
each launch and after the last, so the arguments end as they began and one launch of the
chosen build does what one launch of the host kernel does. On the emulated device (timing
there says nothing about a GPU; the choice's mechanics are what is tested)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import cunumpy as xp
from cunumpy.exceptions import InvalidArgumentError
from cunumpy.kernels import CudaKernel, Kernel, generate_cuda

TESTS = Path(__file__).resolve().parents[1]
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))

import port_kernels as pk  # noqa: E402
from port_cases import args_deposit_1d, args_push  # noqa: E402
from port_test_support import needs_compiler  # noqa: E402

TWO = {
    "shipped": {},
    "trap-only checks": {"options": ["-DCUNUMPY_PORT_CAP_TRAP_ONLY"]},
}


def _numpy(args):
    return [xp.to_numpy(a) if hasattr(a, "shape") else a for a in args]


def _tune_in_place(tune, make_args, seed, **options):
    """``(args, tune(*args, **options))`` on the device, the arguments checked to end as
    they began."""
    args = make_args("cupy", seed)
    before = _numpy(args)
    result = tune(*args, **options)
    for a, b in zip(_numpy(args), before, strict=True):
        np.testing.assert_array_equal(a, b)
    return args, result


@needs_compiler
@pytest.mark.parametrize(
    ("host", "make_args"), [(pk.push_v_rotation, args_push), (pk.deposit_1d, args_deposit_1d)]
)
def test_tuning_leaves_the_arguments_as_they_were_and_the_choice_agrees(host, make_args, emulated):
    src = generate_cuda(host)
    with xp.use_backend("cupy"):
        # in place (push) and atomic (deposit) writes: every round's launches, none left over
        args, kernel = _tune_in_place(src.tuned_kernel, make_args, 7, repeats=3)
        assert set(src.tuning["ms"]) == {
            "shipped",
            "trap-only checks",
            "trap-only checks, 80 registers",
        }
        assert src.tuning["chosen"] == min(src.tuning["ms"], key=src.tuning["ms"].get)
        assert all(ms > 0 for ms in src.tuning["ms"].values())
        kernel(*args)
        expected = _numpy(make_args("numpy", 7))
        host(*expected)
        for a, b in zip(_numpy(args), expected, strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


@needs_compiler
def test_tuning_puts_back_a_struct_field_the_kernel_adds_into(emulated):
    src = generate_cuda(pk.deposit_on_grid)
    assert src.writes == (("args.coef", 186, "atomic"),)
    rng = np.random.default_rng(3)
    xs, coef, shift = rng.uniform(0.0, 1.0, (200, 2)), rng.normal(size=(8, 8)), np.array([3])
    with xp.use_backend("cupy"):
        args = src.structs[0](
            coef=xp.asarray(coef), h=1.0 / 8, nx=8, shift=xp.asarray(shift), n_cells=8
        )
        kernel = src.tuned_kernel(xp.asarray(xs), args, 200, candidates=TWO, repeats=2)
        np.testing.assert_array_equal(xp.to_numpy(args.values["coef"]), coef)
        kernel(xp.asarray(xs), args, 200)
        host_args = pk.GridArguments(coef.copy(), 1.0 / 8, 8, shift)
        pk.deposit_on_grid(xs, host_args, 200)
        np.testing.assert_allclose(xp.to_numpy(args.values["coef"]), host_args.coef, rtol=1e-12)
        assert set(src.tuning["ms"]) == set(TWO)


def test_tuning_names_the_kernel_and_what_is_missing_or_wrong():
    src = generate_cuda(pk.push_v_rotation)
    with pytest.raises(
        InvalidArgumentError, match=r"push_v_rotation: tuning needs argument 'markers'"
    ):
        src.tuned_kernel()
    with pytest.raises(InvalidArgumentError, match=r"expected an array for 'markers', got float"):
        src.tuned_kernel(1.0, np.zeros(3), 0.1, 1)
    markers = np.zeros((1, 7))
    with pytest.raises(InvalidArgumentError, match=r"repeats: expected an int >= 1, got 0"):
        src.tuned_kernel(markers, np.zeros(3), 0.1, 1, repeats=0)
    with pytest.raises(InvalidArgumentError, match=r"at least one candidate build"):
        src.tuned_kernel(markers, np.zeros(3), 0.1, 1, candidates={})


@needs_compiler
def test_kernel_tune_generates_the_chosen_build_and_keeps_it(emulated):
    """``Kernel(host, missing_cuda="generate").tune(*args)``: the CUDA version is the tuner's
    choice on those arguments, they end as they began, and later calls run that build."""
    kernel = Kernel(pk.push_v_rotation, missing_cuda="generate")
    with xp.use_backend("cupy"):
        args, chosen = _tune_in_place(kernel.tune, args_push, 11, repeats=2)
        assert kernel.cuda_kernel is chosen and kernel.get_kernel() is chosen
        tuning = kernel.generated_cuda.tuning
        assert tuning["chosen"] in tuning["ms"] and len(tuning["ms"]) == 3
        kernel(*args)  # through the dispatcher: the kept build
    expected = _numpy(args_push("numpy", 11))
    pk.push_v_rotation(*expected)
    for a, b in zip(_numpy(args), expected, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_kernel_tune_names_the_kernel_and_why_it_cannot(emulated):
    hand = CudaKernel(
        'extern "C" __global__ void push_v_rotation(double* m, const double* b, double dt, '
        "long long n) {}",
        "push_v_rotation",
    )
    with pytest.raises(InvalidArgumentError, match=r"'push_v_rotation'.* written by hand"):
        Kernel(pk.push_v_rotation, hand, missing_cuda="generate").tune()
    with pytest.raises(
        InvalidArgumentError, match=r"expected missing_cuda='generate', got missing_cuda='raise'"
    ):
        Kernel(pk.push_v_rotation).tune()
    generated = Kernel(pk.push_v_rotation, missing_cuda="generate")
    with xp.use_backend("cupy"):
        generated.get_kernel()  # generated (the shipped build) and in use
        with pytest.raises(InvalidArgumentError, match=r"already generated and in use"):
            generated.tune(*args_push("cupy", 1))
