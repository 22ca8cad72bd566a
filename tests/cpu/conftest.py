"""Fixtures shared by the CPU tests."""

from __future__ import annotations

import pytest

from cunumpy.kernel_testing import install_fake_cupy, uninstall_fake_cupy


@pytest.fixture
def emulated():
    """The test's CuPy arrays live on the emulated device (the fake CuPy)."""
    install_fake_cupy()
    try:
        yield
    finally:
        uninstall_fake_cupy()
