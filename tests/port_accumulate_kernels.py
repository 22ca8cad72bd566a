"""Accumulation kernels in struphy's style (a loop over markers handing each to a filler that
adds into a grid) for the tests of ``xp.kernels.generate_cuda``: the ``+=`` / ``-=`` inside
the helpers become atomic adds; any other write or read of the shared grid in a helper is
refused with the helper, its line and the array. Plain Python: the host versions are the
reference."""

import math

import numpy as np
import port_accumulate_helpers as fill


def scale_add(i: int, s: float, w: float, grid: "float[:]"):
    grid[i] += s * w


def deposit_row(x: float, h: float, w: float, grid: "float[:]"):
    """Adds into two cells; ``scale_add`` adds in turn (a helper passing the grid on)."""
    i = int(math.floor(x / h))
    f = x / h - i
    n = grid.shape[0]
    scale_add(i % n, 1.0 - f, w, grid)
    grid[(i + 1) % n] -= -f * w


def charge_1d(markers: "float[:,:]", n_markers: int, grid: "float[:]", h: float):
    """The grid is passed to a helper of this module that adds into it."""
    for ip in range(n_markers):
        if markers[ip, 2] < 0.0:
            continue
        deposit_row(markers[ip, 0], h, markers[ip, 2], grid)


def charge_2d(markers: "float[:,:]", n_markers: int, grid: "float[:,:]", h: float):
    """The grid is passed to a helper of another module, which passes it on."""
    for ip in range(n_markers):
        if markers[ip, 2] < 0.0:
            continue
        x = markers[ip, 0]
        y = markers[ip, 1]
        fill.fill_grid(x, y, markers[ip, 2], h, grid)


def set_in_helper(markers: "float[:,:]", n_markers: int, grid: "float[:]", h: float):
    """Refused: the helper assigns (=) the shared grid at a computed cell."""
    for ip in range(n_markers):
        fill.set_cell(markers[ip, 0], h, markers[ip, 2], grid)


def read_in_helper(markers: "float[:,:]", n_markers: int, grid: "float[:]", h: float):
    """Refused: the helper reads the grid other markers add into."""
    for ip in range(n_markers):
        fill.add_neighbour(markers[ip, 0], h, markers[ip, 2], grid)


def store_helper(i: int, w: float, grid: "float[:]"):
    grid[i] = w


def set_same_module(markers: "float[:,:]", n_markers: int, grid: "float[:]", h: float):
    """Refused: the same, with the helper in this module."""
    for ip in range(n_markers):
        i = int(math.floor(markers[ip, 0] / h)) % grid.shape[0]
        store_helper(i, markers[ip, 2], grid)


def local_and_shared(markers: "float[:,:]", n_markers: int, grid: "float[:]", h: float):
    """Refused: ``scale_add`` adds atomically into the grid; passed a local array as well, its
    adds there would be atomic adds on the thread's own memory."""
    for ip in range(n_markers):
        tmp = np.zeros(4)
        scale_add(1, 2.0, markers[ip, 2], tmp)
        scale_add(int(markers[ip, 0] / h) % grid.shape[0], tmp[1], 1.0, grid)


def scale_cell(i: int, w: float, grid: "float[:]"):
    grid[i] *= w


def scale_in_helper(markers: "float[:,:]", n_markers: int, grid: "float[:]", h: float):
    """Refused: ``*=`` into the shared grid (no atomic makes a product of unordered factors)."""
    for ip in range(n_markers):
        scale_cell(int(markers[ip, 0] / h) % grid.shape[0], markers[ip, 2], grid)


def add_then_read(markers: "float[:,:]", n_markers: int, grid: "float[:]", out: "float[:]"):
    """Refused: the kernel reads the grid its helper adds into."""
    for ip in range(n_markers):
        scale_add(0, 1.0, markers[ip, 2], grid)
        out[ip] = grid[0]


class CellArguments:
    """A Pyccel argument class with a scratch array its ``__init__`` allocates (each thread's
    own in the generated kernel)."""

    def __init__(self, h: float, p: "int[:]"):
        self.h = h
        self.p = p
        self.w = np.zeros(int(p[0] + 1), dtype=float)


def scratch_and_shared(markers: "float[:,:]", args: "CellArguments", grid: "float[:]", n: int):
    """Refused: ``scale_add`` adds atomically into the grid; passed the scratch field too, its
    adds there would be atomic adds on the thread's own memory."""
    for ip in range(n):
        scale_add(0, 1.0, markers[ip, 2], args.w)
        scale_add(int(markers[ip, 0] / args.h) % grid.shape[0], args.w[0], 1.0, grid)
