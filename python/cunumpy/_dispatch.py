"""cunumpy 0.7's private module of the kernel classes, kept as a deprecated alias of
:mod:`cunumpy.kernels` because published test suites import ``Kernel`` from it (feectools
0.10.0's device tests do). New code imports :mod:`cunumpy.kernels`."""

from __future__ import annotations

import warnings

from .kernels import *  # noqa: F403 - the alias is the whole public module
from .kernels import __all__  # noqa: F401

warnings.warn(
    "cunumpy._dispatch is cunumpy 0.7's private module, kept as an alias: import the kernel "
    "classes from cunumpy.kernels (e.g. from cunumpy.kernels import Kernel)",
    DeprecationWarning,
    stacklevel=2,
)
