"""Host kernels with local arrays of fixed shape (``empty((3, 3))``), for the tests of how the
translator writes their extents: a Crank-Nicolson rotation of each marker's velocity as in
struphy's ``push_vxb_implicit`` (3 x 3 locals allocated before the marker loop, whole-array
updates ``rhs[:, :] = identity + dt / 2 * b_prod``, loops over ``a.shape[k]``, ``len(v)``,
``v[-1]``, ``n0, n1 = lhs.shape``), whose generated CUDA must write those extents as numbers,
and two kernels that give a local array a second shape or another array, which are refused.
``CASES``: label -> (kernel, arguments for its parity test)."""

import numpy as np
from numpy import empty, zeros

import cunumpy as xp


def matrix_vector(a: "float[:,:]", b: "float[:]", c: "float[:]"):
    c[:] = 0.0
    for i in range(a.shape[0]):
        for j in range(len(b)):
            c[i] += a[i, j] * b[j]


def inverse_3x3(a: "float[:,:]", b: "float[:,:]"):
    det = (
        a[0, 0] * (a[1, 1] * a[2, 2] - a[1, 2] * a[2, 1])
        - a[0, 1] * (a[1, 0] * a[2, 2] - a[1, 2] * a[2, 0])
        + a[0, 2] * (a[1, 0] * a[2, 1] - a[1, 1] * a[2, 0])
    )
    b[0, 0] = (a[1, 1] * a[2, 2] - a[1, 2] * a[2, 1]) / det
    b[0, 1] = (a[0, 2] * a[2, 1] - a[0, 1] * a[2, 2]) / det
    b[0, 2] = (a[0, 1] * a[1, 2] - a[0, 2] * a[1, 1]) / det
    b[1, 0] = (a[1, 2] * a[2, 0] - a[1, 0] * a[2, 2]) / det
    b[1, 1] = (a[0, 0] * a[2, 2] - a[0, 2] * a[2, 0]) / det
    b[1, 2] = (a[0, 2] * a[1, 0] - a[0, 0] * a[1, 2]) / det
    b[2, 0] = (a[1, 0] * a[2, 1] - a[1, 1] * a[2, 0]) / det
    b[2, 1] = (a[0, 1] * a[2, 0] - a[0, 0] * a[2, 1]) / det
    b[2, 2] = (a[0, 0] * a[1, 1] - a[0, 1] * a[1, 0]) / det


def crank_nicolson_rotation(markers: "float[:,:]", field: "float[:,:]", dt: float):
    """v <- (I - dt/2 B)^-1 (I + dt/2 B) v with B the cross-product matrix of each marker's
    field (markers: rows 0-2 the velocity, row 3 a weight scaled by the trace of the system)."""
    identity = zeros((3, 3))
    identity[0, 0] = 1.0
    identity[1, 1] = 1.0
    identity[2, 2] = 1.0
    b_prod = zeros((3, 3))
    rhs = empty((3, 3))
    lhs = empty((3, 3))
    lhs_inv = empty((3, 3))
    v = empty(3)
    vec = empty(3)
    res = empty(3)
    for ip in range(markers.shape[1]):
        v[:] = markers[0:3, ip]
        b_prod[0, 1] = field[2, ip]
        b_prod[0, 2] = -field[1, ip]
        b_prod[1, 0] = -field[2, ip]
        b_prod[1, 2] = field[0, ip]
        b_prod[2, 0] = field[1, ip]
        b_prod[2, 1] = -field[0, ip]
        rhs[:, :] = identity + dt / 2 * b_prod
        lhs[:, :] = identity - dt / 2 * b_prod
        inverse_3x3(lhs, lhs_inv)
        matrix_vector(rhs, v, vec)
        matrix_vector(lhs_inv, vec, res)
        n0, n1 = lhs.shape
        trace = 0.0
        for k in range(n0):
            trace += lhs[k, k] + rhs[k, n1 - 1 - k]
        markers[0:3, ip] = res
        markers[3, ip] = markers[3, ip] * trace + res[-1] * len(v)


def reallocated_with_other_shape(x: "float[:]", out: "float[:]"):
    for i in range(x.shape[0]):
        w = zeros(3)
        w[0] = x[i]
        w = zeros(4)
        out[i] = w[0] + w.shape[0]


def rebound_to_another_array(x: "float[:]", out: "float[:]"):
    for i in range(x.shape[0]):
        w = zeros(3)
        u = zeros(3)
        u[1] = x[i]
        w = u
        out[i] = w[1]


def _rotation_case(backend, seed):
    rng = np.random.default_rng(seed)
    markers = rng.standard_normal((4, 157))
    return xp.asarray(markers), xp.asarray(rng.standard_normal((3, 157))), 0.3


CASES = {"crank_nicolson_rotation": (crank_nicolson_rotation, _rotation_case)}
