"""Trust battery, faults (issue 21): kernels that fault on the emulated device, an emulator
build killed with SIGKILL, and several processes and threads compiling into one cache.

Each case runs in its own interpreter on the emulated device (``CUNUMPY_FAKE_CUPY=1``): it must
not die of a signal, must not hang, and must raise the typed error its fault calls for, after
which the same process launches a good kernel correctly. Results are compared with NumPy.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from cunumpy.kernel_testing import emulation_compiler

pytestmark = pytest.mark.skipif(emulation_compiler() is None, reason="needs a host C++ compiler")

TIMEOUT = 600


def _env(cache: Path | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("CUNUMPY_BACKEND",)}
    env.update(CUNUMPY_FAKE_CUPY="1", OMP_NUM_THREADS="1")
    if cache is not None:
        env["CUNUMPY_EMULATION_CACHE"] = str(cache)
    return env


def run_isolated(code: str, *, cache: Path | None = None) -> str:
    """Runs ``code`` in a fresh interpreter on the emulated device; fails on a signal, a hang
    or a non-zero exit."""
    try:
        done = subprocess.run(
            [sys.executable, "-X", "faulthandler", "-c", textwrap.dedent(code)],
            env=_env(cache),
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"still running after {TIMEOUT} s (a hang)")
    if done.returncode < 0:
        pytest.fail(f"died of {signal.Signals(-done.returncode).name}:\n{done.stderr[-3000:]}")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


# A good kernel launched after each fault: the process is fine and computes right.
AFTER = """
good = CudaKernel('''extern "C" __global__ void twice(double* y, const double* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.0 * x[i];
}''', "twice")
x = np.arange(37.0); y = cupy.zeros(37)
good(y, cupy.asarray(x), np.int32(37))
np.testing.assert_array_equal(y.get(), 2.0 * x)
print("AFTER-OK")
"""

FAULTS = {
    "trap": (
        "if (threadIdx.x == 3) __trap(); x[threadIdx.x] = 1.0;",
        "EmulatedKernelFault",
        "trap",
        ("'f'", "__trap", "thread (3,0,0)"),
    ),
    "assert": (
        "assert(threadIdx.x != 2); x[threadIdx.x] = 1.0;",
        "EmulatedKernelFault",
        "assert",
        ("'f'",),
    ),
    "deadlock": (
        # half the block at __syncthreads, the other half at a __syncwarp the first half
        # never reaches (threads that have exited do not hold a barrier, as on a GPU)
        "if (threadIdx.x < 4) { __syncthreads(); } else { __syncwarp(); } x[threadIdx.x] = 1;",
        "EmulatedKernelFault",
        "deadlock",
        ("'f'", "4 thread(s) wait at __syncthreads()"),
    ),
    "write-past-the-end": (
        "x[threadIdx.x + 8] = 1.0;",
        "EmulatedOutOfBoundsError",
        "out_of_bounds",
        ("'f'", "parameter 0 'x'"),
    ),
    "read-before-the-start": (
        "x[threadIdx.x] = x[(int)threadIdx.x - 1];",
        "EmulatedOutOfBoundsError",
        "out_of_bounds",
        ("'f'", "parameter 0 'x'", "-1"),
    ),
    "far-index": (
        "x[threadIdx.x * 100000000LL] = 1.0;",
        "EmulatedOutOfBoundsError",
        "out_of_bounds",
        ("'f'", "parameter 0 'x'"),
    ),
    "shuffle-outside-its-mask": (
        "double v = __shfl_sync(0x1u, x[threadIdx.x], 0); x[threadIdx.x] = v;",
        "EmulatedKernelFault",
        "invalid_warp_op",
        ("'f'",),
    ),
}


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_a_faulting_kernel_is_reported_and_the_process_goes_on(fault):
    body, cls, kind, names = FAULTS[fault]
    out = run_isolated(
        f"""
        import cunumpy, numpy as np, cupy
        from cunumpy import exceptions
        from cunumpy.kernels import CudaKernel
        k = CudaKernel('extern "C" __global__ void f(double* x) {{ {body} }}', "f")
        x = cupy.zeros(8)
        try:
            k(x, n_threads=8, block=8)
        except exceptions.{cls} as e:
            assert isinstance(e, exceptions.CudaRuntimeError), type(e).__mro__
            assert e.fault == {kind!r} and e.kernel == "f", (e.fault, e.kernel)
            for name in {names!r}:
                assert name in str(e), (name, str(e))
            print("FAULT-OK")
        {textwrap.indent(AFTER, "        ").strip()}
        """
    )
    assert "FAULT-OK" in out and "AFTER-OK" in out


@pytest.mark.parametrize("repeat", [1, 2])
def test_the_same_fault_twice_in_one_process(repeat):
    out = run_isolated(
        f"""
        import cunumpy, numpy as np, cupy
        from cunumpy import exceptions
        from cunumpy.kernels import CudaKernel
        k = CudaKernel('extern "C" __global__ void f(double* x) {{ x[threadIdx.x + 8] = 1; }}', "f")
        for _ in range({repeat} + 1):
            try:
                k(cupy.zeros(8), n_threads=8, block=8)
            except exceptions.EmulatedOutOfBoundsError:
                print("FAULT-OK")
        {textwrap.indent(AFTER, "        ").strip()}
        """
    )
    assert out.count("FAULT-OK") == repeat + 1 and "AFTER-OK" in out


def _unique_kernel(tag: str) -> str:
    # a constant of its own makes a kernel no cache has seen
    return (
        f'extern "C" __global__ void scaled(double* y, const double* x, int n) {{\n'
        f"    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        f"    if (i < n) y[i] = x[i] * 3.0 + 0.0 * {int(uuid.UUID(tag)) % 1_000_003};\n}}"
    )


USE = """
import cunumpy, numpy as np, cupy
from cunumpy.kernels import CudaKernel
k = CudaKernel({source!r}, "scaled")
x = np.linspace(0.0, 1.0, 1000)
y = cupy.zeros(1000)
k(y, cupy.asarray(x), np.int32(1000))
np.testing.assert_array_equal(y.get(), x * 3.0)
print("USE-OK")
"""


def test_an_emulator_build_killed_with_sigkill_leaves_a_usable_cache(tmp_path):
    cache = tmp_path / "cache"
    source = _unique_kernel(uuid.uuid4().hex)
    child = subprocess.Popen(
        [sys.executable, "-c", USE.format(source=source)],
        env=_env(cache),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    # wait for the build to start (its folder appears), then kill the process mid-build
    deadline = time.monotonic() + TIMEOUT
    started = False
    while time.monotonic() < deadline and child.poll() is None:
        if cache.is_dir() and any(p.name.startswith(".") for p in cache.iterdir()):
            started = True
            break
        time.sleep(0.01)
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=60)
    assert started or child.returncode == 0, "the build never started"
    # a fresh process uses the same cache: the half-made build is not taken for a finished one
    out = run_isolated(USE.format(source=source), cache=cache)
    assert "USE-OK" in out
    out = run_isolated(USE.format(source=source), cache=cache)  # and the cache entry is good
    assert "USE-OK" in out


def test_several_processes_compile_one_kernel_into_one_cache(tmp_path):
    cache = tmp_path / "cache"
    source = _unique_kernel(uuid.uuid4().hex)
    children = [
        subprocess.Popen(
            [sys.executable, "-X", "faulthandler", "-c", USE.format(source=source)],
            env=_env(cache),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    for child in children:
        out, err = child.communicate(timeout=TIMEOUT)
        assert child.returncode == 0, err[-3000:]
        assert "USE-OK" in out


def test_several_threads_launch_new_kernels_on_one_cache(tmp_path):
    sources = [_unique_kernel(uuid.uuid4().hex) for _ in range(2)]
    out = run_isolated(
        f"""
        import threading
        import cunumpy, numpy as np, cupy
        from cunumpy.kernels import CudaKernel
        kernels = [CudaKernel(s, "scaled") for s in {sources!r}]
        x = np.linspace(-1.0, 1.0, 513)
        errors = []

        def work(k, seed):
            try:
                y = cupy.zeros(513)
                k(y, cupy.asarray(x + seed), np.int32(513))
                np.testing.assert_array_equal(y.get(), (x + seed) * 3.0)
            except BaseException as e:  # reported by the main thread
                errors.append(repr(e))

        threads = [threading.Thread(target=work, args=(kernels[i % 2], i)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors
        print("THREADS-OK")
        """,
        cache=tmp_path / "cache",
    )
    assert "THREADS-OK" in out


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="reads /proc/self/maps")
def test_many_libraries_with_fiber_stacks_do_not_pile_up_mappings(tmp_path):
    # Each emulation library had its own pool of fiber stacks on the calling thread (two
    # mappings a stack: 512 for a block of 256), kept after the launch: a process that loaded
    # a few hundred libraries (CuPy's fusion suite) hit the kernel's limit of 65530 mappings,
    # then mmap and every compiler run failed with ENOMEM and the process aborted.
    out = run_isolated(
        """
        import numpy as np
        import cunumpy, cupy
        from cunumpy.kernels import CudaKernel
        def maps():
            with open("/proc/self/maps") as f:
                return sum(1 for _ in f)
        x = np.arange(256.0)
        counts = []
        for k in range(6):
            src = '''extern "C" __global__ void rev%d(double* y, const double* x) {
                __shared__ double s[256];
                s[threadIdx.x] = x[threadIdx.x] + %d;
                __syncthreads();
                y[threadIdx.x] = s[255 - threadIdx.x];
            }''' % (k, k)
            y = cupy.zeros(256)
            CudaKernel(src, "rev%d" % k, block_size=256)(y, cupy.asarray(x), n_threads=256)
            np.testing.assert_array_equal(y.get(), x[::-1] + k)
            counts.append(maps())
        grown = counts[-1] - counts[0]
        assert grown < 5 * 100, f"{grown} more mappings after 5 libraries: {counts}"
        print("OK", counts)
        """,
        cache=tmp_path,
    )
    assert "OK" in out
