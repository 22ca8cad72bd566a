"""Parity tests: run a ``Kernel``'s host, CUDA and Metal versions on the same inputs and
compare."""

from __future__ import annotations

import contextlib
import random
from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np

from .._backend import use_backend
from .._conversions import is_cupy_array, to_numpy
from ..exceptions import (
    EmulatedKernelFault,
    InvalidArgumentError,
    InvalidArgumentTypeError,
    KernelParityError,
)
from ..kernels._catalog import KernelCatalog
from ..kernels._dispatch import Kernel
from ..kernels._host_impl import use_device_kernel_implementation
from ..kernels._metal_kernel import metal_available
from ._emulation import shuffled_threads
from ._markers import cuda_gate

__all__ = ["TEST_ARGS_SETTINGS", "assert_kernels_agree", "check_parity", "parity_cases"]

#: Optional constants of a ``<name>_test_args.py`` module and the keyword each sets.
TEST_ARGS_SETTINGS: dict[str, str] = {
    "N_THREADS": "n_threads",
    "GRID": "grid",
    "BLOCK": "block",
    "RTOL": "rtol",
    "ATOL": "atol",
    "N_CALLS": "n_calls",
    "OUTPUTS": "outputs",
    "SEED": "seed",
    "SHUFFLE_SEED": "shuffle_seed",
}


def _is_array(value: Any) -> bool:
    return isinstance(value, np.ndarray) or is_cupy_array(value)


def _collect(value: Any, label: str, depth: int, out: dict[str, Any]) -> None:
    if _is_array(value):
        out[label] = value
        return
    if depth >= 2:
        return
    if isinstance(value, (tuple, list)):
        for i, v in enumerate(value):
            _collect(v, f"{label}[{i}]", depth + 1, out)
    elif isinstance(value, dict):
        for k, v in value.items():
            _collect(v, f"{label}[{k!r}]", depth + 1, out)
    else:
        fields = getattr(type(value), "fields", None)
        names: list[str] = []
        if isinstance(fields, dict):
            names = list(fields)
        elif hasattr(value, "__dict__") and not isinstance(value, (type, ModuleType)):
            names = [n for n in vars(value) if not n.startswith("_")]
        for n in names:
            try:
                v = getattr(value, n)
            except AttributeError:
                continue
            _collect(v, f"{label}.{n}", depth + 1, out)


def _selected(kernel: Kernel, args: tuple[Any, ...], outputs: Any) -> dict[str, Any]:
    found: dict[str, Any] = {}
    if outputs is None:
        outputs = kernel.host_kernel.outputs
    if outputs is None:
        for i, a in enumerate(args):
            _collect(a, f"argument {i}", 0, found)
        return found
    names = kernel.host_parameters() or ()
    for entry in outputs:
        field = None
        if isinstance(entry, str) and "." in entry:
            entry, field = entry.split(".", 1)
        if isinstance(entry, str):
            if entry not in names:
                raise InvalidArgumentError(
                    f"{kernel.name}: output {entry!r} is not a parameter of the host kernel "
                    f"({', '.join(names)})"
                )
            index = names.index(entry)
        else:
            index = entry + len(args) if entry < 0 else entry
        if not 0 <= index < len(args):
            raise InvalidArgumentError(
                f"{kernel.name}: output {entry!r} names no argument of the call"
            )
        value, label = args[index], f"argument {index}"
        if field is not None:
            if isinstance(value, dict):
                value = value[field]
            elif hasattr(value, "__cuda_struct__") and isinstance(
                getattr(value, "values", None), dict
            ):
                value = value.values[field]  # a packed struct value: the array it points at
            else:
                value = getattr(value, field)
            label += f".{field}"
        _collect(value, label, 0, found)
    return found


def assert_kernels_agree(
    kernel: Kernel,
    make_args: Callable[[str, int], Any],
    *,
    n_threads: Any = None,
    grid: Any = None,
    block: Any = None,
    rtol: float = 1e-12,
    atol: float = 0.0,
    n_calls: int = 1,
    outputs: Any = None,
    seed: int = 0,
    metal: bool | None = None,
    shuffle_seed: int | bool | None = None,
) -> dict[str, np.ndarray]:
    """Runs ``kernel`` on the NumPy backend (host version) and on the CuPy backend (CUDA
    version) with ``make_args(backend, seed)``, ``n_calls`` times each, and compares the arrays
    of the selected arguments (``outputs``, else the host kernel's outputs, else all; searched
    two levels into tuples, lists, dicts and objects) with ``np.testing.assert_allclose``.
    ``n_threads`` may be a function of the arguments. Returns the host arrays by name. Skips
    without a device backend (fails with ``CUNUMPY_REQUIRE_CUDA``).

    A kernel with a Metal version is also run through it (on the NumPy backend, with
    ``make_args("numpy", seed)`` and the device implementation ``"metal"``) and compared with
    the host version the same way: with ``metal=None`` when :func:`~cunumpy.kernels.metal_available`
    (a Mac, or the emulated Metal device of ``CUNUMPY_FAKE_METAL=1``), with ``metal=True``
    always, with ``metal=False`` never. A kernel with a Metal version and no CUDA version is
    compared with its Metal version only.

    ``shuffle_seed`` (an int, or ``True`` for a random one) runs the CUDA version's threads on
    the emulated device in an order drawn from that seed (see
    :func:`~cunumpy.kernel_testing.shuffled_threads`), so that a result depending on the order
    of threads shows up as a difference; a failure names the seed, to rerun it. On a GPU the
    hardware picks the order and the seed is only reported."""
    if not isinstance(kernel, Kernel):
        raise InvalidArgumentTypeError(
            f"assert_kernels_agree needs a Kernel, got {type(kernel).__name__}"
        )
    run_metal = kernel.metal_kernel is not None and (
        metal is True or (metal is None and metal_available())
    )
    if kernel.cuda_kernel is None and kernel.missing_cuda == "generate":
        kernel._generate()  # the parity test runs on the generated version like on any other
    if kernel.cuda_kernel is None and kernel.metal_kernel is None:
        raise InvalidArgumentError(f"kernel {kernel.name!r} has neither a CUDA nor a Metal version")
    if kernel.cuda_kernel is None and not run_metal:
        if metal is False:
            raise InvalidArgumentError(
                f"kernel {kernel.name!r} has no CUDA version (and metal=False)"
            )
        import pytest

        pytest.skip(f"kernel {kernel.name!r}: its Metal version cannot run here")
    if (
        kernel.cuda_kernel is not None
        and n_threads is None
        and grid is None
        and kernel.cuda_kernel.n_threads_from is None
    ):
        raise InvalidArgumentTypeError(
            f"kernel {kernel.name!r}: pass n_threads= or grid= (its CudaKernel has "
            "n_threads_from=None)"
        )
    if n_calls < 1:
        raise InvalidArgumentError(f"n_calls must be at least 1, got {n_calls}")
    sides = ["cuda"] if kernel.cuda_kernel is not None else []
    if sides and cuda_gate("device"):
        if not run_metal:
            import pytest

            pytest.skip("neither a GPU nor the emulated device backend is available")
        sides = []
    if run_metal:
        sides.append("metal")

    order = _shuffle_seed(shuffle_seed)
    note = "" if order is None else f" (CUDA threads in shuffled order, shuffle_seed={order})"

    def run(backend: str, implementation: str | None) -> dict[str, Any]:
        with use_backend(backend, strict=backend == "cupy"):
            with use_device_kernel_implementation(implementation):
                args = make_args(backend, seed)
                args = tuple(args) if isinstance(args, (tuple, list)) else (args,)
                threads = n_threads(*args) if callable(n_threads) else n_threads
                cuda = backend == "cupy"
                shuffled = shuffled_threads(order) if cuda else contextlib.nullcontext()
                try:
                    with shuffled:
                        for _ in range(n_calls):
                            if implementation == "metal":
                                kernel(*args, n_threads=threads)
                            else:
                                kernel(*args, n_threads=threads, grid=grid, block=block)
                except EmulatedKernelFault as e:
                    add_note = getattr(e, "add_note", None)  # Python 3.11+
                    if cuda and order is not None and add_note is not None:
                        add_note(f"{kernel.name}: rerun with shuffle_seed={order}")
                    raise
                return _selected(kernel, args, outputs)

    host = run("numpy", None)
    out = {label: to_numpy(h) for label, h in host.items()}
    for side in sides:
        device = run("cupy", None) if side == "cuda" else run("numpy", "metal")
        what = "CUDA" if side == "cuda" else "Metal"
        if set(host) != set(device):
            raise KernelParityError(
                f"{kernel.name}: the host and {what} calls do not have the same array arguments "
                f"(host: {sorted(host)}, {what}: {sorted(device)}); make_args must build the "
                "same structure on both backends"
            )
        for label, h in out.items():
            np.testing.assert_allclose(
                to_numpy(device[label]),
                h,
                rtol=rtol,
                atol=atol,
                err_msg=f"{kernel.name}: {label} differs between the host and {what} kernels"
                + (note if side == "cuda" else ""),
            )
    return out


def _shuffle_seed(shuffle_seed: int | bool | None) -> int | None:
    if shuffle_seed is None or shuffle_seed is False:
        return None
    if shuffle_seed is True:
        return random.SystemRandom().randrange(2**32)
    if isinstance(shuffle_seed, int) and shuffle_seed >= 0:
        return shuffle_seed
    raise InvalidArgumentTypeError(
        "shuffle_seed must be a non-negative int, True (a random seed) or None, "
        f"got {shuffle_seed!r}"
    )


def check_parity(kernel: Kernel, **overrides: Any) -> dict[str, np.ndarray]:
    """:func:`assert_kernels_agree` with the settings of the kernel's ``<name>_test_args.py``:
    ``make_args(backend, seed)`` (required) and the optional constants of
    :data:`TEST_ARGS_SETTINGS`; keyword ``overrides`` win."""
    module = kernel.test_args
    if module is None:
        raise InvalidArgumentError(
            f"kernel {kernel.name!r} has no test-arguments module "
            f"({kernel.name}_test_args.py next to its host kernel)"
        )
    make_args = getattr(module, "make_args", None)
    if not callable(make_args):
        raise InvalidArgumentError(f"{module.__name__} must define make_args(backend, seed)")
    settings = {
        keyword: getattr(module, constant)
        for constant, keyword in TEST_ARGS_SETTINGS.items()
        if hasattr(module, constant)
    }
    settings.update(overrides)
    return assert_kernels_agree(kernel, make_args, **settings)


def parity_cases(catalog: KernelCatalog) -> list[Any]:
    """One ``pytest.param(kernel, id=name)`` per kernel with a CUDA or a Metal version, for
    ``@pytest.mark.parametrize``; a kernel without ``<name>_test_args.py`` is marked skip."""
    import pytest

    cases = []
    for name, kernel in catalog.parity_cases():
        marks = ()
        if kernel.test_args_module is None:
            marks = (pytest.mark.skip(reason=f"kernel {name!r} has no {name}_test_args.py"),)
        cases.append(pytest.param(kernel, id=name, marks=marks))
    return cases
