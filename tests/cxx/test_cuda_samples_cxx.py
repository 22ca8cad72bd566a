"""scripts/cuda_samples.py (the CUDA-samples harness, ``make cuda-samples``) on a checkout of
our own: small sample-like files written here (a program with host code and ``main``, a
template kernel file, a kernel the signature checks refuse), run on the emulated device through
``--cases``; the summary counts passed, failed, refused and missing cases, and the exit status
says whether one failed. NVIDIA's samples themselves are not in the repository."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from cunumpy.kernel_testing import emulation_compiler

pytestmark = [
    pytest.mark.cxx,
    pytest.mark.skipif(emulation_compiler() is None, reason="needs a host C++ compiler"),
]

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "cuda_samples.py"

PROGRAM = r"""
// a sample program: helpers, host code and main around the kernels
#include <cooperative_groups.h>
#include <helper_cuda.h>
#include <stdio.h>
namespace cg = cooperative_groups;
#define SCALE 2.0f
typedef unsigned int uint;
const char *sample_name = "saxpy";   /* a host variable */
__device__ float twice(float v) { return SCALE * v; }
__global__ void saxpy(float a, const float *x, float *y, uint n) {
    uint i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + twice(y[i]);
}
__global__ void shift_left(const int *in, int *out) {
    cg::thread_block block = cg::this_thread_block();
    __shared__ int tile[64];
    tile[threadIdx.x] = in[blockIdx.x * 64 + threadIdx.x];
    cg::sync(block);
    out[blockIdx.x * 64 + threadIdx.x] = tile[(threadIdx.x + 1) % 64];
}
__constant__ float c_offsets[4];   /* set by the host with cudaMemcpyToSymbol in a sample */
__global__ void add_offsets(float *y) { y[threadIdx.x] += c_offsets[threadIdx.x % 4]; }
static int host_helper(int v) { return v + 1; }
int main(int argc, char **argv) {
    float *x, *y;
    saxpy<<<1, 1>>>(1.0f, x, y, 0);
    printf("%d\n", host_helper(1));
    return 0;
}
"""

TEMPLATE = r"""
template <typename T, int BLOCK> __global__ void block_sum(const T *x, T *partial) {
    __shared__ T s[BLOCK];
    s[threadIdx.x] = x[blockIdx.x * BLOCK + threadIdx.x];
    __syncthreads();
    for (int stride = BLOCK / 2; stride > 0; stride >>= 1) {
        if (threadIdx.x < stride) s[threadIdx.x] += s[threadIdx.x + stride];
        __syncthreads();
    }
    if (threadIdx.x == 0) partial[blockIdx.x] = s[0];
}
"""

VECTOR = r"""
__global__ void swap_xy(float2 *p, int n) {
    int i = threadIdx.x;
    if (i < n) { float t = p[i].x; p[i].x = p[i].y; p[i].y = t; }
}
"""

CASES = """
import numpy as np

def _saxpy_setup(rng):
    x = rng.standard_normal(300).astype(np.float32)
    y = rng.standard_normal(300).astype(np.float32)
    return [np.float32(0.5), x, y, np.uint32(300)]

def _shift_setup(rng):
    return [rng.integers(0, 100, 128).astype(np.int32), np.zeros(128, np.int32)]

CASES = [
    Case(name="mine/saxpy", paths=["Samples/mine/saxpy/saxpy.cu"], kernel="saxpy",
         setup=_saxpy_setup, reference=lambda a: {2: a[0] * a[1] + np.float32(2) * a[2]},
         launch=lambda a: {"n_threads": int(a[3])}),
    Case(name="mine/shift_left", paths=["Samples/mine/saxpy/saxpy.cu"], kernel="shift_left",
         setup=_shift_setup,
         reference=lambda a: {1: np.roll(a[0].reshape(2, 64), -1, axis=1).ravel()},
         launch={"grid": 2, "block": 64}, rtol=0, atol=0),
    Case(name="mine/add_offsets", paths=["Samples/mine/saxpy/saxpy.cu"], kernel="add_offsets",
         setup=lambda rng: [np.ones(8, np.float32)],
         constants={"c_offsets": np.array([1, 2, 3, 4], np.float32)},
         reference=lambda a: {0: a[0] + np.tile(np.float32([1, 2, 3, 4]), 2)},
         launch={"grid": 1, "block": 8}, rtol=0, atol=0),
    Case(name="mine/wrong_constant", paths=["Samples/mine/saxpy/saxpy.cu"],
         kernel="add_offsets", setup=lambda rng: [np.ones(8, np.float32)],
         constants={"c_offsets": np.arange(4.0)},
         reference=lambda a: {}, launch={"grid": 1, "block": 8}),
    Case(name="mine/block_sum", paths=["Samples/mine/sum/sum_kernel.cu"], kernel="block_sum",
         template_args=("double", 128),
         setup=lambda rng: [rng.standard_normal(512), np.zeros(4)],
         reference=lambda a: {1: a[0].reshape(4, 128).sum(axis=1)},
         launch={"grid": 4, "block": 128}),
    Case(name="mine/wrong_reference", paths=["Samples/mine/sum/sum_kernel.cu"],
         kernel="block_sum", template_args=("double", 128),
         setup=lambda rng: [np.ones(512), np.zeros(4)],
         reference=lambda a: {1: np.full(4, 127.0)},
         launch={"grid": 4, "block": 128}),
    Case(name="mine/float2", paths=["Samples/mine/vec/vec.cu"], kernel="swap_xy",
         setup=lambda rng: [np.zeros(8, np.float32), np.int32(4)],
         reference=lambda a: {}, launch={"grid": 1, "block": 4}),
    Case(name="mine/absent", paths=["Samples/mine/absent.cu"], kernel="k",
         setup=lambda rng: [], reference=lambda a: {}, launch={"grid": 1, "block": 1}),
]
"""


def _harness():
    spec = importlib.util.spec_from_file_location("cuda_samples_harness", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look the module up
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def checkout(tmp_path_factory):
    root = tmp_path_factory.mktemp("cuda-samples")
    for rel, text in [
        ("Samples/mine/saxpy/saxpy.cu", PROGRAM),
        ("Samples/mine/sum/sum_kernel.cu", TEMPLATE),
        ("Samples/mine/vec/vec.cu", VECTOR),
    ]:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    (root / "cases.py").write_text(textwrap.dedent(CASES))
    return root


def test_device_code_leaves_host_code_out():
    code = _harness().device_code(PROGRAM)
    assert "int main" not in code and "host_helper" not in code and "sample_name" not in code
    assert "helper_cuda.h" not in code and "stdio.h" not in code
    assert "#include <cooperative_groups.h>" in code
    for kept in (
        "namespace cg = cooperative_groups;",
        "#define SCALE 2.0f",
        "typedef unsigned",
        "__device__ float twice",
        "__global__ void saxpy",
        "__global__ void shift_left",
    ):
        assert kept in code, kept
    assert "a host variable" not in code  # comments go too
    left_out = _harness().device_code(PROGRAM, leave_out=("shift_left",))
    assert "shift_left" not in left_out and "__global__ void saxpy" in left_out
    assert "__constant__ float c_offsets[4];" in code


def test_the_harness_reports_each_case(checkout):
    done = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            str(checkout),
            "--device",
            "all",
            "--cases",
            str(checkout / "cases.py"),
        ],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    summary = json.loads(done.stdout)
    assert done.returncode == 1, done.stderr  # the planted wrong reference fails
    emulated = summary["devices"]["emulated"]
    by_name = {c["name"]: c for c in emulated["cases"]}
    for name in ("mine/saxpy", "mine/shift_left", "mine/add_offsets", "mine/block_sum"):
        assert by_name[name]["status"] == "passed", by_name[name]
    wrong = by_name["mine/wrong_reference"]
    assert wrong["status"] == "failed" and "4 of 4 elements differ" in wrong["reason"]
    refused = by_name["mine/float2"]
    assert refused["status"] == "refused" and "float2" in refused["reason"], refused
    assert "swap_xy" in refused["reason"]
    constant = by_name["mine/wrong_constant"]  # float64 values for a float variable
    assert constant["status"] == "refused" and "CudaConstantTypeError" in constant["reason"]
    assert by_name["mine/absent"]["status"] == "missing"
    # NVIDIA's cases are missing from this checkout, reported as such
    assert by_name["vectorAdd"]["status"] == "missing"
    mine = [c for c in emulated["cases"] if c["name"].startswith("mine/")]
    assert (emulated["passed"], emulated["failed"], emulated["refused"]) == (4, 1, 2)
    assert emulated["ran"] == 5 and emulated["missing"] == len(emulated["cases"]) - len(mine) + 1
    # without a GPU the CuPy run says why it did not run
    cupy_run = summary["devices"]["cupy"]
    assert "skipped" in cupy_run or cupy_run.get("ran", 0) >= 3


def test_only_and_a_bad_checkout(checkout, tmp_path):
    done = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            str(checkout),
            "--device",
            "emulated",
            "--cases",
            str(checkout / "cases.py"),
            "--only",
            "mine/saxpy",
            "--out",
            str(tmp_path / "summary.json"),
        ],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert [c["name"] for c in summary["devices"]["emulated"]["cases"]] == ["mine/saxpy"]
    bad = subprocess.run(
        [sys.executable, str(SCRIPT), str(tmp_path / "nowhere")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert bad.returncode == 2 and "not a folder" in json.loads(bad.stdout)["error"]
