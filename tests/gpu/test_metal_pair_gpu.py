"""A ``Kernel`` with host, CUDA and Metal versions on a real GPU: the CUDA version on the GPU,
the Metal version on the emulated Metal device (``CUNUMPY_FAKE_METAL=1``; a host C++ compiler is
needed for it), both compared with the host version by ``check_parity``."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from cunumpy.kernel_testing import check_parity, emulation_compiler
from cunumpy.kernels import KernelCatalog

pytestmark = pytest.mark.gpu

TESTS = Path(__file__).resolve().parents[1]
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))


def test_host_cuda_and_metal_versions_agree(monkeypatch):
    if emulation_compiler() is None:
        pytest.skip("the emulated Metal device needs a host C++ compiler")
    monkeypatch.setenv("CUNUMPY_FAKE_METAL", "1")
    kernel = KernelCatalog.from_package("metal_kernel_pkg")["saxpy"]
    assert kernel.implementations == ("python", "cuda", "metal")
    host = check_parity(kernel)
    from metal_kernel_pkg.saxpy.saxpy_test_args import make_args

    a, x, y, _, _ = make_args("numpy", 0)
    np.testing.assert_allclose(host["argument 3"], np.float32(a) * x + y, rtol=1e-6)
