"""Writes tests/data/rng_0.7.1.json: random numbers as cunumpy 0.7.1 draws them.

Run with a Python that has cunumpy 0.7.1 installed (not this project), and a C++ compiler for
the emulated-device values:

    /path/to/venv-0.7.1/bin/python scripts/rng_reference_0_7_1.py tests/data/rng_0.7.1.json
    CUNUMPY_FAKE_CUPY=1 CUNUMPY_BACKEND=cupy /path/to/venv-0.7.1/bin/python \
        scripts/rng_reference_0_7_1.py tests/data/rng_0.7.1.json --fake-cupy

The second run adds what the generators give on 0.7.1's emulated device (CuPy backend).

Doubles are stored as the hex of their IEEE bits so that the tests compare bit for bit.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

import cunumpy as xp
from cunumpy.kernel_testing import emulate_cuda_kernel
from cunumpy.kernels import CudaKernel

# One thread per (seed, stream, counter): every device form of random.cuh (the tests launch the
# same kernel on the emulated device and on the GPU).
DRAW = (Path(__file__).resolve().parents[1] / "tests" / "data" / "rng_draw.cu").read_text()
DEVICE_COLUMNS = [
    "uniform2_u0",
    "uniform2_u1",
    "normal2_z0",
    "normal2_z1",
    "uniform",
    "normal",
    "u64_to_uniform_w2w3",
    "u64_to_uniform_w1w0",
]


def bits(a: object) -> list[str]:
    return [f"{v:016x}" for v in np.asarray(a, dtype=np.float64).ravel().view(np.uint64)]


def cases() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    seeds = np.array([0, 1, 42, 2**32 - 1, 2**32, 2**63 + 12345, 2**64 - 1], dtype=np.uint64)
    streams = np.array([0, 1, 7, 1000003, 2**32 + 5, 2**64 - 2], dtype=np.uint64)
    counters = np.array([0, 1, 17, 2**31, 2**40 + 3], dtype=np.uint64)
    grid = np.meshgrid(seeds, streams, counters, indexing="ij")
    return tuple(g.ravel() for g in grid)  # type: ignore[return-value]


def generators() -> dict[str, object]:
    out: dict[str, object] = {
        "BIT_GENERATORS": list(xp.rng.BIT_GENERATORS),
        "not_seeded_repr": repr(xp.rng.RandomStreams()),
        "get_rng_7_random_5": bits(xp.rng.get_rng(7).random(5)),
        "get_rng_123_standard_normal_5": bits(xp.rng.get_rng(123).standard_normal(5)),
    }
    streams: dict[str, dict[str, object]] = {}
    for bit_generator in xp.rng.BIT_GENERATORS:
        for rank in (0, 3):
            rs = xp.rng.RandomStreams()
            rs.seed(42, rank=rank, bit_generator=bit_generator)
            entry: dict[str, object] = {"np_random_after_seed": bits(np.random.random(2))}
            entry["repr"] = repr(rs)
            entry["random_4"] = bits(rs.random(4))
            entry["normal_3"] = bits(rs.normal(1.0, 2.0, 3))
            entry["uniform_3"] = bits(rs.uniform(-1.0, 3.0, 3))
            entry["standard_normal_2"] = bits(rs.standard_normal(2))
            fresh = xp.rng.RandomStreams()
            fresh.seed(42, rank=rank, bit_generator=bit_generator)
            entry["make_generator_none_random_2"] = bits(fresh.make_generator().random(2))
            entry["make_generator_9_random_2"] = bits(fresh.make_generator(9).random(2))
            streams[f"{bit_generator}_rank{rank}"] = entry
    out["streams"] = streams
    return out


def fake_cupy_generators() -> dict[str, object]:
    assert xp.get_backend() == "cupy", "run with CUNUMPY_FAKE_CUPY=1 CUNUMPY_BACKEND=cupy"
    out: dict[str, object] = {"get_rng_7_random_5": bits(xp.to_numpy(xp.rng.get_rng(7).random(5)))}
    for rank in (0, 3):
        rs = xp.rng.RandomStreams()
        rs.seed(42, rank=rank)
        out[f"PCG64_rank{rank}_random_4"] = bits(xp.to_numpy(rs.random(4)))
        out[f"PCG64_rank{rank}_normal_3"] = bits(xp.to_numpy(rs.normal(1.0, 2.0, 3)))
        out[f"PCG64_rank{rank}_numpy_random_2"] = bits(rs.generator("numpy").random(2))
    return out


def main(path: str) -> None:
    if "--fake-cupy" in sys.argv:
        with open(path) as f:
            data = json.load(f)
        data["generators_fake_cupy"] = fake_cupy_generators()
        with open(path, "w") as f:
            json.dump(data, f, separators=(",", ":"))
            f.write("\n")
        return
    s, t, c = cases()
    u0, u1 = xp.rng.philox_uniform2(s, t, c)
    z0, z1 = xp.rng.philox_normal2(s, t, c)
    ctr = np.stack([c & 0xFFFFFFFF, c >> 32, t & 0xFFFFFFFF, t >> 32], axis=-1).astype(np.uint32)
    words = xp.rng.philox4x32_10(
        ctr, (s & 0xFFFFFFFF).astype(np.uint32), (s >> 32).astype(np.uint32)
    )
    device = np.zeros((len(s), len(DEVICE_COLUMNS)))
    emulate_cuda_kernel(CudaKernel(DRAW, "draw"), s, t, c, device, len(s), n_threads=len(s))
    data = {
        "generated_with": f"cunumpy {xp.__version__}, numpy {np.__version__}",
        "seed": [str(int(v)) for v in s],
        "stream": [str(int(v)) for v in t],
        "counter": [str(int(v)) for v in c],
        "words": [[f"{int(w):08x}" for w in row] for row in words],
        "uniform0": bits(u0),
        "uniform1": bits(u1),
        "normal0": bits(z0),
        "normal1": bits(z1),
        "emulated_device": {n: bits(device[:, j]) for j, n in enumerate(DEVICE_COLUMNS)},
        "generators": generators(),
    }
    with open(path, "w") as f:
        json.dump(data, f, separators=(",", ":"))
        f.write("\n")


if __name__ == "__main__":
    main(sys.argv[1])
