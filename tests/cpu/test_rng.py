"""xp.rng against values drawn with cunumpy 0.7.1 (tests/data/rng_0.7.1.json, written by
scripts/rng_reference_0_7_1.py): the philox_* host twins of random.cuh bit for bit, and the
seeded generators (get_rng, random_streams, RandomStreams) draw for draw."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import cunumpy as xp
from cunumpy.exceptions import RandomStreamsError

DATA = Path(__file__).resolve().parents[1] / "data" / "rng_0.7.1.json"
REF = json.loads(DATA.read_text())


def floats(hexes: list[str]) -> np.ndarray:
    return np.array([int(h, 16) for h in hexes], dtype=np.uint64).view(np.float64)


def cases() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return tuple(  # type: ignore[return-value]
        np.array([int(v) for v in REF[k]], dtype=np.uint64) for k in ("seed", "stream", "counter")
    )


def same_bits(got: object, hexes: list[str]) -> None:
    np.testing.assert_array_equal(
        np.asarray(got, dtype=np.float64).view(np.uint64), floats(hexes).view(np.uint64)
    )


def test_philox_words_equal_0_7_1():
    s, t, c = cases()
    words = np.array([[int(w, 16) for w in row] for row in REF["words"]], dtype=np.uint32)
    np.testing.assert_array_equal(xp.rng.random_bits(s, t, c), words)
    ctr = np.stack([c & 0xFFFFFFFF, c >> 32, t & 0xFFFFFFFF, t >> 32], axis=-1)
    got = xp.rng.philox4x32_10(counter=ctr.astype(np.uint32), key0=(s & 0xFFFFFFFF), key1=(s >> 32))
    assert got.dtype == np.uint32
    np.testing.assert_array_equal(got, words)


def test_uniforms_and_normals_equal_0_7_1_bit_for_bit():
    s, t, c = cases()
    u0, u1 = xp.rng.philox_uniform2(s, t, c)
    same_bits(u0, REF["uniform0"])
    same_bits(u1, REF["uniform1"])
    same_bits(xp.rng.philox_uniform(s, t, c), REF["uniform0"])
    z0, z1 = xp.rng.philox_normal2(s, t, c)
    same_bits(z0, REF["normal0"])
    same_bits(z1, REF["normal1"])
    same_bits(xp.rng.philox_normal(s, t, c), REF["normal0"])


def test_philox_broadcasts_and_returns_scalars_for_scalars():
    s, t, c = cases()
    u0, u1 = xp.rng.philox_uniform2(int(s[70]), int(t[70]), int(c[70]))
    assert isinstance(u0, np.float64) and isinstance(u1, np.float64)
    same_bits([u0, u1], [REF["uniform0"][70], REF["uniform1"][70]])
    grid = xp.rng.philox_uniform(42, np.arange(4, dtype=np.uint64)[:, None], np.arange(3))
    assert grid.shape == (4, 3)
    assert grid[2, 1] == xp.rng.philox_uniform(42, 2, 1)
    # negative Python ints wrap modulo 2**64, as the C arguments do
    assert xp.rng.philox_uniform(-1, 0, 0) == xp.rng.philox_uniform(2**64 - 1, 0, 0)
    with pytest.raises(TypeError, match="seed must be integers"):
        xp.rng.philox_uniform(1.5, 0, 0)


def test_two_result_forms_unpack_like_0_7_1():
    ids = np.arange(2, dtype=np.uint64)
    u0, u1 = xp.rng.philox_uniform2(7, ids, 3)  # two ids: still the pair of arrays
    assert u0.shape == (2,) and u1.shape == (2,)
    assert u0[1] == xp.rng.philox_uniform(7, 1, 3)
    z0, z1 = xp.rng.philox_normal2(7, np.arange(1000, dtype=np.uint64), 0)
    r = z0**2 + z1**2
    assert abs(np.mean(z0)) < 0.15 and abs(np.std(z1) - 1) < 0.1 and r.min() > 0


def test_get_rng_and_random_streams_equal_0_7_1():
    gen = REF["generators"]
    assert list(xp.rng.BIT_GENERATORS) == gen["BIT_GENERATORS"]
    assert repr(xp.rng.RandomStreams()) == gen["not_seeded_repr"]
    same_bits(xp.rng.get_rng(7).random(5), gen["get_rng_7_random_5"])
    same_bits(xp.rng.get_rng(123).standard_normal(5), gen["get_rng_123_standard_normal_5"])
    for key, want in gen["streams"].items():
        bit_generator, rank = key.rsplit("_rank", 1)
        rs = xp.rng.RandomStreams()
        rs.seed(42, rank=int(rank), bit_generator=bit_generator)
        same_bits(np.random.random(2), want["np_random_after_seed"])
        assert repr(rs) == want["repr"]
        same_bits(rs.random(4), want["random_4"])
        same_bits(rs.normal(1.0, 2.0, 3), want["normal_3"])
        same_bits(rs.uniform(-1.0, 3.0, 3), want["uniform_3"])
        same_bits(rs.standard_normal(2), want["standard_normal_2"])
        fresh = xp.rng.RandomStreams()
        fresh.seed(42, rank=int(rank), bit_generator=bit_generator)
        same_bits(fresh.make_generator().random(2), want["make_generator_none_random_2"])
        same_bits(fresh.make_generator(9).random(2), want["make_generator_9_random_2"])


def test_random_streams_is_the_process_instance_and_reseeds():
    xp.rng.random_streams.seed(5)
    a = xp.rng.random_streams.random(3)
    assert xp.rng.random_streams.generator() is xp.rng.random_streams.generator("numpy")
    xp.rng.random_streams.seed(5)
    np.testing.assert_array_equal(xp.rng.random_streams.random(3), a)
    xp.rng.random_streams.seed(5, rank=1)
    assert not np.array_equal(xp.rng.random_streams.random(3), a)
    # a generator passed as rng= is used instead of the process one
    np.testing.assert_array_equal(
        xp.rng.random_streams.random(3, rng=np.random.default_rng(1)),
        np.random.default_rng(1).random(3),
    )


def test_random_streams_refuses_unknown_names_with_typed_errors():
    rs = xp.rng.RandomStreams()
    with pytest.raises(RandomStreamsError, match="bit_generator must be one of .*'Mersenne'"):
        rs.seed(1, bit_generator="Mersenne")
    with pytest.raises(ValueError, match="backend must be 'numpy' or 'cupy', got 'gpu'"):
        rs.generator("gpu")


def run_fake(code: str) -> str:
    env = {**os.environ, "CUNUMPY_FAKE_CUPY": "1", "CUNUMPY_BACKEND": "cupy"}
    done = subprocess.run(
        [sys.executable, "-c", "import cunumpy\n" + textwrap.dedent(code)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


def test_on_the_emulated_device_generators_and_philox_match_0_7_1():
    run_fake(
        f"""
        import json
        import numpy as np
        import cupy
        import cunumpy as xp
        from cunumpy.profiling import count_transfers
        ref = json.load(open({str(DATA)!r}))
        fake = ref["generators_fake_cupy"]

        def same(got, hexes):
            assert type(got) is cupy.ndarray, type(got)
            want = np.array([int(h, 16) for h in hexes], dtype=np.uint64)
            np.testing.assert_array_equal(got.get().view(np.uint64), want)

        same(xp.rng.get_rng(7).random(5), fake["get_rng_7_random_5"])
        for rank in (0, 3):
            rs = xp.rng.RandomStreams()
            rs.seed(42, rank=rank)
            same(rs.random(4), fake[f"PCG64_rank{{rank}}_random_4"])
            same(rs.normal(1.0, 2.0, 3), fake[f"PCG64_rank{{rank}}_normal_3"])
            host = rs.generator("numpy").random(2)
            assert type(host) is np.ndarray
            np.testing.assert_array_equal(
                host.view(np.uint64),
                np.array([int(h, 16) for h in fake[f"PCG64_rank{{rank}}_numpy_random_2"]],
                         dtype=np.uint64),
            )

        # philox_* on device arrays: results on the device, same bits, nothing copied
        s, t, c = (np.array([int(v) for v in ref[k]], dtype=np.uint64)
                   for k in ("seed", "stream", "counter"))
        ds, dt, dc = cupy.asarray(s), cupy.asarray(t), cupy.asarray(c)
        with count_transfers() as counter:
            u0, u1 = xp.rng.philox_uniform2(ds, dt, dc)
            z0, z1 = xp.rng.philox_normal2(42, dt, 17)
        assert counter.to_device == 0 and counter.to_host == 0, counter.report()
        same(u0, ref["uniform0"])
        same(u1, ref["uniform1"])
        hz0, hz1 = xp.rng.philox_normal2(42, t, 17)
        np.testing.assert_array_equal(z0.get(), hz0)
        np.testing.assert_array_equal(z1.get(), hz1)
        print("OK")
        """
    )


def test_the_random_numbers_guide_runs(capsys):
    guide = Path(__file__).resolve().parents[2] / "docs" / "random-numbers.md"
    blocks = re.findall(r"```python\n(.*?)```", guide.read_text(), flags=re.S)
    assert len(blocks) == 2
    for code in blocks:
        exec(compile(code, str(guide), "exec"), {})
    assert "RandomStreams(entropy=42, spawn_key=(0,), bit_generator='PCG64')" in (
        capsys.readouterr().out
    )
