"""Issue 21, item 10 on a real GPU: the kernels of ``tests/programs/real_cuda_constructs.cu``
(same-source typedefs, ``__grid_constant__``, ``clock``/``clock64``, C default arguments,
``None`` for a pointer, block-level cooperative groups) give on the GPU what they give on the
emulated device (``tests/cxx/test_trust_emulator_cxx.py``) and what NumPy computes;
``template_args=(float,)`` is C++ ``float``; ``compile()`` then launch."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from cunumpy.kernels import CudaKernel

pytestmark = pytest.mark.gpu

REAL = (Path(__file__).resolve().parents[1] / "programs" / "real_cuda_constructs.cu").read_text()


def _cuda_include_dirs() -> list[str]:
    """Folders holding ``cooperative_groups.h`` (NVRTC may need the toolkit's include folder)."""
    found = []
    candidates = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"]
    try:
        import cupy

        candidates.append(cupy.cuda.get_cuda_path())
    except Exception:  # noqa: BLE001 - only a hint where to look
        pass
    try:
        import nvidia.cuda_runtime as rt  # the pip wheels' headers

        candidates.append(str(Path(next(iter(rt.__path__)))))
    except Exception:  # noqa: BLE001
        pass
    for base in filter(None, candidates):
        inc = Path(base) / "include"
        if (inc / "cooperative_groups.h").is_file():
            found.append(str(inc))
            # CUDA 13 keeps libcu++ (`cuda/std/...`, which cooperative groups include) in cccl/
            if (inc / "cccl").is_dir():
                found.append(str(inc / "cccl"))
    return found


def _kernel(name: str, **kwargs):
    return CudaKernel(REAL, name, include_dirs=_cuda_include_dirs(), **kwargs)


def test_gpu_typedefs_and_grid_constant_struct():
    import cupy

    from cunumpy.arguments import CudaStruct

    params = CudaStruct("Params", [("scale", "float"), ("n", "int")])
    x = cupy.arange(10, dtype=cupy.float32)
    _kernel("scale_typedef", structs=[params])(
        x, params(scale=3.0, n=10), np.uint32(2), grid=1, block=8
    )
    want = np.arange(10, dtype=np.float32)
    want[::2] *= 3
    np.testing.assert_array_equal(x.get(), want)


def test_gpu_clock_and_clock64():
    import cupy

    ticks, small = cupy.zeros(8, cupy.int64), cupy.zeros(8, cupy.int64)
    _kernel("timed")(ticks, small, np.int32(8), grid=1, block=8)
    assert ticks.get().tolist() == [1] * 8 and small.get().tolist() == [1] * 8


def test_gpu_default_arguments_and_none_pointer():
    import cupy

    k = _kernel("axpb")
    x = cupy.arange(6, dtype=cupy.float32)
    xh = x.get()
    for extra, want in [
        ((), 2.0 * xh + 0.5),
        ((np.float32(3.0), np.float32(1.0)), 3.0 * xh + 1.0),
        ((np.float32(1.0), np.float32(0.0), None), xh),
        ((np.float32(1.0), np.float32(0.0), x), 2 * xh),
    ]:
        y = cupy.zeros(6, cupy.float32)
        k(y, x, np.int32(6), *extra, grid=1, block=8)
        np.testing.assert_allclose(y.get(), want, rtol=1e-6, err_msg=str(extra))


def test_gpu_cooperative_groups_match_numpy():
    import cupy

    xh = np.linspace(-1, 1, 200).astype(np.float32)
    out, tile = cupy.zeros(2, cupy.float32), cupy.zeros(25, cupy.float32)
    _kernel("block_sums")(cupy.asarray(xh), out, tile, np.int32(200), grid=2, block=128)
    np.testing.assert_allclose(out.get(), [xh[:128].sum(), xh[128:].sum()], atol=1e-5)
    np.testing.assert_allclose(tile.get(), xh.reshape(25, 8).sum(axis=1), atol=1e-5)


def test_gpu_template_float_is_cpp_float_and_compile_then_launch():
    import cupy

    src = "template <typename T> __global__ void inc(T* x) { x[threadIdx.x] += T(1); }"
    k = CudaKernel(src, "inc", template_args=(float,)).compile()
    x = cupy.zeros(4, cupy.float32)
    k(x, grid=1, block=4)
    assert x.get().tolist() == [1.0] * 4
