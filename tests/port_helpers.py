"""Helpers of the cross-module kernels of tests/port_kernels.py, in a module of their own (as
struphy keeps ``bsplines_kernels`` and ``linalg_kernels`` apart from its pushers)."""

import math


def scaled_norm(v0: float, v1: float, s: float) -> float:
    return s * math.sqrt(square(v0) + square(v1))


def square(x: float) -> float:
    return x * x


def cell_of(x: float, h: float) -> int:
    return int(math.floor(x / h))


def read_coef(args: "GridArguments", i: int, j: int) -> float:  # noqa: F821 - a Pyccel class
    return args.coef[i, j]


def bump(args: "GridArguments", i: int):  # noqa: F821
    args.coef[i, 0] += 1.0


def coef_at(coef: "float[:,:]", i: int, j: int) -> float:
    return coef[i, j]
