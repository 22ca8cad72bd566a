"""Issue 21 on a real GPU: what the GPU gives for integer division by zero and INT_MIN / -1
(compared with the emulator, which must give the same), fused integer division edge values,
bad ``__cuda_array_interface__`` objects refused before launch, and the launch-size warning."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from cunumpy.exceptions import KernelArgumentTypeError, LaunchSizeWarning
from cunumpy.kernel_testing import emulate_cuda_kernel
from cunumpy.kernels import CudaKernel

pytestmark = pytest.mark.gpu

DIVIDE = r"""
extern "C" __global__ void divide(const T* a, const T* b, T* q, T* r, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { q[i] = a[i] / b[i]; r[i] = a[i] % b[i]; }
}
"""


@pytest.mark.parametrize(
    ("ctype", "dtype"),
    [
        ("int", np.int32),
        ("unsigned int", np.uint32),
        # 64-bit: operands whose upper halves are zero take the 32-bit sequence (x / 0 gives
        # 0xFFFFFFFF, seen on the H200), others the 64-bit routine (the emulator gives all bits
        # set); the table is in docs/testing-without-a-gpu.md
        ("long long", np.int64),
        ("unsigned long long", np.uint64),
    ],
)
def test_gpu_integer_division_edge_values_match_the_emulator(ctype, dtype):
    import cupy

    info = np.iinfo(dtype)
    lo = info.min if info.min < 0 else 5
    m1 = -1 if info.min < 0 else 3
    a = np.array([7, info.max, lo, 9, 0, 100, -7 if info.min < 0 else 1], dtype)
    b = np.array([0, 0, m1, 2, 0, 7, 0], dtype)
    src = DIVIDE.replace("T*", f"{ctype}*")
    da, db = cupy.asarray(a), cupy.asarray(b)
    dq, dr = cupy.zeros_like(da), cupy.zeros_like(da)
    CudaKernel(src, "divide")(da, db, dq, dr, np.int32(a.size), grid=1, block=32)
    q, r = np.zeros_like(a), np.zeros_like(a)
    emulate_cuda_kernel(CudaKernel(src, "divide"), a, b, q, r, np.int32(a.size), grid=1, block=32)
    gpu = (dq.get().tolist(), dr.get().tolist())
    table = [
        f"{x} / {y}: GPU {gq}, {gr}; emulator {eq}, {er}"
        for x, y, gq, gr, eq, er in zip(a, b, *gpu, q, r, strict=True)
        if (gq, gr) != (eq, er)
    ]
    assert not table, f"{ctype}: quotient, remainder differ: " + "; ".join(table)


def test_gpu_fused_integer_division_edge_values_match_numpy():
    import cupy

    import cunumpy as xp

    a = np.array([7, -7, np.iinfo(np.int32).min, 9, 0], np.int32)
    b = np.array([0, 0, -1, 2, -1], np.int32)
    with np.errstate(all="ignore"):
        want = [a // b, a % b]
    da, db = cupy.asarray(a), cupy.asarray(b)
    got = [xp.fuse(lambda x, y: x // y)(da, db), xp.fuse(lambda x, y: x % y)(da, db)]
    for g, w in zip(got, want, strict=True):
        assert g.get().tolist() == w.tolist()


@pytest.mark.parametrize("case", ["null", "negative", "stream0"])
def test_gpu_bad_cuda_array_interface_is_refused_before_launch(case):
    import cupy

    real = cupy.zeros(4)
    shape = (-4,) if case == "negative" else (4,)
    ptr = 0 if case == "null" else real.data.ptr

    class Foreign:
        __cuda_array_interface__ = {
            "data": (ptr, False),
            "shape": shape,
            "typestr": "<f8",
            "version": 3,
            "strides": None,
            "stream": 0 if case == "stream0" else None,
        }

    k = CudaKernel(
        'extern "C" __global__ void fill(double* x, int n) '
        "{ int i = threadIdx.x; if (i < n) x[i] = 1.0; }",
        "fill",
    )
    with pytest.raises(KernelArgumentTypeError, match=r"^fill"):
        k(Foreign(), np.int32(4), grid=1, block=4)
    assert not real.get().any()


def test_gpu_ambiguous_launch_size_warns_once():
    import cupy

    k = CudaKernel(
        'extern "C" __global__ void deposit(double* g, const double* x, int n) '
        "{ int i = blockIdx.x * blockDim.x + threadIdx.x; "
        "if (i < n) atomicAdd(&g[(int)x[i] % 128], 1.0); }",
        "deposit",
    )
    grid, x = cupy.zeros(128), cupy.arange(10_000.0)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        k(grid, x, np.int32(10_000))
        k(grid, x, np.int32(10_000))
    ours = [w for w in seen if issubclass(w.category, LaunchSizeWarning)]
    assert len(ours) == 1 and "launching 128 threads" in str(ours[0].message)
    assert float(grid.sum()) == 256.0
