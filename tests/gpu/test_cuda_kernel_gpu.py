"""CudaKernel on a real GPU: every scalar type, pointers, structs, templates, launch bounds,
streams, foreign arrays (PyTorch), the disk cache, compile errors and the ledger."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from kernel_fixtures import Particle

import cunumpy as xp
from cunumpy.exceptions import (
    CudaCompileError,
    KernelArgumentOverflowError,
    KernelArgumentTypeError,
    KernelArgumentValueError,
)
from cunumpy.kernels import CudaKernel

pytestmark = pytest.mark.gpu

SCALAR_TYPES = {
    "bool": np.bool_,
    "signed char": np.int8,
    "unsigned char": np.uint8,
    "short": np.int16,
    "unsigned short": np.uint16,
    "int": np.int32,
    "unsigned int": np.uint32,
    "long long": np.int64,
    "unsigned long long": np.uint64,
    "float": np.float32,
    "double": np.float64,
    "complex<float>": np.complex64,
    "complex<double>": np.complex128,
}


@pytest.fixture(scope="module")
def cp():
    import cupy

    return cupy


def store_kernel(ctype: str) -> CudaKernel:
    # A minimal complex type with CUDA's layout (the parser maps complex<T> to complex dtypes).
    include = "template <typename T> struct alignas(2 * sizeof(T)) complex { T re, im; };\n"
    source = include + textwrap.dedent(
        f"""
        extern "C" __global__ void store({ctype}* out, {ctype} value) {{
            out[0] = value;
        }}
        """
    )
    return CudaKernel(source, "store", block_size=1)


@pytest.mark.parametrize("ctype", list(SCALAR_TYPES))
def test_every_scalar_type_arrives_exactly(cp, ctype):
    dtype = np.dtype(SCALAR_TYPES[ctype])
    kernel = store_kernel(ctype)
    out = cp.zeros(1, dtype=dtype)
    samples = {
        "b": [True],
        "i": [int(np.iinfo(dtype).min), int(np.iinfo(dtype).max)] if dtype.kind == "i" else [],
        "u": [int(np.iinfo(dtype).max)] if dtype.kind == "u" else [],
        "f": [1.5, -2.25e-3],
        "c": [complex(1.5, -2.0)],
    }[dtype.kind]
    for value in samples:
        kernel(out, value, n_threads=1)
        assert out.get()[0] == dtype.type(value), (ctype, value)
        kernel(out, dtype.type(value), n_threads=1)  # the NumPy scalar of the same type
        assert out.get()[0] == dtype.type(value)


def test_casting_rules_on_the_device(cp):
    out32 = cp.zeros(1, dtype=np.float32)
    store_kernel("float")(out32, 3, n_threads=1)  # an exact int into float
    assert out32.get()[0] == 3.0
    with pytest.raises(KernelArgumentValueError, match="cannot be represented exactly"):
        store_kernel("float")(out32, 2**24 + 1, n_threads=1)
    with pytest.raises(KernelArgumentOverflowError, match="overflows float"):
        store_kernel("float")(out32, 1e300, n_threads=1)
    with pytest.raises(KernelArgumentTypeError, match="cannot take a float64 scalar"):
        store_kernel("float")(out32, np.float64(1.0), n_threads=1)
    out8 = cp.zeros(1, dtype=np.int8)
    with pytest.raises(KernelArgumentOverflowError, match=r"out of range \[-128, 127\]"):
        store_kernel("signed char")(out8, 128, n_threads=1)


AXPY = r"""
extern "C" __global__ void axpy(double a, const double* __restrict__ x, double* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] += a * x[i];
}
"""


def test_pointers_and_inferred_launch_shape(cp):
    kernel = CudaKernel(AXPY, "axpy")
    x = cp.arange(1000, dtype=np.float64)
    y = cp.ones(1000, dtype=np.float64)
    kernel(2.0, x, y, 1000)  # n_threads inferred from x
    np.testing.assert_array_equal(y.get(), 1 + 2 * np.arange(1000.0))
    with pytest.raises(KernelArgumentTypeError, match="arrays are never copied"):
        kernel(2.0, np.ones(3), y, 3, n_threads=3)  # sizes differ: say how many threads
    with pytest.raises(KernelArgumentTypeError, match="must have dtype float64, got float32"):
        kernel(2.0, x.astype(np.float32), y, 1000)
    with pytest.raises(KernelArgumentTypeError, match="must be C-contiguous"):
        kernel(2.0, x[::2], y[:500], 500)


def test_torch_tensor_as_pointer_argument(cp):
    torch = pytest.importorskip("torch")
    kernel = CudaKernel(AXPY, "axpy")
    x = torch.arange(64, dtype=torch.float64, device="cuda")
    y = torch.zeros(64, dtype=torch.float64, device="cuda")
    kernel(3.0, x, y, 64, n_threads=64)
    torch.cuda.synchronize()
    np.testing.assert_array_equal(y.cpu().numpy(), 3 * np.arange(64.0))
    with pytest.raises(KernelArgumentTypeError, match="must have dtype float64, got float32"):
        kernel(3.0, x.float(), y, 64, n_threads=64)


def test_non_default_stream(cp):
    kernel = CudaKernel(AXPY, "axpy")
    x = cp.ones(1 << 20, dtype=np.float64)
    y = cp.zeros(1 << 20, dtype=np.float64)
    s = cp.cuda.Stream(non_blocking=True)
    kernel(1.0, x, y, x.size, stream=s)
    s.synchronize()
    assert float(y.sum()) == x.size
    with s:  # CuPy's current stream is used when none is given
        kernel(1.0, x, y, x.size)
    s.synchronize()
    assert float(y.sum()) == 2 * x.size
    kernel(1.0, x, y, x.size, stream=s.ptr)  # a raw handle
    s.synchronize()
    assert float(y.sum()) == 3 * x.size


def test_repeated_calls_follow_streams_counts_and_new_objects(cp):
    # A repeat of the last call (same objects, same n_threads) launches from the cached
    # checked buffer; a new stream, n_threads or argument object must still take effect.
    kernel = CudaKernel(AXPY, "axpy")
    x = cp.ones(4096, dtype=np.float64)
    y = cp.zeros(4096, dtype=np.float64)
    for _ in range(3):
        kernel(1.0, x, y, 4096, n_threads=4096)
    assert float(y.sum()) == 3 * 4096
    kernel(1.0, x, y, 4096, n_threads=1024)  # fewer threads: only the first 1024 elements
    assert float(y[:1024].sum()) == 4 * 1024 and float(y[1024:].sum()) == 3 * 3072
    s = cp.cuda.Stream(non_blocking=True)
    with s:
        for _ in range(2):
            kernel(1.0, x, y, 4096, n_threads=4096)
        s.synchronize()
    assert float(y[1024:].sum()) == 5 * 3072
    y2 = cp.zeros_like(y)
    kernel(1.0, x, y2, 4096, n_threads=4096)
    assert float(y2.sum()) == 4096
    with pytest.raises(KernelArgumentTypeError):
        kernel(1.0, x, y2.astype(np.float32), 4096, n_threads=4096)


def test_vectorcall_repeats_and_tp_call_launch_alike(cp):
    # Calls go through vectorcall (a repeat launches from there); the same call through
    # `tp_call` (the slot wrapper) takes the PyO3 path. Both must launch, and fail, alike.
    from cunumpy import _core

    assert _core._vectorcall_enabled(CudaKernel)
    kernel = CudaKernel(AXPY, "axpy")
    x = cp.ones(4096, dtype=np.float64)
    y = cp.zeros(4096, dtype=np.float64)
    for _ in range(3):
        kernel(1.0, x, y, 4096, n_threads=4096)
        type(kernel).__call__(kernel, 1.0, x, y, 4096, n_threads=4096)
    assert float(y.sum()) == 6 * 4096
    for call in (kernel, lambda *a, **k: type(kernel).__call__(kernel, *a, **k)):
        with pytest.raises(KernelArgumentTypeError, match="argument 1"):
            call(1.0, x.astype(np.float32), y, 4096, n_threads=4096)


def test_current_stream_read_from_cupy_matches_cupy(cp):
    # The launcher reads CuPy's current stream through CuPy's C API when it can; a launch on
    # a busy stream must wait for the work already queued there.
    kernel = CudaKernel(AXPY, "axpy")
    x = cp.ones(1 << 22, dtype=np.float64)
    y = cp.zeros(1 << 22, dtype=np.float64)
    for s in (cp.cuda.Stream(non_blocking=True), cp.cuda.Stream(null=True)):
        with s:
            y.fill(0)
            for _ in range(4):
                kernel(1.0, x, y, x.size, n_threads=x.size)
            s.synchronize()
        assert float(y.sum()) == 4 * x.size


def test_stream_read_per_device_is_cupys_current_stream(cp):
    # Launches read CuPy's stream for the current context's device (get_stream_ptr) instead of
    # asking for the device again (get_current_stream_ptr): both must be CuPy's current stream,
    # on the default stream, inside `with stream:` and on another thread.
    import threading

    from cunumpy import _core

    def handles():
        current, on_device, per_device = _core._cupy_stream_handles()
        assert per_device, "CuPy no longer exports get_stream_ptr(int): launches fall back"
        return current, on_device, cp.cuda.get_current_stream().ptr

    seen = [handles()]
    s = cp.cuda.Stream(non_blocking=True)
    with s:
        seen.append(handles())
        assert seen[-1][2] == s.ptr
    seen.append(handles())
    thread_seen = []
    thread = threading.Thread(target=lambda: thread_seen.append(handles()))
    thread.start()
    thread.join()
    assert len(thread_seen) == 1
    for current, on_device, cupy_ptr in seen + thread_seen:
        assert current == on_device == cupy_ptr


STRUCT_SOURCE = r"""
struct Particle { double x; int n; double q; };
extern "C" __global__ void read_particle(Particle p, double* out) {
    out[0] = p.x; out[1] = p.n; out[2] = p.q;
}
"""


def test_struct_by_value(cp):
    kernel = CudaKernel(STRUCT_SOURCE, "read_particle", structs=[Particle], block_size=1)
    out = cp.zeros(3)
    kernel(Particle(1.5, 7, -2.0), out, n_threads=1)
    np.testing.assert_array_equal(out.get(), [1.5, 7.0, -2.0])
    with pytest.raises(KernelArgumentTypeError, match="must be a value of struct Particle"):
        kernel(1.0, out, n_threads=1)


TEMPLATE = r"""
template <typename T, int N>
__global__ void __launch_bounds__(256) fill(T* out, T value) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) out[i] = value * N;
}
"""


def test_templates_with_type_and_value_parameters(cp):
    kernel = CudaKernel(TEMPLATE, "fill", template_args=(np.float32, 5))
    assert kernel.expression == "fill<float, 5>"
    out = cp.zeros(8, dtype=np.float32)
    kernel(out, 2.0, n_threads=8)
    np.testing.assert_array_equal(out.get(), [10] * 5 + [0] * 3)
    with pytest.raises(KernelArgumentTypeError, match="must have dtype float32"):
        kernel(cp.zeros(8), 2.0)


def test_launch_bounds_limit_the_block(cp):
    kernel = CudaKernel(TEMPLATE, "fill", template_args=("double", 4), block_size=512)
    with pytest.raises(ValueError, match="exceeding the 256 device/kernel limit"):
        kernel(cp.zeros(4), 1.0, n_threads=4)
    kernel(cp.zeros(4), 1.0, n_threads=4, block=256)


def test_attributes_report_what_the_source_declares_and_the_register_cap(cp):
    # independent figures: the launch bound, the __shared__ array's bytes and the device's
    # architecture as CuPy reads them; a cap below what the kernel uses binds it
    source = (
        'extern "C" __global__ void __launch_bounds__(256) heavy(double* x, int n) {'
        " __shared__ double tile[512]; double acc[24];"
        " for (int k = 0; k < 24; ++k) acc[k] = x[(threadIdx.x + k) % n];"
        " tile[threadIdx.x] = acc[x[0] > 0 ? 3 : 5]; __syncthreads();"
        " double s = tile[(threadIdx.x + 1) % 256];"
        " for (int k = 0; k < 24; ++k) s += acc[k] * acc[(k * 7) % 24];"
        " x[threadIdx.x % n] = s; }"
    )
    ours = CudaKernel(source, "heavy").attributes
    theirs = cp.RawKernel(source, "heavy").attributes
    assert ours is not None
    assert ours["max_threads_per_block"] == 256
    assert ours["shared_size_bytes"] == 512 * 8
    assert ours["binary_version"] == theirs["binary_version"]
    assert ours["num_regs"] > 32
    # the cap (--maxrregcount) binds a kernel without launch bounds of its own (ptxas lets
    # __launch_bounds__ decide the registers where a kernel has them)
    plain = source.replace("__launch_bounds__(256) ", "")
    free = CudaKernel(plain, "heavy").attributes
    capped = CudaKernel(plain, "heavy", max_registers=32).attributes
    assert free is not None and capped is not None
    assert capped["num_regs"] <= 32 < free["num_regs"]
    # a cap the kernel fits under changes nothing
    roomy = CudaKernel(plain, "heavy", max_registers=255).attributes
    assert roomy is not None and roomy["num_regs"] == free["num_regs"]


def test_compile_error_carries_the_log(cp):
    kernel = CudaKernel(
        'extern "C" __global__ void broken(double* x) { x[0] = undefined_name; }', "broken"
    )
    with pytest.raises(CudaCompileError) as info:
        kernel.compile()
    assert "undefined_name" in info.value.log
    assert "broken" in str(info.value)
    assert any(o.startswith("-I") for o in info.value.options)


def test_launches_are_recorded_in_the_ledger(cp):
    kernel = CudaKernel(AXPY, "axpy")
    x = cp.ones(10)
    with xp.profiling.count_transfers() as counter:
        kernel(1.0, x, x, 10)
        kernel(1.0, x, x, 10)
    assert counter.launches == 2 and counter.total == 0
    assert "kernel 'axpy' grid [1, 1, 1] block [128, 1, 1]" in counter.report()


CACHE_SCRIPT = r"""
import sys, numpy as np, cupy
from cunumpy.kernels import CudaKernel
src = 'extern "C" __global__ void inc(double* x) { if (threadIdx.x < 4) x[threadIdx.x] += 1.0; }'
k = CudaKernel(src, "inc")
k.compile()
x = cupy.zeros(4)
k(x, n_threads=4)
assert x.get().tolist() == [1.0] * 4
print("FROM_CACHE", k.compiled_from_cache)
"""


def run_cache_script(cache_dir):
    env = {**os.environ, "CUNUMPY_CACHE_DIR": str(cache_dir)}
    return subprocess.run(
        [sys.executable, "-c", CACHE_SCRIPT], env=env, capture_output=True, text=True, timeout=300
    )


def test_disk_cache_hit_corruption_and_concurrency(tmp_path):
    first = run_cache_script(tmp_path)
    assert first.returncode == 0, first.stderr
    assert "FROM_CACHE False" in first.stdout
    second = run_cache_script(tmp_path)
    assert "FROM_CACHE True" in second.stdout, second.stderr
    entries = list(tmp_path.glob("*.cnk"))
    assert len(entries) == 1
    data = entries[0].read_bytes()
    entries[0].write_bytes(data[: len(data) // 2])  # truncated: must be recompiled
    third = run_cache_script(tmp_path)
    assert "FROM_CACHE False" in third.stdout, third.stderr
    fresh = tmp_path / "concurrent"
    env = {**os.environ, "CUNUMPY_CACHE_DIR": str(fresh)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", CACHE_SCRIPT],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    outputs = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), outputs
    assert "FROM_CACHE True" in run_cache_script(fresh).stdout


def test_a_worker_thread_compiles_for_the_device_it_is_given(cp):
    from concurrent.futures import ThreadPoolExecutor

    kernel = CudaKernel('extern "C" __global__ void k(double* x) { x[0] += 1.0; }', "k")
    device = cp.cuda.runtime.getDevice()
    with ThreadPoolExecutor(max_workers=1) as pool:  # a thread with no current context
        pool.submit(kernel.compile, device=device).result()
    assert kernel.is_compiled  # on the caller's device: nothing left to compile here
    x = cp.zeros(1)
    kernel(x, n_threads=1)
    assert float(x[0]) == 1.0


def test_kernel_variants_compile_all_report_every_failure(cp):
    from cunumpy.kernels import CudaKernelVariants

    def make(ctype):
        body = "x[0] = 1;" if ctype != "broken" else "x[0] = nope;"
        return CudaKernel(f'extern "C" __global__ void k(double* x) {{ {body} }}', "k")

    variants = CudaKernelVariants(make)
    with pytest.raises(CudaCompileError, match="1 of 3 kernel"):
        variants.compile_all(["a", "broken", "b"], jobs=3)
    assert variants.get("a").is_compiled
