"""Fixtures shared by the emulated-device tests (tests/cxx) and the GPU tests (tests/gpu): struct
classes passed by value, and a header of device functions, so both tiers test the same thing."""

from __future__ import annotations

import textwrap

import numpy as np


class _Struct:
    """A by-value struct through the ``__cuda_struct__`` protocol; subclasses set ``name``
    and ``dtype`` (a NumPy aligned dtype matches the C layout)."""

    name: str
    dtype: np.dtype

    def __init__(self, *values):
        self.value = np.array(tuple(values), dtype=self.dtype)

    def __cuda_struct__(self):
        return self.name, self.value.tobytes()


def struct_class(name: str, fields: list[tuple[str, type]]) -> type:
    """The by-value struct class of the C struct ``name`` with ``fields``."""
    dtype = np.dtype(fields, align=True)
    return type(name, (_Struct,), {"name": name, "dtype": dtype, "itemsize": dtype.itemsize})


#: ``struct Step { double dt; int n; float scale; };``
Step = struct_class("Step", [("dt", np.float64), ("n", np.int32), ("scale", np.float32)])

#: ``struct Particle { double x; int n; double q; };``
Particle = struct_class("Particle", [("x", np.float64), ("n", np.int32), ("q", np.float64)])

#: A header with a struct passed by reference and by value to device functions.
VEC2_HEADER = textwrap.dedent(
    """
    #pragma once
    struct Vec2 { double x, y; };
    __device__ inline void add_scaled(const Vec2& v, double* acc, int k) {
        acc[2 * k] += v.x * k;
        acc[2 * k + 1] += v.y * k;
    }
    __device__ inline int dot_sign(Vec2 v, float wx, float wy) {
        return v.x * wx + v.y * wy >= 0.0 ? 1 : -1;
    }
    """
)
