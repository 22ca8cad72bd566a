"""Host kernels whose helpers write the marker of the index they are given, in the style of
struphy's ``push_eta_stage`` (``update_position_stage(ip, k, ..., args_markers)`` writing
``markers[0:3, ip]`` through ``markers = args_markers.markers``), for the tests of
``xp.kernels.generate_cuda``, and the arguments of their parity cases (``CASES``). The last
kernels must be refused: helpers that write other elements than the iteration's."""

import numpy as np


class ParticleArguments:
    """A Pyccel-style argument class: the markers (one column per marker) and their layout."""

    def __init__(self, markers: "float[:,:]", first_free: int, dt: float):
        self.markers = markers
        self.first_free = first_free
        self.dt = dt


def wrap_axis(axis: int, ip: int, args: "ParticleArguments"):
    """Periodic wrap of one coordinate of marker ip (the struct passed on from `wrap`)."""
    markers = args.markers
    if markers[axis, ip] > 1.0:
        markers[axis, ip] = markers[axis, ip] - 1.0
    elif markers[axis, ip] < 0.0:
        markers[axis, ip] = markers[axis, ip] + 1.0


def advance(ip: int, k: "float[:]", last: float, args: "ParticleArguments"):
    """Accumulates dt * k at first_free, then moves marker ip (reads the accumulated rows)."""
    markers = args.markers
    first_free = args.first_free
    markers[first_free : first_free + 3, ip] += args.dt * k
    markers[0:3, ip] = (
        markers[0:3, ip] + args.dt * k + last * markers[first_free : first_free + 3, ip]
    )
    for axis in range(3):
        wrap_axis(axis, ip, args)


def push_stage(args: "ParticleArguments", v: "float[:,:]", last: float, n: int):
    """Moves every live marker along v (helpers write its column)."""
    k = np.empty(3)
    for ip in range(n):
        if args.markers[6, ip] < 0.0:
            continue
        for d in range(3):
            k[d] = v[d, ip] * (1.0 + args.markers[6, ip])
        advance(ip, k, last, args)


def kick(ip: int, markers: "float[:,:]", dt: float):
    """Velocity kick of marker ip (an array argument, written at the index it is given)."""
    for d in range(3):
        markers[3 + d, ip] += dt * markers[d, ip]


def push_kick(markers: "float[:,:]", dt: float, n: int):
    for ip in range(n):
        kick(ip, markers, dt)


# ---------------------------------------------------------------- refused


def kick_neighbour(ip: int, markers: "float[:,:]", dt: float):
    markers[3, ip + 1] += dt


def push_kick_neighbour(markers: "float[:,:]", dt: float, n: int):
    """The helper only adds into the next marker's column: atomic adds (accepted)."""
    for ip in range(n - 1):
        kick_neighbour(ip, markers, dt)


def push_kick_first(markers: "float[:,:]", dt: float, n: int):
    """Every iteration kicks marker 0: the helper's index is not the iteration's (refused,
    line 79)."""
    for _ip in range(n):
        kick(0, markers, dt)


def _markers(rng, n):
    m = rng.uniform(0.0, 1.0, size=(10, n))
    m[3:6] = rng.normal(size=(3, n))
    m[6, rng.choice(n, size=n // 6, replace=False)] = -1.0
    m[7:10] = 0.2 * rng.normal(size=(3, n))
    return m


def _args_stage(last):
    def make(backend, seed):
        import cunumpy as xp

        rng = np.random.default_rng(seed)
        m = _markers(rng, 200)
        v = rng.normal(size=(3, 200))
        if backend == "numpy":
            args = ParticleArguments(m, 7, 0.4)
        else:
            from cunumpy.kernels import generate_cuda

            struct = generate_cuda(push_stage).structs[0]
            args = struct(markers=xp.asarray(m), first_free=7, dt=0.4)
        return args, xp.asarray(v), last, 200

    return make


def _args_kick(backend, seed):
    import cunumpy as xp

    rng = np.random.default_rng(seed)
    return xp.asarray(_markers(rng, 150)), 0.3, 150


# label -> (host kernel, arguments, outputs compared)
CASES = {
    "push_stage": (push_stage, _args_stage(0.0), ["args.markers"]),
    "push_stage (last)": (push_stage, _args_stage(1.0), ["args.markers"]),
    "push_kick": (push_kick, _args_kick, None),
}


# ---------------------------------------------------------------- loops over an index array


def flip_listed(markers: "float[:,:]", inds: "int[:]", axis: int):
    """struphy's ``reflect``: one iteration per listed marker (``inds`` increasing, as
    ``np.nonzero`` gives them)."""
    for ip in inds:
        markers[3 + axis, ip] = -markers[3 + axis, ip]
        markers[6, ip] += 1.0


def flip_listed_and_inds(markers: "float[:,:]", inds: "int[:]"):
    """Writes the index array it runs over (refused)."""
    for ip in inds:
        markers[3, ip] = 0.0
        inds[ip] = 0


def _args_listed(backend, seed):
    import cunumpy as xp

    rng = np.random.default_rng(seed)
    inds = np.sort(rng.choice(150, size=40, replace=False)).astype(np.int64)
    return xp.asarray(_markers(rng, 150)), xp.asarray(inds), 1


CASES["flip_listed"] = (flip_listed, _args_listed, None)
