"""reduce.cuh and random.cuh as host C++: freestanding type checks (as under NVRTC), with the
emulator prelude, and random.cuh's numbers against their NumPy twins in cunumpy.rng."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from cunumpy import rng

ROOT = Path(__file__).resolve().parents[2]
INCLUDE = ROOT / "python" / "cunumpy" / "include"
HERE = Path(__file__).resolve().parent / "reduce_random"
PRELUDE = ROOT / "crates" / "cunumpy-emu" / "prelude" / "cunumpy_emu.h"
CXX = os.environ.get("CXX") or shutil.which("g++") or shutil.which("c++")
WARN = ["-std=c++17", "-Wall", "-Wextra", "-Wpedantic", "-Wshadow", "-Werror"]

pytestmark = pytest.mark.skipif(CXX is None, reason="needs a host C++ compiler")


def _cxx(*args: str | Path) -> subprocess.CompletedProcess[str]:
    cmd = [str(CXX), *map(str, args)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert done.returncode == 0, f"{' '.join(cmd)}\n{done.stderr}"
    return done


@pytest.mark.parametrize("header", ["reduce.cuh", "random.cuh"])
def test_headers_include_only_cunumpy_headers(header: str) -> None:
    text = (INCLUDE / "cunumpy" / header).read_text()
    includes = [ln.strip() for ln in text.splitlines() if ln.strip().startswith("#include")]
    assert all(i.startswith("#include <cunumpy/") for i in includes), includes
    assert f"#ifndef CUNUMPY_{header.split('.')[0].upper()}_CUH" in text


@pytest.mark.parametrize("arch", ["", "-D__CUDA_ARCH__=500", "-D__CUDA_ARCH__=900"])
def test_headers_compile_freestanding(tmp_path: Path, arch: str) -> None:
    for header in ("reduce.cuh", "random.cuh"):
        alone = tmp_path / "alone.cpp"
        alone.write_text(f"#include <cunumpy/{header}>\n")
        flags = [*WARN, "-fsyntax-only", "-nostdinc", "-nostdinc++", "-DCUNUMPY_TEST_FREESTANDING"]
        _cxx(
            *flags,
            *([arch] if arch else []),
            "-I",
            INCLUDE,
            "-include",
            HERE / "shim_warp.h",
            alone,
        )
    _cxx(
        *WARN, "-fsyntax-only", "-nostdinc", "-nostdinc++", "-DCUNUMPY_TEST_FREESTANDING",
        *([arch] if arch else []), "-I", INCLUDE, "-include", HERE / "shim_warp.h",
        HERE / "use_headers.cpp",
    )  # fmt: skip


@pytest.mark.skipif(not PRELUDE.is_file(), reason="no emulator prelude")
def test_headers_compile_with_the_emulator_prelude() -> None:
    _cxx("-std=c++17", "-Wall", "-Wextra", "-Werror", "-fsyntax-only", "-I", INCLUDE,
         "-include", PRELUDE, HERE / "use_headers.cpp")  # fmt: skip


@pytest.fixture(scope="module")
def printer(tmp_path_factory: pytest.TempPathFactory) -> Path:
    exe = tmp_path_factory.mktemp("rng") / "print_random"
    _cxx("-std=c++17", "-O1", "-I", INCLUDE, "-include", HERE / "shim_warp.h",
         HERE / "print_random.cpp", "-o", exe)  # fmt: skip
    return exe


def test_random_is_bit_identical_to_the_numpy_twin(printer: Path) -> None:
    gen = np.random.default_rng(7)
    big = np.iinfo(np.uint64).max
    seeds = np.array([0, 1, big, 2**32, 2**32 - 1, *gen.integers(0, big, 59, np.uint64)], np.uint64)
    streams = np.array([0, 0, big, 5, 2**40, *gen.integers(0, big, 59, np.uint64)], np.uint64)
    counters = np.array([0, 1, big, 2**33 + 1, 3, *gen.integers(0, big, 59, np.uint64)], np.uint64)
    lines = "".join(f"{s} {t} {c}\n" for s, t, c in zip(seeds, streams, counters, strict=True))
    out = subprocess.run([printer], input=lines, capture_output=True, text=True, check=True)
    rows = [ln.split() for ln in out.stdout.splitlines()]
    assert len(rows) == len(seeds)
    bits = np.array([[int(w) for w in r[:4]] for r in rows], dtype=np.uint32)
    np.testing.assert_array_equal(rng.random_bits(seeds, streams, counters), bits)
    u1 = np.array([int(r[4]) for r in rows], dtype=np.uint64).view(np.float64)
    u2 = np.array([int(r[5]) for r in rows], dtype=np.uint64).view(np.float64)
    np.testing.assert_array_equal(rng.philox_uniform(seeds, streams, counters), u1)
    np.testing.assert_array_equal(rng.philox_uniform2(seeds, streams, counters)[1], u2)
    n1 = np.array([float(r[6]) for r in rows])
    n2 = np.array([float(r[7]) for r in rows])
    np.testing.assert_allclose(
        rng.philox_normal(seeds, streams, counters), n1, rtol=1e-14, atol=1e-15
    )
    np.testing.assert_allclose(
        rng.philox_normal2(seeds, streams, counters)[1], n2, rtol=1e-14, atol=1e-15
    )
