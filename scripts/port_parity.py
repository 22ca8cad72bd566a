"""Parity of generated CUDA versions of installed feectools and struphy kernels with their host
versions.

    python scripts/port_parity.py SITE_PACKAGES

For the feectools 0.10.0 and struphy 3.5.0 kernels that ``scripts/port_harness.py`` accepts and
whose arguments are simple to build (the axpy and inner kernels on random data, the 2-D stencil
dot and transpose on one process with pads 1, struphy's tensor-product spline evaluation with
degree 2), translates each kernel from its file (``translate_source``, the package's other
modules read from SITE_PACKAGES),
runs the generated CUDA on the emulated device (or the GPU, when CuPy is there and
``CUNUMPY_FAKE_CUPY`` is unset) and compares it with the host kernel on random inputs
(``assert_kernels_agree``). Prints one line per kernel; exits 1 on a disagreement.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from pathlib import Path

import numpy as np

import cunumpy as xp
from cunumpy.kernel_testing import assert_kernels_agree, install_fake_cupy
from cunumpy.kernels import Kernel
from cunumpy.kernels._generate import translate_source


def _ints(*v: int):
    return xp.asarray(np.array(v, dtype=np.int64))


def _normal(seed: int, shape):
    return xp.asarray(np.random.default_rng(seed).normal(size=shape))


def _axpy(shape):
    return lambda backend, seed: (0.7, _normal(seed, shape), _normal(seed + 1, shape))


def _inner_1d(backend, seed):
    rng = np.random.default_rng(seed)
    return (xp.asarray(rng.uniform(size=60)), xp.asarray(rng.uniform(size=60)), 3, xp.zeros(1))


def _dot_2d(backend, seed, n1=7, n2=5):
    # one process, pads 1, three diagonals per direction: rows 0..n-1 of a (n+2)-padded grid
    return (
        _normal(seed, (n1 + 2, n2 + 2, 3, 3)),
        _normal(seed + 1, (n1 + 2, n2 + 2)),
        xp.zeros((n1 + 2, n2 + 2)),
        _ints(0, 0),
        _ints(1, 1),
        _ints(0, 0),
        _ints(0, 0),
        _ints(n1 - 1, n2 - 1),
        _ints(1, 1),
    )


def _transpose_2d(backend, seed, n1=7, n2=5):
    return (
        _normal(seed, (n1 + 2, n2 + 2, 3, 3)),
        xp.zeros((n1 + 2, n2 + 2, 3, 3)),
        _ints(0, 0),
        _ints(1, 1),
        _ints(0, 0),
        _ints(0, 0),
        _ints(n1 - 1, n2 - 1),
        _ints(1, 1),
    )


def _spline_tensor_product(backend, seed, n=8, p=2):
    # degree p in each direction, spans such that the p + 1 coefficients are in the data
    rng = np.random.default_rng(seed)
    spans = [xp.asarray(rng.integers(0, n - p, size=m)) for m in (5, 4, 6)]
    bases = [xp.asarray(rng.uniform(size=(m, p + 1))) for m in (5, 4, 6)]
    return (
        *spans,
        *bases,
        _normal(seed + 1, (n, n, n)),
        _ints(0, 0, 0),
        _ints(p, p, p),
        _ints(0, 0, 0),
        xp.zeros((5, 4, 6)),
    )


FEEC = "feectools/linalg/kernels"
CASES = {
    "stencil_axpy_1d": (FEEC, _axpy((50,))),
    "stencil_axpy_2d": (FEEC, _axpy((9, 11))),
    "stencil_axpy_3d": (FEEC, _axpy((5, 6, 7))),
    "stencil_inner_1d": (FEEC, _inner_1d),
    "stencil_dot_2d": (FEEC, _dot_2d),
    "stencil_transpose_2d": (FEEC, _transpose_2d),
    "eval_spline_mpi_tensor_product_fixed": ("struphy/bsplines/kernels", _spline_tensor_product),
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("site_packages", type=Path)
    opts = parser.parse_args()
    if os.environ.get("CUNUMPY_FAKE_CUPY") or importlib.util.find_spec("cupy") is None:
        install_fake_cupy()
    failed = 0
    sys.path.insert(0, str(opts.site_packages))
    for name, (folder, make) in CASES.items():
        path = opts.site_packages / folder / name / f"{name}_kernels.py"
        spec = importlib.util.spec_from_file_location(f"_port_parity_{name}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        src = translate_source(path.read_text(), name, search_paths=[opts.site_packages])
        kernel = Kernel(getattr(module, name), src.cuda_kernel())
        try:
            assert_kernels_agree(kernel, make, rtol=1e-12, atol=1e-12)
            print(f"{name}: generated CUDA agrees with the host kernel")
        except AssertionError as exc:
            failed += 1
            print(f"{name}: DISAGREES: {exc}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
