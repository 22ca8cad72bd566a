"""Parity of generated CUDA versions of installed feectools and struphy kernels with their host
versions.

    python scripts/port_parity.py SITE_PACKAGES

For the feectools 0.10.0 and struphy 3.5.0 kernels that ``scripts/port_harness.py`` accepts and
whose arguments are built here (feectools' axpy, inner, dot and transpose stencils on one
process with pads 1; struphy's spline evaluations with a ``SplineArguments`` struct, the
pushers, ``bstar_parallel_3form``, ``kernel_evaluate``, ``kernel_pullpush`` and their
marker versions ``kernel_evaluate_pic``, ``kernel_pullpush_pic`` (counters), the
Runge-Kutta stage ``push_eta_stage`` (helpers writing the marker of the index they get),
``reflect`` (a loop over an index array) with
``MarkerArguments``, ``DomainArguments`` and ``DerhamArguments`` structs, cuboid and spline
mappings; the accumulation kernels ``charge_density_0form``, ``vlasov_maxwell`` and
``linear_vlasov_ampere``, whose helpers add into the grid atomically, with the threads
shuffled and rtol = atol = 1e-10), translates
each kernel from its file (``translate_source``, the package's other modules read from
SITE_PACKAGES), runs the generated CUDA on the emulated device (or the GPU, when CuPy is there
and ``CUNUMPY_FAKE_CUPY`` is unset) and compares it with the host kernel on random inputs
(``assert_kernels_agree``). Prints one line per kernel; exits 1 on a disagreement.
``--only LABEL ...`` runs the cases whose label starts so.

Importable (``benches/generated_cuda_struphy.py`` does): ``CASES`` maps a label (the kernel's
name, then an optional note) to ``(folder, maker)``, ``load_case`` reads and translates one, and
inside ``sized(points)`` the makers scale their markers, evaluation points or grid to about
``points`` (a maker sizes its data with ``_count(default)`` or ``_grid(default_shape)``).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import math
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

import cunumpy as xp
from cunumpy.kernel_testing import assert_kernels_agree, install_fake_cupy
from cunumpy.kernels import Kernel
from cunumpy.kernels._generate import translate_source

#: ``None``: the small sizes of the parity check; else about this many markers, evaluation
#: points or grid points per case (set by ``sized``).
POINTS: int | None = None


@contextlib.contextmanager
def sized(points: int | None) -> Iterator[None]:
    """The makers called inside build about ``points`` markers, points or grid points."""
    global POINTS
    before, POINTS = POINTS, points
    try:
        yield
    finally:
        POINTS = before


def _count(default: int) -> int:
    """``default`` markers or points, or ``POINTS`` inside ``sized``."""
    return default if POINTS is None else max(1, POINTS)


def _grid(default: tuple[int, ...]) -> tuple[int, ...]:
    """``default``, or inside ``sized`` the shape scaled evenly to about ``POINTS`` elements."""
    if POINTS is None:
        return tuple(default)
    f = (POINTS / math.prod(default)) ** (1.0 / len(default))
    return tuple(max(1, round(d * f)) for d in default)


def _ints(*v: int):
    return xp.asarray(np.array(v, dtype=np.int64))


def _normal(seed: int, shape):
    return xp.asarray(np.random.default_rng(seed).normal(size=shape))


def _axpy(shape):
    return lambda backend, seed: (0.7, _normal(seed, _grid(shape)), _normal(seed + 1, _grid(shape)))


def _inner_1d(backend, seed):
    rng = np.random.default_rng(seed)
    n = _count(60)
    return (xp.asarray(rng.uniform(size=n)), xp.asarray(rng.uniform(size=n)), 3, xp.zeros(1))


def _dot_2d(backend, seed):
    # one process, pads 1, three diagonals per direction: rows 0..n-1 of a (n+2)-padded grid
    n1, n2 = _grid((7, 5))
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


def _transpose_2d(backend, seed):
    n1, n2 = _grid((7, 5))
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


def _stencil_ints(dims, *values):
    """One process, pads 1: ``s_in, p_in, add, s_out, e_out, p_out`` as ints (1-D kernels) or
    int arrays."""
    if len(dims) == 1:
        return tuple(int(v[0]) for v in values)
    return tuple(_ints(*v) for v in values)


def _stencil_dot(dims):
    """``stencil_dot_{1,3}d``: rows 0..n-1 of a (n+2)-padded grid, three diagonals each way."""

    def make(backend, seed):
        padded = tuple(n + 2 for n in _grid(dims))
        return (
            _normal(seed, padded + (3,) * len(dims)),
            _normal(seed + 1, padded),
            xp.zeros(padded),
            *_stencil_ints(
                dims,
                [0] * len(dims),
                [1] * len(dims),
                [0] * len(dims),
                [0] * len(dims),
                [n - 3 for n in padded],
                [1] * len(dims),
            ),
        )

    return make


def _stencil_transpose(dims):
    def make(backend, seed):
        padded = tuple(n + 2 for n in _grid(dims))
        return (
            _normal(seed, padded + (3,) * len(dims)),
            xp.zeros(padded + (3,) * len(dims)),
            *_stencil_ints(
                dims,
                [0] * len(dims),
                [1] * len(dims),
                [0] * len(dims),
                [0] * len(dims),
                [n - 3 for n in padded],
                [1] * len(dims),
            ),
        )

    return make


def _spline_tensor_product(backend, seed, n=8, p=2):
    # degree p in each direction, spans such that the p + 1 coefficients are in the data
    rng = np.random.default_rng(seed)
    points = _grid((5, 4, 6))
    spans = [xp.asarray(rng.integers(0, n - p, size=m)) for m in points]
    bases = [xp.asarray(rng.uniform(size=(m, p + 1))) for m in points]
    return (
        *spans,
        *bases,
        _normal(seed + 1, (n, n, n)),
        _ints(0, 0, 0),
        _ints(p, p, p),
        _ints(0, 0, 0),
        xp.zeros(points),
    )


def _spline_args(rng, p=(2, 3, 1), cells=(6, 5, 7), kind=(0, 1, 0)):
    """Host ``SplineArguments`` (struphy's class: its ``__init__`` allocates the scratch
    ``bn1``, ..., ``bd3``) and the fields of the generated kernel's struct (no scratch: each
    thread has its own), for clamped uniform knots; the coefficients cover every span."""
    from struphy.kernel_arguments.spline_args_kernels import SplineArguments

    knots = [
        np.concatenate([np.zeros(q), np.linspace(0.0, 1.0, c + 1), np.ones(q)])
        for q, c in zip(p, cells, strict=True)
    ]
    fields = {
        "kind": np.array(kind, dtype=np.int64),
        "pn": np.array(p, dtype=np.int64),
        "tn1": knots[0],
        "tn2": knots[1],
        "tn3": knots[2],
        "starts": np.zeros(3, dtype=np.int64),
    }
    data = rng.normal(size=tuple(c + 2 * q + 1 for q, c in zip(p, cells, strict=True)))
    return SplineArguments(**fields), fields, data


def _spline_struct_case(points):
    """A maker for the ``eval_spline_mpi_*`` kernels, given the generated source (its struct):
    ``points(rng)`` gives the evaluation points (some flagged -1) and the values' shape."""

    def factory(src):
        struct = src.structs[0]

        def make(backend, seed):
            rng = np.random.default_rng(seed)
            host, fields, data = _spline_args(rng)
            etas, shape = points(rng)
            if backend == "numpy":
                args = host
            else:
                args = struct(**{k: xp.asarray(v) for k, v in fields.items()})
            return (*[xp.asarray(e) for e in etas], xp.asarray(data), args, xp.zeros(shape))

        return make

    factory.needs_source = True
    factory.outputs = ["values"]  # the struct's scratch arrays are no output
    return factory


def _flag(rng, a):
    a = np.array(a)
    a.flat[rng.choice(a.size, size=max(1, a.size // 7), replace=False)] = -1.0
    return a


def _markers(rng):
    n = _count(120)
    return [_flag(rng, rng.uniform(size=(3, n)))], (n,)


def _matrix(rng):
    shape = _grid((4, 3, 5))
    return [_flag(rng, rng.uniform(size=shape)) for _ in range(3)], shape


def _sparse(rng):
    n = _grid((4, 3, 5))
    etas = [
        _flag(rng, rng.uniform(size=tuple(m if d == k else 1 for d in range(3))))
        for k, m in enumerate(n)
    ]
    return etas, n


def _clamped(p, cells):
    return np.concatenate([np.zeros(p), np.linspace(0.0, 1.0, cells + 1), np.ones(p)])


def _on_device(fields):
    return {k: xp.asarray(v) if isinstance(v, np.ndarray) else v for k, v in fields.items()}


def _pic_structs(src, backend, rng, kind_map, n=None, edit_markers=None, markers_layout=None):
    """struphy's ``MarkerArguments``, ``DomainArguments``, ``DerhamArguments`` (the Pyccel
    classes on the host, ``DerhamArguments`` allocating the spline scratch; their structs from
    ``src`` on the device) and the shape of spline coefficients for the Derham degrees
    (2, 3, 1). ``kind_map`` 10 is the cuboid mapping, 1 the 2-D spline mapping
    ``spline_2d_straight`` (clamped degree-2 knots, 4 x 3 cells, its control points read
    through ``cx[:, :, 0]``). 90 markers with 13 columns, a fifth of them invalid
    (``edit_markers(rng, markers)`` may change the marker array first, ``markers_layout(fields,
    rng)`` the marker fields)."""
    from struphy.kernel_arguments.pusher_args_kernels import (
        DerhamArguments,
        DomainArguments,
        MarkerArguments,
    )

    n = _count(90) if n is None else n
    markers = rng.normal(size=(13, n))
    markers[0:3] = rng.uniform(0.0, 1.0, size=(3, n))
    markers[9:12] = 0.0  # no boundary shifts
    if edit_markers is not None:
        edit_markers(rng, markers)
    mk = {
        "markers": markers,
        "valid_mks": rng.uniform(size=n) > 0.2,
        "Np": n,
        "vdim": 3,
        "weight_idx": 6,
        "first_diagnostics_idx": 7,
        "first_pusher_idx": 8,
        "first_shift_idx": 9,
        "residual_idx": 12,
        "first_free_idx": 12,
        "mu_idx": 12,
        "bc_type": np.zeros(3, dtype=np.int64),
        "pole": False,
    }
    if markers_layout is not None:
        markers_layout(mk, rng)
    q, c1, c2 = 2, 4, 3
    dom = {
        "kind_map": kind_map,
        "params": np.array([0.2, 1.3, -0.5, 0.7, 0.0, 2.0] if kind_map == 10 else [1.7]),
        "degree": np.array([q, q, q], dtype=np.int64),
        "t1": _clamped(q, c1),
        "t2": _clamped(q, c2),
        "t3": _clamped(q, 1),
        "ind1": np.add.outer(np.arange(c1), np.arange(q + 1)).astype(np.int64),
        "ind2": np.add.outer(np.arange(c2), np.arange(q + 1)).astype(np.int64),
        "ind3": np.add.outer(np.arange(1), np.arange(q + 1)).astype(np.int64),
        "cx": np.linspace(0.0, 1.0, c1 + q)[:, None, None]
        + 0.05 * rng.normal(size=(c1 + q, c2 + q, 1)),
        "cy": np.linspace(0.0, 2.0, c2 + q)[None, :, None]
        + 0.05 * rng.normal(size=(c1 + q, c2 + q, 1)),
        "cz": np.zeros((c1 + q, c2 + q, 1)),
    }
    pn, cells = (2, 3, 1), (5, 4, 6)
    der = {
        "pn": np.array(pn, dtype=np.int64),
        "tn1": _clamped(pn[0], cells[0]),
        "tn2": _clamped(pn[1], cells[1]),
        "tn3": _clamped(pn[2], cells[2]),
        "starts": np.zeros(3, dtype=np.int64),
    }
    shape = tuple(c + 2 * p + 1 for p, c in zip(pn, cells, strict=True))
    if backend == "numpy":
        values = {
            "MarkerArguments": MarkerArguments(**mk),
            "DomainArguments": DomainArguments(**dom),
            "DerhamArguments": DerhamArguments(**der),
        }
    else:
        by_name = {s.name: s for s in src.structs}
        extra = {"MarkerArguments": {"n_markers": n}}
        values = {
            name: by_name[name](**_on_device(fields), **extra.get(name, {}))
            for name, fields in (
                ("MarkerArguments", mk),
                ("DomainArguments", dom),
                ("DerhamArguments", der),
            )
            if name in by_name
        }
    return values, shape


def _pusher_case(kind_map, extra=lambda rng, n: (0.8,)):
    """A maker for struphy's pushers ``push_v_with_efield``, ``push_vxb_analytic``,
    ``push_vxb_implicit``, ``push_weights_with_efield_lin_va`` (given the generated source, for
    its structs; ``extra`` makes the arguments after the three field components); see
    ``_pic_structs``."""

    def factory(src):
        def make(backend, seed):
            rng = np.random.default_rng(seed)
            n = _count(90)
            v, shape = _pic_structs(src, backend, rng, kind_map, n)
            es = [xp.asarray(rng.normal(size=shape)) for _ in range(3)]
            structs = (v["MarkerArguments"], v["DomainArguments"], v["DerhamArguments"])
            return (0.01, 0, *structs, *es, *extra(rng, n))

        return make

    factory.needs_source = True
    factory.outputs = ["args_markers.markers"]
    return factory


def _bstar_case(src):
    """``bstar_parallel_3form``: B*_parallel of every valid marker into column 7."""

    def make(backend, seed):
        rng = np.random.default_rng(seed)
        v, shape = _pic_structs(src, backend, rng, 1)
        return (
            xp.asarray(np.array([0.3, 0.6, 0.9, 0.5])),
            xp.asarray(np.array([7], dtype=np.int64)),
            v["MarkerArguments"],
            v["DomainArguments"],
            v["DerhamArguments"],
            0.4,
            xp.asarray(rng.normal(size=shape)),
            xp.asarray(rng.normal(size=shape)),
        )

    return make


_bstar_case.needs_source = True
_bstar_case.outputs = ["args_markers.markers"]


def _evaluate_case(kind_coeff):
    """``kernel_evaluate`` of metric coefficient ``kind_coeff`` on a 4 x 3 x 5 meshgrid, the
    spline mapping."""

    def factory(src):
        def make(backend, seed):
            rng = np.random.default_rng(seed)
            v, _ = _pic_structs(src, backend, rng, 1, 90)  # the domain only: 90 markers
            grid = _grid((4, 3, 5))
            etas = np.meshgrid(*[rng.uniform(0.05, 0.95, m) for m in grid], indexing="ij")
            return (
                *[xp.asarray(np.ascontiguousarray(e)) for e in etas],
                kind_coeff,
                v["DomainArguments"],
                xp.zeros((*grid, 3, 3)),
                False,
                False,
            )

        return make

    factory.needs_source = True
    factory.outputs = ["mat_f"]
    return factory


def _pullpush_case(kind_transform, kind_fun):
    """``kernel_pullpush`` (pull 0, push 1, transform 2; ``kind_fun`` the form) of a vector
    field on a 4 x 3 x 5 meshgrid, the spline mapping."""

    def factory(src):
        def make(backend, seed):
            rng = np.random.default_rng(seed)
            v, _ = _pic_structs(src, backend, rng, 1, 90)  # the domain only: 90 markers
            grid = _grid((4, 3, 5))
            etas = np.meshgrid(*[rng.uniform(0.05, 0.95, m) for m in grid], indexing="ij")
            return (
                xp.asarray(rng.normal(size=(*grid, 3))),
                *[xp.asarray(np.ascontiguousarray(e)) for e in etas],
                kind_transform,
                kind_fun,
                v["DomainArguments"],
                False,
                xp.zeros((*grid, 3)),
            )

        return make

    factory.needs_source = True
    factory.outputs = ["out"]
    return factory


def _rk_layout(mk, rng):
    """Markers of an explicit Runge-Kutta pusher: 18 rows (eta^n at first_pusher_idx 8, the
    boundary shifts at 11, the accumulated stages at first_free_idx 14, the ID last), holes
    (-1 at first_pusher_idx), boundary markers (ID -2), velocities that take some markers out
    of the cube; axis 0 reflecting, 1 periodic, 2 removing."""
    n = mk["Np"]
    m = np.zeros((18, n))
    m[0:3] = rng.uniform(0.0, 1.0, size=(3, n))
    m[3:6] = rng.normal(size=(3, n))
    m[6] = rng.uniform(0.5, 1.5, size=n)
    m[8:11] = m[0:3]
    m[14:17] = 0.1 * rng.normal(size=(3, n))
    m[17] = np.arange(n)
    m[8, rng.choice(n, size=n // 9, replace=False)] = -1.0
    m[17, rng.choice(n, size=n // 9, replace=False)] = -2.0
    mk.update(
        markers=m,
        first_pusher_idx=8,
        first_shift_idx=11,
        first_free_idx=14,
        residual_idx=17,
        mu_idx=17,
        bc_type=np.array([1, 0, 2], dtype=np.int64),
    )


def _push_eta_case(stage):
    """``push_eta_stage`` (stage ``stage`` of 3: the last adds the accumulated stages) with
    the spline mapping; see ``_rk_layout``."""

    def factory(src):
        def make(backend, seed):
            rng = np.random.default_rng(seed)
            v, _ = _pic_structs(src, backend, rng, 1, markers_layout=_rk_layout)
            return (
                0.3,
                stage,
                v["MarkerArguments"],
                v["DomainArguments"],
                xp.asarray(np.array([0.5, 0.5, 1.0])),
                xp.asarray(np.array([1.0, 2.0, 1.0]) / 4.0),
                xp.asarray(np.array([0.0, 0.5, 1.0])),
                3,
            )

        return make

    factory.needs_source = True
    factory.outputs = ["args_markers.markers"]
    return factory


def _reflect_case(axis):
    """``reflect`` of the velocities of 25 of 90 markers (``outside_inds`` as ``np.nonzero``
    gives them: increasing) about ``axis``, the spline mapping."""

    def factory(src):
        def make(backend, seed):
            rng = np.random.default_rng(seed)
            v, _ = _pic_structs(src, backend, rng, 1, 90)  # the domain only: 90 markers
            n = _count(90)
            markers = rng.normal(size=(13, n))
            markers[0:3] = rng.uniform(0.0, 1.0, size=(3, n))
            inds = np.sort(rng.choice(n, size=max(1, n * 25 // 90), replace=False))
            inds = inds.astype(np.int64)
            return xp.asarray(markers), v["DomainArguments"], xp.asarray(inds), axis

        return make

    factory.needs_source = True
    factory.outputs = ["markers"]
    return factory


def _pic_markers(rng, n):
    """Marker positions (7 rows, ``n`` columns) in [0, 1]^3 but for a fifth of them: holes
    (-1) and markers that left the cube (a coordinate above 1)."""
    markers = rng.normal(size=(7, n))
    markers[0:3] = rng.uniform(0.02, 0.98, size=(3, n))
    out = rng.choice(n, size=n // 5, replace=False)
    markers[0:3, out[::2]] = -1.0
    markers[rng.integers(0, 3), out[1::2]] = 1.0 + rng.uniform(0.01, 0.5, size=out[1::2].size)
    return markers, int(n - out.size)


def _evaluate_pic_case(kind_coeff, remove_outside):
    """``kernel_evaluate_pic`` (metric coefficient ``kind_coeff``, -1 the identity) of 60
    markers (``_count``), the spline mapping; rows of ``mat_f`` compacted through the kernel's
    counter when ``remove_outside``. ``mat_f`` starts random (entries a coefficient does not write
    keep their value)."""

    def factory(src):
        def make(backend, seed):
            rng = np.random.default_rng(seed)
            v, _ = _pic_structs(src, backend, rng, 1, 90)  # the domain only: 90 markers
            n = _count(60)
            markers, _ = _pic_markers(rng, n)
            return (
                xp.asarray(markers),
                kind_coeff,
                v["DomainArguments"],
                xp.asarray(rng.normal(size=(n, 3, 3))),
                remove_outside,
                False,
            )

        return make

    factory.needs_source = True
    factory.outputs = ["mat_f"]
    return factory


def _pullpush_pic_case(kind_transform, kind_fun, holes, remove_outside):
    """``kernel_pullpush_pic`` of 60 markers, the spline mapping: ``a`` has a row per marker
    (``holes``: its counter skips the outside ones) or per inside marker only."""

    def factory(src):
        def make(backend, seed):
            rng = np.random.default_rng(seed)
            v, _ = _pic_structs(src, backend, rng, 1, 90)  # the domain only: 90 markers
            n = _count(60)
            markers, inside = _pic_markers(rng, n)
            return (
                xp.asarray(rng.normal(size=(n if holes else inside, 3))),
                xp.asarray(markers),
                kind_transform,
                kind_fun,
                v["DomainArguments"],
                xp.asarray(rng.normal(size=(n, 3))),
                remove_outside,
            )

        return make

    factory.needs_source = True
    factory.outputs = ["out"]
    return factory


FEEC = "feectools/linalg/kernels"


def _holes(rng, markers):
    """Accumulation markers: a tenth are holes (``eta1 = -1``), a tenth marked -2 in the last
    column (``linear_vlasov_ampere`` skips them), column 7 (``s0``, divided by) in [0.5, 1.5]."""
    n = markers.shape[1]
    markers[0, rng.choice(n, size=n // 10, replace=False)] = -1.0
    markers[-1, rng.choice(n, size=n // 10, replace=False)] = -2.0
    markers[7] = rng.uniform(0.5, 1.5, size=n)


# Shapes of struphy's accumulation data for the Derham degrees (2, 3, 1) on (5, 4, 6) cells of
# ``_pic_structs`` (one process, starts 0): a V0 vector padded by p on each side; the V1
# blocks, component mu with D-splines along axis mu, and 2 p + 1 diagonals per axis.
_PN, _CELLS = np.array((2, 3, 1)), np.array((5, 4, 6))
_V0 = tuple(_CELLS + 3 * _PN)
_V1 = [tuple(_CELLS + 3 * _PN - (np.arange(3) == mu)) for mu in range(3)]
_DIAG = tuple(2 * _PN + 1)


def _accumulation_case(kind_map, v1, f0=False):
    """A maker for struphy's accumulation kernels ``charge_density_0form`` (a V0 vector) and,
    with ``v1``, ``vlasov_maxwell`` and (``f0``: the values of f0 per marker)
    ``linear_vlasov_ampere`` (the six blocks of a symmetric V1 matrix and a V1 vector), all
    zeroed, 90 markers (``_count``; ``_holes``); see ``_pic_structs``. The grid is added into by
    many markers at once: the generated kernel's atomic adds, in another order than the host
    loop's (the threads run shuffled), so the comparison allows the rounding of the sums."""

    def factory(src):
        def make(backend, seed):
            rng = np.random.default_rng(seed)
            n = _count(90)
            v, _ = _pic_structs(src, backend, rng, kind_map, n, edit_markers=_holes)
            structs = (v["MarkerArguments"], v["DerhamArguments"], v["DomainArguments"])
            if not v1:
                return (*structs, xp.zeros(_V0))
            blocks = (0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2)
            mats = [xp.zeros(_V1[mu] + _DIAG) for mu, _ in blocks]
            vecs = [xp.zeros(_V1[mu]) for mu in range(3)]
            extra = (xp.asarray(rng.uniform(0.1, 1.0, size=n)),) if f0 else ()
            return (*structs, *mats, *vecs, *extra)

        return make

    factory.needs_source = True
    factory.outputs = (
        ["vec"]
        if not v1
        else ["mat11", "mat12", "mat13", "mat22", "mat23", "mat33", "vec1", "vec2", "vec3"]
    )
    factory.tolerance = 1e-10
    factory.shuffle_seed = 7
    return factory


CASES = {
    "stencil_axpy_1d": (FEEC, _axpy((50,))),
    "stencil_axpy_2d": (FEEC, _axpy((9, 11))),
    "stencil_axpy_3d": (FEEC, _axpy((5, 6, 7))),
    "stencil_inner_1d": (FEEC, _inner_1d),
    "stencil_dot_1d": (FEEC, _stencil_dot((9,))),
    "stencil_dot_2d": (FEEC, _dot_2d),
    "stencil_dot_3d": (FEEC, _stencil_dot((5, 4, 3))),
    "stencil_transpose_1d": (FEEC, _stencil_transpose((9,))),
    "stencil_transpose_2d": (FEEC, _transpose_2d),
    "stencil_transpose_3d": (FEEC, _stencil_transpose((5, 4, 3))),
    "eval_spline_mpi_tensor_product_fixed": ("struphy/bsplines/kernels", _spline_tensor_product),
    "eval_spline_mpi_markers": ("struphy/bsplines/kernels", _spline_struct_case(_markers)),
    "eval_spline_mpi_matrix": ("struphy/bsplines/kernels", _spline_struct_case(_matrix)),
    "eval_spline_mpi_sparse_meshgrid": ("struphy/bsplines/kernels", _spline_struct_case(_sparse)),
    "push_v_with_efield": ("struphy/pic/pushing/kernels", _pusher_case(10)),
    "push_v_with_efield (spline mapping)": ("struphy/pic/pushing/kernels", _pusher_case(1)),
    "push_vxb_analytic": ("struphy/pic/pushing/kernels", _pusher_case(1, lambda rng, n: ())),
    "push_vxb_implicit": ("struphy/pic/pushing/kernels", _pusher_case(1, lambda rng, n: ())),
    "bstar_parallel_3form": ("struphy/pic/pushing/kernels", _bstar_case),
    "kernel_evaluate (mapping)": ("struphy/geometry/kernels", _evaluate_case(0)),
    "kernel_evaluate (Jacobian)": ("struphy/geometry/kernels", _evaluate_case(1)),
    "kernel_evaluate (metric)": ("struphy/geometry/kernels", _evaluate_case(4)),
    "kernel_pullpush (pull 1-form)": ("struphy/geometry/kernels", _pullpush_case(0, 10)),
    "kernel_pullpush (push 2-form)": ("struphy/geometry/kernels", _pullpush_case(1, 11)),
    "kernel_pullpush (transform)": ("struphy/geometry/kernels", _pullpush_case(2, 12)),
    "kernel_evaluate_pic (metric)": ("struphy/geometry/kernels", _evaluate_pic_case(4, False)),
    "kernel_evaluate_pic (Jacobian, remove outside)": (
        "struphy/geometry/kernels",
        _evaluate_pic_case(1, True),
    ),
    "kernel_evaluate_pic (identity)": ("struphy/geometry/kernels", _evaluate_pic_case(-1, False)),
    "kernel_pullpush_pic (push 2-form)": (
        "struphy/geometry/kernels",
        _pullpush_pic_case(1, 11, True, False),
    ),
    "kernel_pullpush_pic (pull 1-form, remove outside)": (
        "struphy/geometry/kernels",
        _pullpush_pic_case(0, 10, True, True),
    ),
    "kernel_pullpush_pic (transform, no holes in a)": (
        "struphy/geometry/kernels",
        _pullpush_pic_case(2, 12, False, False),
    ),
    "push_eta_stage (first stage)": ("struphy/pic/pushing/kernels", _push_eta_case(0)),
    "push_eta_stage (last stage)": ("struphy/pic/pushing/kernels", _push_eta_case(2)),
    "reflect (axis 0)": ("struphy/pic/pushing/kernels", _reflect_case(0)),
    "reflect (axis 2)": ("struphy/pic/pushing/kernels", _reflect_case(2)),
    "push_weights_with_efield_lin_va": (
        "struphy/pic/pushing/kernels",
        _pusher_case(1, lambda rng, n: (xp.asarray(rng.uniform(0.5, 1.5, size=n)), 0.9, 1.1)),
    ),
    "charge_density_0form": (
        "struphy/pic/accumulation/kernels",
        _accumulation_case(10, v1=False),
    ),
    "vlasov_maxwell": ("struphy/pic/accumulation/kernels", _accumulation_case(10, v1=True)),
    "vlasov_maxwell (spline mapping)": (
        "struphy/pic/accumulation/kernels",
        _accumulation_case(1, v1=True),
    ),
    "linear_vlasov_ampere": (
        "struphy/pic/accumulation/kernels",
        _accumulation_case(1, v1=True, f0=True),
    ),
}


def load_case(site_packages: Path, label: str) -> tuple[str, ModuleType, Any, Any, Any]:
    """``(name, host module, generated source, make, outputs)`` of case ``label``: the host
    kernel's module read from its file in ``site_packages`` (which must be on ``sys.path``),
    its translation, the case's ``make(backend, seed)`` and the outputs to compare (``None``:
    the host kernel's)."""
    folder, make = CASES[label]
    name = label.split(" ")[0]
    path = site_packages / folder / name / f"{name}_kernels.py"
    spec = importlib.util.spec_from_file_location(f"_port_parity_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    src = translate_source(path.read_text(), name, search_paths=[site_packages])
    outputs = getattr(make, "outputs", None)
    if getattr(make, "needs_source", False):
        make = make(src)
    return name, module, src, make, outputs


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("site_packages", type=Path)
    parser.add_argument("--only", nargs="+", help="run only the cases whose label starts so")
    opts = parser.parse_args()
    if os.environ.get("CUNUMPY_FAKE_CUPY") or importlib.util.find_spec("cupy") is None:
        install_fake_cupy()
    failed = 0
    sys.path.insert(0, str(opts.site_packages))
    for label in CASES:
        if opts.only and not any(label.startswith(o) for o in opts.only):
            continue
        name, module, src, make, outputs = load_case(opts.site_packages, label)
        kernel = Kernel(getattr(module, name), src.cuda_kernel())
        tol = getattr(CASES[label][1], "tolerance", 1e-12)
        shuffle = getattr(CASES[label][1], "shuffle_seed", None)
        try:
            assert_kernels_agree(
                kernel, make, rtol=tol, atol=tol, outputs=outputs, shuffle_seed=shuffle
            )
            print(f"{label}: generated CUDA agrees with the host kernel")
        except AssertionError as exc:
            failed += 1
            print(f"{label}: DISAGREES: {exc}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
