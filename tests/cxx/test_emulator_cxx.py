"""CUDA kernels run on the CPU by the emulator, on NumPy arrays, against NumPy results.

The kernel set of the emulator issue (warp-shuffle block reduction, shared-memory tiled
transpose, atomic histogram, templates, struct and strided-view arguments), a planted race and
a planted out-of-bounds write, and every GPU test kernel of tests/gpu that does not measure
time, re-run here through ``emulate_cuda_kernel`` (needs a host C++ compiler, no GPU).
"""

import importlib.util
from pathlib import Path

import numpy as np
import pytest
from kernel_fixtures import Step

from cunumpy.exceptions import (
    CudaRuntimeError,
    EmulatedKernelFault,
    EmulatedOutOfBoundsError,
    EmulatedRaceError,
    EmulationCompileError,
    KernelArgumentOverflowError,
    KernelArgumentTypeError,
    KernelArgumentValueError,
)
from cunumpy.kernel_testing import compile_for_emulation, emulate_cuda_kernel, emulation_compiler
from cunumpy.kernels import CudaKernel

pytestmark = [
    pytest.mark.cxx,
    pytest.mark.skipif(emulation_compiler() is None, reason="needs a host C++ compiler"),
]

GPU_TESTS = Path(__file__).resolve().parents[1] / "gpu"


def gpu_test_module(name):
    """A tests/gpu module, for its kernel sources (importing it runs no GPU code)."""
    spec = importlib.util.spec_from_file_location(f"_emu_{name}", GPU_TESTS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


kernels_gpu = gpu_test_module("test_cuda_kernel_gpu")
headers_gpu = gpu_test_module("test_headers_gpu")
emulate = emulate_cuda_kernel


# -- the kernel set of the emulator issue ---------------------------------------------------
BLOCK_SUM = r"""
extern "C" __global__ void block_sum(const double* x, double* partial, int n) {
    __shared__ double warp_sums[32];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    double v = i < n ? x[i] : 0.0;
    for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) warp_sums[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < (int)(blockDim.x >> 5) ? warp_sums[lane] : 0.0;
        for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
        if (lane == 0) partial[blockIdx.x] = v;
    }
}
"""


def warp_tree(values):
    """Lane 0 of a shuffle-down tree over the last axis (32 lanes), in the kernel's order."""
    v = values
    for off in (16, 8, 4, 2, 1):
        v = v[..., :off] + v[..., off : 2 * off]
    return v[..., 0]


def test_block_reduction_with_warp_shuffles_is_bitwise_the_tree_sum():
    kernel = CudaKernel(BLOCK_SUM, "block_sum", block_size=256)
    n = 10_000
    x = np.random.default_rng(1).standard_normal(n)
    blocks = -(-n // 256)
    partial = np.zeros(blocks)
    emulate(kernel, x, partial, n, n_threads=n)
    padded = np.zeros(blocks * 256)
    padded[:n] = x
    warps = warp_tree(padded.reshape(blocks, 8, 32))
    expected = warp_tree(np.concatenate([warps, np.zeros((blocks, 24))], axis=1))
    np.testing.assert_array_equal(partial, expected)
    assert compile_for_emulation(kernel)["uses_fibers"]


TRANSPOSE = r"""
#define TILE 32
extern "C" __global__ void transpose(const float* in, float* out, int rows, int cols) {
    __shared__ float tile[TILE][TILE + 1];
    int x = blockIdx.x * TILE + threadIdx.x, y = blockIdx.y * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += blockDim.y)
        if (x < cols && y + j < rows) tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * cols + x];
    __syncthreads();
    x = blockIdx.y * TILE + threadIdx.x;
    y = blockIdx.x * TILE + threadIdx.y;
    for (int j = 0; j < TILE; j += blockDim.y)
        if (x < rows && y + j < cols) out[(y + j) * rows + x] = tile[threadIdx.x][threadIdx.y + j];
}
"""


def test_shared_memory_tiled_transpose():
    kernel = CudaKernel(TRANSPOSE, "transpose", block_size=(32, 8))
    rows, cols = 70, 45
    a = np.arange(rows * cols, dtype=np.float32).reshape(rows, cols)
    out = np.zeros((cols, rows), np.float32)
    emulate(kernel, a, out, rows, cols, grid=(-(-cols // 32), -(-rows // 32)))
    np.testing.assert_array_equal(out, a.T)


HISTOGRAM = r"""
extern "C" __global__ void histogram(const unsigned char* data, int n, unsigned int* bins) {
    __shared__ unsigned int local[256];
    for (int b = threadIdx.x; b < 256; b += blockDim.x) local[b] = 0;
    __syncthreads();
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        atomicAdd(&local[data[i]], 1u);
    __syncthreads();
    for (int b = threadIdx.x; b < 256; b += blockDim.x)
        if (local[b]) atomicAdd(&bins[b], local[b]);
}
"""


@pytest.mark.parametrize("seed", [None, 7])
def test_atomic_histogram_in_shared_then_global_memory(seed):
    kernel = CudaKernel(HISTOGRAM, "histogram", block_size=128)
    data = np.random.default_rng(2).integers(0, 256, 50_000).astype(np.uint8)
    bins = np.zeros(256, np.uint32)
    emulate(kernel, data, data.size, bins, grid=16, shuffle_seed=seed)
    np.testing.assert_array_equal(bins, np.bincount(data, minlength=256))


POWSUM = r"""
template <typename T> __device__ T square(T v) { return v * v; }
template <typename T, int P>
__global__ void powsum(const T* x, T* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = square(x[i]) * (T)P + x[i];
}
"""


@pytest.mark.parametrize(("dtype", "p"), [(np.float32, 3), (np.int64, 2), (np.float64, 5)])
def test_templated_kernel_with_a_device_helper(dtype, p):
    kernel = CudaKernel(POWSUM, "powsum", template_args=(dtype, p))
    x = ((np.arange(1000) - 500) / (7 if dtype != np.int64 else 1)).astype(dtype)
    out = np.zeros_like(x)
    emulate(kernel, x, out, x.size)
    np.testing.assert_array_equal(out, (x * x) * dtype(p) + x)


PUSH = r"""
struct Step { double dt; int n; float scale; };
extern "C" __global__ void push(Step s, double* x, const double* v) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < s.n) x[i] += s.dt * v[i] * (double)s.scale;
}
"""


def test_struct_argument():
    kernel = CudaKernel(PUSH, "push", structs=[Step])
    x = np.linspace(0, 1, 300)
    v = np.cos(x)
    expected = x + (0.125 * v) * np.float64(np.float32(0.5))
    emulate(kernel, Step(0.125, 300, 0.5), x, v, n_threads=300)
    np.testing.assert_array_equal(x, expected)


DOUBLE_VIEW = r"""
#include <cunumpy/index.cuh>
#include <cunumpy/array_view.cuh>
extern "C" __global__ void double_view(Array2D<double> a) {
    CUNUMPY_GRID_STRIDE_1D(t, a.size()) { a(t / a.shape[1], t % a.shape[1]) *= 2.0; }
}
"""


def test_strided_view_writes_through_to_the_base_array():
    kernel = CudaKernel(DOUBLE_VIEW, "double_view", block_size=32)
    base = np.arange(60.0).reshape(6, 10)
    view = base[::2, ::-3].T
    expected = base.copy()
    expected[::2, ::-3] *= 2
    emulate(kernel, view, n_threads=64)
    np.testing.assert_array_equal(base, expected)


# -- finding what a serial run hides -------------------------------------------------------
RACES = r"""
extern "C" __global__ void racy(int* counter, int* done) {
    int v = counter[0];
    counter[0] = v + 1;            // read-modify-write without an atomic
    done[threadIdx.x] = 1;
}
extern "C" __global__ void fine(int* counter, int* done) {
    atomicAdd(counter, 1);
    done[threadIdx.x] = 1;
}
extern "C" __global__ void neighbours(const int* in, int* out, int sync) {
    __shared__ int s[64];
    s[threadIdx.x] = in[threadIdx.x];
    if (sync) __syncthreads();
    out[threadIdx.x] = s[(threadIdx.x + 1) % 64];
}
"""


def count_with(name, seed, detect_races=False):
    counter, done = np.zeros(1, np.int32), np.zeros(64, np.int32)
    emulate(
        CudaKernel(RACES, name),
        counter,
        done,
        n_threads=64,
        block=64,
        shuffle_seed=seed,
        detect_races=detect_races,
    )
    assert done.all()
    return int(counter[0])


@pytest.mark.parametrize("seed", [None, 3])
def test_planted_race_is_reported_naming_kernel_array_index_and_threads(seed):
    with pytest.raises(EmulatedRaceError, match=r"^kernel 'racy': data race on counter\[0\]") as e:
        count_with("racy", seed, detect_races=True)
    assert e.value.fault == "race" and isinstance(e.value, EmulatedKernelFault)
    assert str(e.value).count("thread (") == 2
    assert count_with("fine", seed, detect_races=True) == 64


def test_planted_race_is_exposed_by_two_shuffle_seeds():
    assert count_with("racy", None) == 64, "the serial order hides the race"
    seeded = [count_with("racy", seed) for seed in (1, 2)]
    assert any(r != 64 for r in seeded), seeded
    assert count_with("racy", 1) == seeded[0], "a seed reproduces its order"
    assert [count_with("fine", seed) for seed in (1, 2)] == [64, 64]


def test_missing_barrier_gives_seed_dependent_results():
    kernel = CudaKernel(RACES, "neighbours", block_size=64)
    data = np.arange(1, 65, dtype=np.int32)
    expected = np.roll(data, -1)
    outs = []
    for seed in (1, 2):
        out = np.zeros(64, np.int32)
        emulate(kernel, data, out, 0, n_threads=64, shuffle_seed=seed)
        outs.append(out)
        fixed = np.zeros(64, np.int32)
        emulate(kernel, data, fixed, 1, n_threads=64, shuffle_seed=seed)
        np.testing.assert_array_equal(fixed, expected)
    assert not np.array_equal(outs[0], outs[1]) or not np.array_equal(outs[0], expected)


OOB = r"""
extern "C" __global__ void off_by_one(const double* x, double* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i <= n) y[i] = 2.0 * x[i < n ? i : 0];
}
"""


def test_planted_out_of_bounds_write_is_reported_and_the_process_survives():
    kernel = CudaKernel(OOB, "off_by_one")
    x = np.ones(10)
    y = np.zeros(12)
    window = y[:10]
    with pytest.raises(EmulatedOutOfBoundsError) as info:
        emulate(kernel, x, window, 10, n_threads=11)
    message = str(info.value)
    assert "off_by_one" in message and "'y'" in message and "element index 10" in message
    assert info.value.fault == "out_of_bounds" and info.value.kernel == "off_by_one"
    assert isinstance(info.value, IndexError) and isinstance(info.value, CudaRuntimeError)
    assert y[10] == 0.0, "the faulting write did not happen"
    emulate(kernel, x, window, 9, n_threads=9)  # the process and the kernel still work
    np.testing.assert_array_equal(window[:9], 2.0)


def test_arguments_are_checked_like_a_gpu_launch():
    kernel = CudaKernel(kernels_gpu.AXPY, "axpy")
    x = np.arange(10.0)
    with pytest.raises(KernelArgumentTypeError, match="must be C-contiguous"):
        emulate(kernel, 2.0, x[::2], np.zeros(5), 5)
    with pytest.raises(KernelArgumentTypeError, match="must have dtype float64, got float32"):
        emulate(kernel, 2.0, x.astype(np.float32), np.zeros(10), 10)
    frozen = np.ones(10)
    frozen.flags.writeable = False
    y = np.zeros(10)
    emulate(kernel, 1.0, frozen, y, 10)  # a read-only input is passed as a private copy
    np.testing.assert_array_equal(y, 1.0)
    emulate(kernel, 1.0, y, frozen, 10)  # writes to a read-only array are dropped
    np.testing.assert_array_equal(frozen, 1.0)


def test_compile_error_carries_the_compiler_log():
    kernel = CudaKernel(
        'extern "C" __global__ void broken(double* x) { x[0] = undefined_name; }', "broken"
    )
    with pytest.raises(EmulationCompileError) as info:
        compile_for_emulation(kernel)
    assert "undefined_name" in info.value.log and "broken" in str(info.value)
    assert info.value.kernel == "broken"


# -- the GPU test kernels of tests/gpu/test_cuda_kernel_gpu.py -----------------------------
@pytest.mark.parametrize("ctype", list(kernels_gpu.SCALAR_TYPES))
def test_every_scalar_type_arrives_exactly(ctype):
    dtype = np.dtype(kernels_gpu.SCALAR_TYPES[ctype])
    kernel = kernels_gpu.store_kernel(ctype)
    out = np.zeros(1, dtype=dtype)
    samples = {
        "b": [True],
        "i": [int(np.iinfo(dtype).min), int(np.iinfo(dtype).max)] if dtype.kind == "i" else [],
        "u": [int(np.iinfo(dtype).max)] if dtype.kind == "u" else [],
        "f": [1.5, -2.25e-3],
        "c": [complex(1.5, -2.0)],
    }[dtype.kind]
    for value in samples:
        out[0] = 0
        emulate(kernel, out, value, n_threads=1)
        assert out[0] == dtype.type(value), (ctype, value)
        out[0] = 0
        emulate(kernel, out, dtype.type(value), n_threads=1)
        assert out[0] == dtype.type(value)


def test_casting_rules():
    out32 = np.zeros(1, dtype=np.float32)
    emulate(kernels_gpu.store_kernel("float"), out32, 3, n_threads=1)
    assert out32[0] == 3.0
    with pytest.raises(KernelArgumentValueError, match="cannot be represented exactly"):
        emulate(kernels_gpu.store_kernel("float"), out32, 2**24 + 1, n_threads=1)
    with pytest.raises(KernelArgumentOverflowError, match="overflows float"):
        emulate(kernels_gpu.store_kernel("float"), out32, 1e300, n_threads=1)
    with pytest.raises(KernelArgumentTypeError, match="cannot take a float64 scalar"):
        emulate(kernels_gpu.store_kernel("float"), out32, np.float64(1.0), n_threads=1)


def test_pointers_and_inferred_launch_shape():
    kernel = CudaKernel(kernels_gpu.AXPY, "axpy")
    x = np.arange(1000, dtype=np.float64)
    y = np.ones(1000)
    emulate(kernel, 2.0, x, y, 1000)  # n_threads inferred from x
    np.testing.assert_array_equal(y, 1 + 2 * np.arange(1000.0))


def test_struct_by_value():
    kernel = CudaKernel(
        kernels_gpu.STRUCT_SOURCE,
        "read_particle",
        structs=[kernels_gpu.Particle],
        block_size=1,
    )
    out = np.zeros(3)
    emulate(kernel, kernels_gpu.Particle(1.5, 7, -2.0), out, n_threads=1)
    np.testing.assert_array_equal(out, [1.5, 7.0, -2.0])
    with pytest.raises(KernelArgumentTypeError, match="must be a value of struct Particle"):
        emulate(kernel, 1.0, out, n_threads=1)


def test_templates_with_type_and_value_parameters():
    kernel = CudaKernel(kernels_gpu.TEMPLATE, "fill", template_args=(np.float32, 5))
    out = np.zeros(8, dtype=np.float32)
    emulate(kernel, out, 2.0, n_threads=8)
    np.testing.assert_array_equal(out, [10] * 5 + [0] * 3)
    with pytest.raises(KernelArgumentTypeError, match="must have dtype float32"):
        emulate(kernel, np.zeros(8), 2.0)
    # __launch_bounds__ is not enforced by the emulator; the kernel runs with a legal block
    wide = CudaKernel(kernels_gpu.TEMPLATE, "fill", template_args=("double", 4), block_size=512)
    out64 = np.zeros(4)
    emulate(wide, out64, 1.0, n_threads=4, block=256)
    np.testing.assert_array_equal(out64, 4.0)


# -- the GPU test kernels of tests/gpu/test_headers_gpu.py ---------------------------------
def test_views_of_1_2_and_5_dimensions_with_strides():
    kernel = CudaKernel(headers_gpu.VIEWS, "fill_linear", block_size=32)
    a = np.zeros(9)[::-1]
    b = np.zeros((6, 4)).T
    c = np.zeros((3, 4, 2, 10, 6))[:, ::-1, :, ::2, :]
    d = np.zeros((5, 7), np.float32)
    emulate(kernel, a, b, c, d, n_threads=64)
    for x in (a, b, c, d):
        np.testing.assert_array_equal(x, np.arange(x.size).reshape(x.shape))


def test_shipped_atomic_header_histogram():
    kernel = CudaKernel(headers_gpu.HIST, "histogram")
    bins = np.random.default_rng(3).integers(0, 16, 20_000).astype(np.int32)
    hd, hi = np.zeros(16), np.zeros(16, np.int32)
    hu, hll = np.zeros(16, np.uint64), np.zeros(16, np.int64)
    h2 = np.zeros((16, 2))
    emulate(kernel, bins, bins.size, hd, hi, hu, hll, h2, n_threads=4096)
    counts = np.bincount(bins, minlength=16)
    for h in (hd, hi, hu):
        np.testing.assert_array_equal(h, counts)
    np.testing.assert_array_equal(hll, -counts)
    expected = np.zeros((16, 2))
    np.add.at(expected, (bins, np.arange(bins.size) & 1), 1.0)
    np.testing.assert_array_equal(h2, expected)


def test_index_macros_stop_out_of_range_threads():
    kernel = CudaKernel(headers_gpu.INDEX, "idx2", block_size=(8, 8))
    out = np.full(13 * 7 + 64, -1, dtype=np.int64)
    emulate(kernel, out, 13, 7, n_threads=(13, 7))
    i, j = np.meshgrid(np.arange(13), np.arange(7), indexing="ij")
    np.testing.assert_array_equal(out[: 13 * 7], (i * 1000 + j).ravel())
    assert (out[13 * 7 :] == -1).all()


def test_debug_mode_out_of_bounds_view_index_is_a_recoverable_trap():
    src = """#include <cunumpy/array_view.cuh>
extern "C" __global__ void oob(Array2D<double> a) { a(0, a.shape[1]) = 1.0; }"""
    kernel = CudaKernel(src, "oob", debug=True)
    with pytest.raises(EmulatedKernelFault) as info:
        emulate(kernel, np.zeros((4, 4)), n_threads=1)
    assert info.value.fault == "trap"
    assert "cunumpy: index 4 is out of bounds for axis 1 with size 4" in str(info.value)


TEMPLATE_POINTER = r"""
template <typename T> __device__ void store_at(T* p, int i, T v) { p[i] = v; }
extern "C" __global__ void put(double* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) store_at(out, i, 2.0 * i);
}
"""


def test_pointer_handed_to_a_template_runs_without_the_checked_build():
    # The checked build wraps pointer parameters in accessors, which a template deducing `T*`
    # does not accept: such a kernel runs unchecked; a shuffled run needs the checked build.
    kernel = CudaKernel(TEMPLATE_POINTER, "put")
    out = np.zeros(100)
    emulate(kernel, out, 100)
    np.testing.assert_array_equal(out, 2.0 * np.arange(100))
    with pytest.raises(EmulationCompileError, match="store_at"):
        emulate(kernel, out, 100, shuffle_seed=1)


def test_a_users_asm_macro_does_not_reach_the_emulators_own_code():
    # struphy 3.5 builds its kernels for the emulator with -Dasm(x)=__trap() (its asm("trap;")
    # lines); the emulator's own assembly must not be rewritten by that macro
    from cunumpy.kernel_testing import emulate_cuda_kernel
    from cunumpy.kernels import CudaKernel

    src = (
        'extern "C" __global__ void fill(float* x, int n) {'
        ' if ((int)threadIdx.x >= n) asm("trap;"); x[threadIdx.x] = 1.0f; }'
    )
    k = CudaKernel(src, "fill", options=("-Dasm(x)=__trap()",))
    x = np.zeros(4, np.float32)
    emulate_cuda_kernel(k, x, np.int32(4), grid=1, block=4)
    assert x.tolist() == [1.0] * 4


def test_inline_ptx_trap_faults_like_trap_and_other_ptx_is_named():
    # CUDA codes stop on a bad value with asm("trap;") (struphy's evaluation kernels do, with no
    # -D option): the emulator runs it as __trap(); PTX it cannot run faults naming the text
    from cunumpy.exceptions import EmulatedKernelFault
    from cunumpy.kernel_testing import emulate_cuda_kernel
    from cunumpy.kernels import CudaKernel

    src = (
        'extern "C" __global__ void fill(float* x, int n, int kind) {'
        " if ((int)threadIdx.x >= n) {"
        '   if (kind == 0) asm("trap;"); else asm(" nanosleep.u32 5; "); }'
        " else x[threadIdx.x] = 1.0f; }"
    )
    k = CudaKernel(src, "fill")
    x = np.zeros(4, np.float32)
    emulate_cuda_kernel(k, x, np.int32(4), np.int32(0), grid=1, block=4)
    assert x.tolist() == [1.0] * 4
    with pytest.raises(EmulatedKernelFault, match=r'asm\("trap;"\)'):
        emulate_cuda_kernel(k, x, np.int32(2), np.int32(0), grid=1, block=4)
    unknown = "inline PTX the emulator cannot run: nanosleep.u32 5;"
    with pytest.raises(EmulatedKernelFault, match=unknown):
        emulate_cuda_kernel(k, x, np.int32(2), np.int32(1), grid=1, block=4)
