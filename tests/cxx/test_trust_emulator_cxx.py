"""Issue 21 on the emulated device: races reported (and parity in a seeded thread order),
faults through NULL or wild pointers reported instead of killing the process, the GPU's
integer-division values, a damaged emulation cache, and real CUDA code (typedefs,
``__grid_constant__``, ``clock``, default arguments, ``None`` pointers, cooperative groups,
undefined shuffles, ``compile()`` then launch, ``template_args=(float,)``).

Cases that could kill the process run in their own subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from cunumpy.exceptions import (
    CacheFallbackWarning,
    EmulatedKernelFault,
    EmulatedOutOfBoundsError,
    EmulatedRaceError,
    KernelArgumentTypeError,
    KernelArgumentValueError,
)
from cunumpy.kernel_testing import emulate_cuda_kernel, emulation_compiler
from cunumpy.kernels import CudaKernel

pytestmark = [
    pytest.mark.cxx,
    pytest.mark.skipif(emulation_compiler() is None, reason="needs a host C++ compiler"),
]

HIST = r"""
extern "C" __global__ void hist(float* h, const int* cell, const float* w, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) h[cell[i]] += w[i];
}
extern "C" __global__ void hist_atomic(float* h, const int* cell, const float* w, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(&h[cell[i]], w[i]);
}
"""


def _hist_args(n=256, cells=16):
    cell = (np.arange(n) * 7 % cells).astype(np.int32)
    w = np.linspace(0.5, 2.0, n).astype(np.float32)
    return np.zeros(cells, np.float32), cell, w, np.int32(n)


def _run(
    code: str, env: dict[str, str] | None = None, **sources: str
) -> subprocess.CompletedProcess[str]:
    """Runs ``code`` (dedented; each ``NAME`` of ``sources`` replaced by its repr) in a fresh
    interpreter."""
    full = {**os.environ, "OMP_NUM_THREADS": "1", **(env or {})}
    code = textwrap.dedent(code)
    for name, text in sources.items():
        code = code.replace(name, repr(text))
    return subprocess.run(
        [sys.executable, "-c", code],
        env=full,
        capture_output=True,
        text=True,
        timeout=600,
    )


# -- item 3: races ---------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(1, 256), (4, 64)])
def test_unsynchronised_histogram_is_reported_with_kernel_array_index_and_threads(shape):
    h, cell, w, n = _hist_args()
    grid, block = shape
    with pytest.raises(EmulatedRaceError) as e:
        emulate_cuda_kernel(CudaKernel(HIST, "hist"), h, cell, w, n, grid=grid, block=block)
    text = str(e.value)
    # thread 0 and thread 16 both add to h[0] (cell = 7 i mod 16)
    assert text.startswith("kernel 'hist': data race on h[0] (pointer parameter 0 'h')"), text
    assert "written by thread (0,0,0) of block (0,0,0)" in text
    assert "and by thread (16,0,0) of block (0,0,0)" in text, text
    assert e.value.fault == "race" and e.value.kernel == "hist"


def test_atomic_histogram_is_not_a_race_and_matches_numpy():
    h, cell, w, n = _hist_args()
    for seed in (None, 1, 2):
        h[:] = 0
        emulate_cuda_kernel(
            CudaKernel(HIST, "hist_atomic"), h, cell, w, n, grid=4, block=64, shuffle_seed=seed
        )
        np.testing.assert_allclose(h, np.bincount(cell, weights=w, minlength=16), rtol=1e-6)


def test_race_detection_can_be_turned_off():
    h, cell, w, n = _hist_args()
    emulate_cuda_kernel(
        CudaKernel(HIST, "hist"), h, cell, w, n, grid=1, block=256, detect_races=False
    )
    # the serial order hides the race: every update lands
    np.testing.assert_allclose(h, np.bincount(cell, weights=w, minlength=16), rtol=1e-6)


PARITY_PROGRAM = r"""
import numpy as np
import cunumpy as xp
from cunumpy.kernels import CudaKernel, Kernel
from cunumpy.kernel_testing import assert_kernels_agree

SRC = r'''
extern "C" __global__ void neighbour(const int* x, int* buf, int* y) {
    int i = threadIdx.x;
    buf[i] = 2 * x[i];
    // no barrier: thread i - 1 may not have written buf[i - 1] yet
    y[i] = i > 0 ? buf[i - 1] : 0;
}
'''

def neighbour(x, buf, y):
    buf[:] = 2 * x
    y[0] = 0
    y[1:] = buf[:-1]

k = Kernel(neighbour, CudaKernel(SRC, "neighbour", block_size=64))
def make(backend, seed):
    x = xp.asarray(np.arange(1, 65, dtype=np.int32))
    return x, xp.zeros(64, dtype=xp.int32), xp.zeros(64, dtype=xp.int32)
assert_kernels_agree(k, make, n_threads=64)  # the serial order hides the missing barrier
try:
    assert_kernels_agree(k, make, n_threads=64, shuffle_seed=SEED)
except AssertionError as e:
    print("MISMATCH", "shuffle_seed=SEED" in str(e))
else:
    print("AGREED")
"""


def test_parity_in_a_seeded_thread_order_shows_an_order_dependent_kernel_and_names_the_seed():
    outcomes = []
    for seed in (1, 2, 3):
        result = _run(
            "import cunumpy\n" + PARITY_PROGRAM.replace("SEED", str(seed)),
            env={"CUNUMPY_FAKE_CUPY": "1"},
        )
        assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
        outcomes.append(result.stdout.strip().splitlines()[-1])
    assert "MISMATCH True" in outcomes, outcomes  # at least one seed shows it, naming the seed
    assert all(o in ("MISMATCH True", "AGREED") for o in outcomes), outcomes


def test_shuffled_threads_on_the_emulated_device_reports_a_race_and_restores_the_order():
    code = """
        import cunumpy, numpy as np, cupy
        from cunumpy.kernels import CudaKernel
        from cunumpy.kernel_testing import shuffled_threads
        from cunumpy.exceptions import EmulatedRaceError
        from cunumpy import _core
        src = SOURCE
        h, w = cupy.zeros(16, np.float32), cupy.ones(256, np.float32)
        c = cupy.asarray(np.arange(256, dtype=np.int32) % 16)
        with shuffled_threads(11):
            assert _core._set_emulated_launch_order(11, True) == (11, True)
            try:
                CudaKernel(src, "hist")(h, c, w, np.int32(256))
            except EmulatedRaceError as e:
                print("RACE", "data race on h[" in str(e))
        print("RESTORED", _core._set_emulated_launch_order(None, True))
        """
    result = _run(code, env={"CUNUMPY_FAKE_CUPY": "1"}, SOURCE=HIST)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "RACE True" in result.stdout and "RESTORED (None, True)" in result.stdout, result.stdout


# -- item 7: NULL and wild pointers, division --------------------------------------------------
WILD = r"""
extern "C" __global__ void store(float* x, long long where) {
    if (threadIdx.x == 2) *(float*)where = 1.0f;
    x[threadIdx.x] = 2.0f;
}
"""


@pytest.mark.parametrize(
    ("where", "bounds", "needle"),
    [
        (0, True, "through a NULL pointer"),
        (0, False, "through a NULL pointer"),
        (0x10000000000, True, "points into no array"),
        (0x10000000000, False, "points into no array"),
    ],
)
def test_a_write_through_null_or_a_wild_pointer_is_reported_not_a_segfault(where, bounds, needle):
    result = _run(
        f"""
        import numpy as np
        from cunumpy.kernels import CudaKernel
        from cunumpy.kernel_testing import emulate_cuda_kernel
        from cunumpy.exceptions import EmulatedOutOfBoundsError
        k = CudaKernel(WILD_SOURCE, "store")
        x = np.zeros(4, np.float32)
        try:
            emulate_cuda_kernel(k, x, np.int64({where}), grid=1, block=4, bounds={bounds})
        except EmulatedOutOfBoundsError as e:
            print("REPORTED", str(e))
        # the process carries on and launches again
        emulate_cuda_kernel(k, x, np.int64(x.ctypes.data), grid=1, block=4, bounds={bounds})
        print("AGAIN", x.tolist())
        """,
        WILD_SOURCE=WILD,
    )
    assert result.returncode == 0, f"rc {result.returncode}: {result.stderr[-3000:]}"
    assert "REPORTED kernel 'store'" in result.stdout, result.stdout
    assert needle in result.stdout and "thread (2,0,0) of block (0,0,0)" in result.stdout
    # thread 2 wrote x[0] through the raw address after thread 0 wrote it
    assert "AGAIN [1.0, 2.0, 2.0, 2.0]" in result.stdout, result.stdout


def test_none_for_a_pointer_parameter_is_null_and_a_dereference_is_named():
    src = r"""
    extern "C" __global__ void maybe(const float* w, float* y, int n) {
        int i = threadIdx.x;
        if (i < n) y[i] = w ? w[i] : 1.0f;
    }
    """
    y = np.zeros(4, np.float32)
    k = CudaKernel(src, "maybe")
    emulate_cuda_kernel(k, None, y, np.int32(4), grid=1, block=4)
    np.testing.assert_array_equal(y, np.ones(4, np.float32))
    w = np.arange(4, dtype=np.float32)
    emulate_cuda_kernel(k, w, y, np.int32(4), grid=1, block=4)
    np.testing.assert_array_equal(y, w)
    with pytest.raises(EmulatedOutOfBoundsError, match=r"parameter 1 'y', which is NULL"):
        emulate_cuda_kernel(k, w, None, np.int32(4), grid=1, block=4)
    with pytest.raises(KernelArgumentTypeError, match=r"argument 2 \(int n\).*None"):
        emulate_cuda_kernel(k, w, y, None, grid=1, block=4)


DIVIDE = r"""
extern "C" __global__ void divide(const T* a, const T* b, T* q, T* r, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { q[i] = a[i] / b[i]; r[i] = a[i] % b[i]; }
}
"""


def _gpu_division(x: int, y: int, bits: int, signed: bool) -> tuple[int, int]:
    """The documented table (docs/testing-without-a-gpu.md), computed independently."""
    mask = (1 << bits) - 1
    if y == 0:
        fits = bits == 64 and 0 <= x < 2**32
        v = 0xFFFFFFFF if (bits == 32 or fits) else mask
        if signed and v >= 1 << (bits - 1):
            v -= 1 << bits
        return v, v
    lo = -(1 << (bits - 1))
    if signed and x == lo and y == -1:
        return lo, 0
    q = abs(x) // abs(y) * (1 if (x >= 0) == (y >= 0) else -1)
    return q, x - q * y


@pytest.mark.parametrize(
    ("ctype", "dtype"),
    [
        ("int", np.int32),
        ("unsigned int", np.uint32),
        ("long long", np.int64),
        ("unsigned long long", np.uint64),
    ],
)
def test_integer_division_by_zero_and_min_by_minus_one_give_the_gpu_values(ctype, dtype):
    info = np.iinfo(dtype)
    signed = info.min < 0
    a = [
        7,
        int(info.max),
        int(info.min) if signed else 5,
        9,
        0,
        100,
        -7 if signed else 1,
        2**31 + 5,
    ]
    b = [0, 0, -1 if signed else 3, 2, 0, 7, 0, 0]
    if info.bits == 32:
        a[-1] = 3
    a_, b_ = np.array(a, dtype), np.array(b, dtype)
    q, r = np.zeros_like(a_), np.zeros_like(a_)
    src = DIVIDE.replace("T*", f"{ctype}*")
    emulate_cuda_kernel(CudaKernel(src, "divide"), a_, b_, q, r, np.int32(len(a)), grid=1, block=32)
    want = [_gpu_division(x, y, info.bits, signed) for x, y in zip(a, b, strict=True)]
    assert list(zip(q.tolist(), r.tolist(), strict=True)) == want


# -- item 8: a damaged cache -----------------------------------------------------------------
CACHE_PROGRAM = """
import warnings, numpy as np
warnings.simplefilter("always")
from cunumpy.kernels import CudaKernel
from cunumpy.kernel_testing import emulate_cuda_kernel
from cunumpy.exceptions import CacheFallbackWarning
src = 'extern "C" __global__ void fill(float* x, float v) { x[threadIdx.x] = v; }'
with warnings.catch_warnings(record=True) as seen:
    warnings.simplefilter("always")
    for v in (1.0, 2.0):
        x = np.zeros(4, np.float32)
        emulate_cuda_kernel(CudaKernel(src, "fill"), x, np.float32(v), grid=1, block=4)
        assert x.tolist() == [v] * 4
    other = CudaKernel(src.replace("fill", "fill2"), "fill2")
    emulate_cuda_kernel(other, x, np.float32(3.0), grid=1, block=4)
ours = [str(w.message) for w in seen if issubclass(w.category, CacheFallbackWarning)]
print("WARNINGS", len(ours))
for m in ours:
    print("MESSAGE", m)
"""


def _cache_case(tmp_path: Path, case: str) -> Path:
    cache = tmp_path / "emu-cache"
    if case == "file":
        cache.write_text("not a folder")
    elif case == "entry-is-folder":
        first = _run(CACHE_PROGRAM, env={"CUNUMPY_EMULATION_CACHE": str(cache)})
        assert first.returncode == 0, first.stderr[-3000:]
        for so in cache.glob("*.cnk"):
            so.unlink()
            (so).mkdir()
            (so / "x").write_text("")
    return cache


@pytest.mark.parametrize("case", ["file", "entry-is-folder"])
def test_an_unusable_cache_falls_back_to_a_temporary_one_with_one_warning(tmp_path, case):
    cache = _cache_case(tmp_path, case)
    result = _run(CACHE_PROGRAM, env={"CUNUMPY_EMULATION_CACHE": str(cache)})
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    assert "WARNINGS 1" in result.stdout, result.stdout
    message = next(line for line in result.stdout.splitlines() if line.startswith("MESSAGE"))
    assert str(cache) in message and "CUNUMPY_EMULATION_CACHE" in message, message


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root writes anywhere")
def test_a_read_only_cache_falls_back_with_one_warning(tmp_path):
    cache = tmp_path / "ro"
    cache.mkdir()
    cache.chmod(0o555)
    try:
        result = _run(CACHE_PROGRAM, env={"CUNUMPY_EMULATION_CACHE": str(cache)})
    finally:
        cache.chmod(0o755)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "WARNINGS 1" in result.stdout and str(cache) in result.stdout


def test_build_folders_of_a_killed_process_are_swept_and_slow_compiles_say_so(tmp_path):
    cache = tmp_path / "emu-cache"
    cache.mkdir()
    # a build folder of a process that no longer runs (pid 2**22 + 1 exceeds Linux's pid_max)
    stale = cache / f".cunumpy-emu-build-{2**22 + 1}-0-0"
    stale.mkdir()
    (stale / "half.cpp").write_text("// a build killed half way")
    mine = cache / f".cunumpy-emu-build-{os.getpid()}-0-0"  # a running process's: kept
    mine.mkdir()
    env = {"CUNUMPY_EMULATION_CACHE": str(cache), "CUNUMPY_EMULATION_SLOW_COMPILE": "0"}
    result = _run(CACHE_PROGRAM, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    if Path("/proc").is_dir():
        assert not stale.exists()
    assert mine.exists()
    lines = [ln for ln in result.stderr.splitlines() if ln.startswith("cunumpy: compiling kernel")]
    assert [ln.split("'")[1] for ln in lines] == ["fill", "fill2"], result.stderr
    assert all(f"cached in {cache}; later runs load it" in ln for ln in lines), lines
    again = _run(CACHE_PROGRAM, env=env)  # disk hits: nothing to say
    assert "cunumpy: compiling kernel" not in again.stderr, again.stderr


# -- item 10: real CUDA code -----------------------------------------------------------------
REAL = (Path(__file__).resolve().parents[1] / "programs" / "real_cuda_constructs.cu").read_text()


def test_typedefs_and_grid_constant_structs_are_read_and_run():
    from cunumpy.arguments import CudaStruct

    params = CudaStruct("Params", [("scale", "float"), ("n", "int")])
    k = CudaKernel(REAL, "scale_typedef", structs=[params])
    assert [p.dtype for p in k.signature if p.dtype is not None][:1] == [np.dtype(np.float32)]
    x = np.arange(10, dtype=np.float32)
    emulate_cuda_kernel(k, x, params(scale=3.0, n=10), np.uint32(2), grid=1, block=8)
    want = np.arange(10, dtype=np.float32)
    want[::2] *= 3
    np.testing.assert_array_equal(x, want)


def test_clock_and_clock64_run():
    ticks, small = np.zeros(8, np.int64), np.zeros(8, np.int64)
    emulate_cuda_kernel(CudaKernel(REAL, "timed"), ticks, small, np.int32(8), grid=1, block=8)
    assert ticks.tolist() == [1] * 8 and small.tolist() == [1] * 8


def test_default_arguments_are_applied_and_none_is_null():
    k = CudaKernel(REAL, "axpb")
    x = np.arange(6, dtype=np.float32)
    for extra, want in [
        ((), 2.0 * x + 0.5),
        ((np.float32(3.0),), 3.0 * x + 0.5),
        ((np.float32(3.0), np.float32(1.0)), 3.0 * x + 1.0),
        ((np.float32(1.0), np.float32(0.0), None), x),
        ((np.float32(1.0), np.float32(0.0), x), 2 * x),
    ]:
        y = np.zeros(6, np.float32)
        emulate_cuda_kernel(k, y, x, np.int32(6), *extra, grid=1, block=8)
        np.testing.assert_allclose(y, want, rtol=1e-6, err_msg=str(extra))
    with pytest.raises(KernelArgumentTypeError, match=r"missing 1 argument: argument 2 \(int n\)"):
        emulate_cuda_kernel(k, np.zeros(6, np.float32), x, grid=1, block=8)


def test_a_default_that_is_not_a_literal_is_refused_not_dropped():
    src = '#define A 3\nextern "C" __global__ void f(int* y, int a = A) { y[0] = a; }'
    with pytest.raises(KernelArgumentValueError, match=r"argument 1 \(int a\).*`A`"):
        emulate_cuda_kernel(CudaKernel(src, "f"), np.zeros(1, np.int32), grid=1, block=1)


def test_cooperative_groups_block_tiles_and_reduce():
    x = np.linspace(-1, 1, 200).astype(np.float32)
    out, tile = np.zeros(2, np.float32), np.zeros(25, np.float32)
    for seed in (None, 5):
        emulate_cuda_kernel(
            CudaKernel(REAL, "block_sums"),
            x,
            out,
            tile,
            np.int32(200),
            grid=2,
            block=128,
            shuffle_seed=seed,
        )
        np.testing.assert_allclose(out, [x[:128].sum(), x[128:].sum()], atol=1e-5)
        np.testing.assert_allclose(tile, x.reshape(25, 8).sum(axis=1), atol=1e-5)


def test_a_shuffle_from_a_lane_outside_the_mask_is_reported():
    with pytest.raises(EmulatedKernelFault, match=r"lane 20 of warp 0, which is not in the mask"):
        emulate_cuda_kernel(
            CudaKernel(REAL, "bad_shuffle"), np.zeros(32, np.int32), grid=1, block=32
        )


def test_compile_builds_what_launches_use(tmp_path):
    result = _run(
        """
        import numpy as np, glob, os
        from cunumpy.kernels import CudaKernel
        from cunumpy.kernel_testing import emulated_launches
        src = 'extern "C" __global__ void twice(float* x) { x[threadIdx.x] *= 2.0f; }'
        cache = os.environ["CUNUMPY_EMULATION_CACHE"]
        k = CudaKernel(src, "twice")
        with emulated_launches():
            k.compile()
            built = sorted(glob.glob(cache + "/*.cnk"))
            x = np.ones(4, np.float32)
            k(x, grid=1, block=4)
        print("SAME", built == sorted(glob.glob(cache + "/*.cnk")), len(built), x.tolist())
        """,
        env={"CUNUMPY_EMULATION_CACHE": str(tmp_path / "c")},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "SAME True 2 [2.0, 2.0, 2.0, 2.0]" in result.stdout, result.stdout


def test_template_args_python_float_means_cpp_float():
    src = "template <typename T> __global__ void inc(T* x) { x[threadIdx.x] += T(1); }"
    k = CudaKernel(src, "inc", template_args=(float,))
    assert k.signature[0].dtype == np.dtype(np.float32)
    x = np.zeros(4, np.float32)
    emulate_cuda_kernel(k, x, grid=1, block=4)
    assert x.tolist() == [1.0] * 4
    assert CudaKernel(src, "inc", template_args=(np.float64,)).signature[0].dtype == np.float64
    assert CudaKernel(src, "inc", template_args=(int,)).signature[0].dtype == np.int32


def test_cache_fallback_warning_class_is_a_user_warning():
    assert issubclass(CacheFallbackWarning, UserWarning)
