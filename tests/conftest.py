"""Test tiers: tests/cpu need nothing, tests/cxx a host C++ compiler, tests/gpu a CUDA GPU.

Set CUNUMPY_REQUIRE_CUDA=1 to turn every GPU skip into a failure (the GPU check does).
"""

from __future__ import annotations

import pytest


def cuda_required() -> bool:
    from cunumpy._config import require_cuda

    return require_cuda()


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("gpu") is None:
        return
    import cunumpy as xp

    if not xp.cupy_available():
        reason = f"needs a CUDA GPU and CuPy ({xp.backend_info()['cuda_unavailable_reason']})"
        if cuda_required():
            pytest.fail("CUNUMPY_REQUIRE_CUDA is set but " + reason, pytrace=False)
        pytest.skip(reason)
