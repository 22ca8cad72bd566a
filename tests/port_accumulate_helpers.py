"""Fillers of tests/port_accumulate_kernels.py in a module of their own, as struphy keeps
``particle_to_mat_kernels`` and ``filler_kernels`` apart from its accumulation kernels: they
add one marker's contribution into a grid they are passed, at cells computed from its
position."""

import math

import numpy as np


def fill_grid(x: float, y: float, w: float, h: float, grid: "float[:,:]"):
    """The bilinear weights of the cell holding (x, y), handed on to ``add_cell``."""
    fx = x / h
    fy = y / h
    i = int(math.floor(fx))
    j = int(math.floor(fy))
    b = np.empty(2, dtype=float)
    b[0] = 1.0 - (fx - i)
    b[1] = fx - i
    add_cell(i, j, b, fy - j, w, grid)


def add_cell(i: int, j: int, b: "float[:]", gy: float, w: float, grid: "float[:,:]"):
    """``+=`` and ``-=`` into the four corners, periodic in both directions."""
    n0 = grid.shape[0]
    n1 = grid.shape[1]
    for k in range(2):
        grid[(i + k) % n0, j % n1] += w * b[k] * (1.0 - gy)
        grid[(i + k) % n0, (j + 1) % n1] -= -w * b[k] * gy


def set_cell(x: float, h: float, w: float, grid: "float[:]"):
    """Refused when passed a shared array: ``=`` at a computed cell."""
    i = int(math.floor(x / h)) % grid.shape[0]
    grid[i] = w


def add_neighbour(x: float, h: float, w: float, grid: "float[:]"):
    """Refused when passed a shared array: reads a cell other markers add into."""
    i = int(math.floor(x / h)) % (grid.shape[0] - 1)
    grid[i] += w * grid[i + 1]
