"""What the generate_cuda test modules share: the marker that skips without a host C++
compiler (their `emulated` fixture is in tests/cpu/conftest.py)."""

from __future__ import annotations

import pytest

from cunumpy.kernel_testing import emulation_compiler

needs_compiler = pytest.mark.skipif(
    emulation_compiler() is None, reason="no host C++ compiler for the emulator"
)
