"""The command line (``python -m cunumpy`` and the ``cunumpy`` script) on a machine without a
GPU: ``info``, ``check``, ``catalog`` and ``cache``, run as a user runs them (a subprocess)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import cunumpy
from cunumpy.kernel_testing import emulation_compiler
from cunumpy.kernels import KernelCatalog

TESTS = Path(__file__).resolve().parents[1]
needs_cxx = pytest.mark.skipif(emulation_compiler() is None, reason="needs a host C++ compiler")

GOOD = r"""
#include <cunumpy/index.cuh>
extern "C" __global__ void axpy(double a, const double* x, double* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] += a * x[i];
}
extern "C" __global__ void swap(float2* p, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { float t = p[i].x; p[i].x = p[i].y; p[i].y = t; }
}
"""
BAD = r"""
extern "C" __global__ void broken(double* y, int n) {
    y[threadIdx.x] = undefined_name;
}
"""


@pytest.fixture
def caches(tmp_path):
    kernels, emulation = tmp_path / "kernels", tmp_path / "emulation"
    return {"CUNUMPY_CACHE_DIR": str(kernels), "CUNUMPY_EMULATION_CACHE": str(emulation)}


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full_env = {k: v for k, v in os.environ.items() if k != "CUNUMPY_FAKE_CUPY"}
    full_env.update(CUNUMPY_BACKEND="numpy", PYTHONPATH=str(TESTS), **(env or {}))
    return subprocess.run(
        [sys.executable, "-m", "cunumpy", *args],
        capture_output=True,
        text=True,
        timeout=600,
        env=full_env,
    )


def test_without_a_command_prints_the_help():
    result = cli()
    assert result.returncode == 2
    for command in ("info", "check", "catalog", "cache"):
        assert command in result.stdout


def test_the_console_script_is_installed():
    script = Path(sys.executable).with_name("cunumpy")
    assert script.is_file(), "pip did not install the cunumpy console script"
    result = subprocess.run([str(script), "--help"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and "cache" in result.stdout


def test_info_json_says_what_is_installed_and_why_cuda_is_not(caches):
    Path(caches["CUNUMPY_CACHE_DIR"]).mkdir()
    (Path(caches["CUNUMPY_CACHE_DIR"]) / "entry").write_bytes(b"x" * 1000)
    result = cli("info", "--json", env=caches)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["versions"]["cunumpy"] == cunumpy.__version__
    assert report["versions"]["numpy"] == np.__version__
    assert report["backend"] == "numpy"
    assert report["cupy"]["available"] is cunumpy.cupy_available()
    if not report["cupy"]["available"]:
        assert report["cupy"]["why_not"] and report["devices"] == []
    # the driver and NVRTC are reported as found, or with the reason they are not
    assert ("driver" in report["cuda"]) != ("driver_error" in report["cuda"])
    assert ("nvrtc" in report["cuda"]) != ("nvrtc_error" in report["cuda"])
    assert report["host_compiler"]["path"] == emulation_compiler()
    assert report["caches"]["kernels"] == {
        "path": caches["CUNUMPY_CACHE_DIR"],
        "files": 1,
        "bytes": 1000,
    }
    assert report["caches"]["emulation"]["path"] == caches["CUNUMPY_EMULATION_CACHE"]
    assert report["environment"]["CUNUMPY_CACHE_DIR"] == caches["CUNUMPY_CACHE_DIR"]


def test_info_text(caches):
    result = cli("info", env=caches)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert out.startswith(f"cunumpy {cunumpy.__version__} on Python")
    assert "backend: numpy" in out and "CUDA driver: " in out and "NVRTC: " in out
    assert f"kernels cache: {caches['CUNUMPY_CACHE_DIR']}: 0 file(s), 0 B" in out


@needs_cxx
def test_check_parses_reports_and_compiles_with_the_emulator(tmp_path, caches):
    source = tmp_path / "good.cu"
    source.write_text(GOOD)
    result = cli("check", str(source), "--json", env=caches)
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(result.stdout)
    assert report["ok"] is True
    if not cunumpy.cupy_available():
        assert report["compiler"] == "emulator"
    axpy, swap = report["files"][0]["kernels"]
    assert axpy["kernel"] == "axpy" and axpy["unchecked"] is None
    assert axpy["parameters"] == ["double a", "const double* x", "double* y", "int n"]
    assert axpy["compiled"] == report["compiler"] and axpy["error"] is None
    # a vector type cannot be checked: said, with the parameter; still compiled
    assert swap["parameters"] is None and "float2" in swap["unchecked"]
    assert swap["compiled"] == report["compiler"]
    # --strict turns the unchecked kernel into a failure
    assert cli("check", str(source), "--strict", env=caches).returncode == 1


@needs_cxx
def test_check_fails_on_a_compile_error_with_the_log(tmp_path, caches):
    source = tmp_path / "bad.cu"
    source.write_text(BAD)
    result = cli("check", str(source), env=caches)
    assert result.returncode == 1
    assert "broken(double* y, int n)" in result.stdout
    assert "compile FAILED" in result.stdout and "undefined_name" in result.stdout
    assert result.stdout.rstrip().endswith("check: FAILED")


def test_check_without_kernels_or_file_fails(tmp_path):
    empty = tmp_path / "empty.cu"
    empty.write_text("__device__ double f(double x) { return x; }\n")
    result = cli("check", str(empty), "--no-compile")
    assert result.returncode == 1 and "no __global__ kernel found" in result.stdout
    assert cli("check", str(tmp_path / "missing.cu"), "--no-compile").returncode == 1


def test_catalog_summary_matches_the_catalog():
    sys.path.insert(0, str(TESTS))
    try:
        expected = KernelCatalog.from_package("kernel_pkg")
    finally:
        sys.path.remove(str(TESTS))
    result = cli("catalog", "kernel_pkg", "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["summary"] == expected.summary()
    assert report["with_cuda"] == expected.with_cuda == ["axpy", "scale"]
    assert report["kernels"] == list(expected)


@needs_cxx
def test_catalog_compile_draws_the_progress_bar(caches):
    result = cli("catalog", "kernel_pkg", "--compile", "--emulate", env=caches)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "compiling CUDA kernels [" in result.stderr and "2/2" in result.stderr
    assert "compiled 2 kernel(s) with emulator" in result.stdout
    assert any(Path(caches["CUNUMPY_EMULATION_CACHE"]).rglob("*")), "nothing was cached"


def test_catalog_of_a_missing_package_fails():
    result = cli("catalog", "no_such_package_here")
    assert result.returncode == 1 and "cannot load 'no_such_package_here'" in result.stderr


def test_cache_size_list_clear(caches):
    kernels = Path(caches["CUNUMPY_CACHE_DIR"])
    (kernels / "ab").mkdir(parents=True)
    (kernels / "ab" / "one.cubin").write_bytes(b"1" * 300)
    (kernels / "two.cubin").write_bytes(b"2" * 200)
    size = json.loads(cli("cache", "size", "--json", env=caches).stdout)
    assert size["kernels"] == {"path": str(kernels), "files": 2, "bytes": 500}
    assert size["emulation"]["files"] == 0
    listed = json.loads(cli("cache", "list", "--which", "kernels", "--json", env=caches).stdout)
    assert set(listed) == {"kernels"}
    assert [(e["name"], e["bytes"]) for e in listed["kernels"]["entries"]] == [
        ("ab/one.cubin", 300),
        ("two.cubin", 200),
    ]
    cleared = cli("cache", "clear", "--which", "kernels", env=caches)
    assert cleared.returncode == 0
    assert f"kernels cache: {kernels}: removed 2 file(s), 500 B" in cleared.stdout
    assert not kernels.exists()


TEMPLATE = r"""
template <typename T, int N>
__global__ void fill(T* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = T(N);
}
"""


@needs_cxx
def test_check_instantiates_templates_only_when_told(tmp_path, caches):
    source = tmp_path / "tpl.cu"
    source.write_text(TEMPLATE)
    plain = json.loads(cli("check", str(source), "--json", env=caches).stdout)
    (fill,) = plain["files"][0]["kernels"]
    assert plain["ok"] and fill["compiled"] is None
    assert "template with 2 parameters" in fill["unchecked"]
    assert "-t fill=ARG" in fill["not_compiled"]
    given = cli("check", str(source), "-t", "fill=float,4", "--json", env=caches)
    (fill,) = json.loads(given.stdout)["files"][0]["kernels"]
    assert given.returncode == 0 and fill["parameters"] == ["float* y", "int n"]
    assert fill["compiled"] is not None and fill["error"] is None
