"""The 0.7 ways of running kernels without a GPU: ``emulated_launches``, ``fake_cupy_session``,
``run_in_fake_cupy_subprocess``, ``emulate_cuda_kernel(..., options=)``, the capability
markers, and ``n_threads_from`` callables that size a launch from the arrays (needs a host C++
compiler, no GPU). Results are checked against NumPy."""

import os
import subprocess
import sys
import textwrap
import types

import numpy as np
import pytest

from cunumpy.arguments import CudaStructArguments
from cunumpy.exceptions import KernelArgumentTypeError
from cunumpy.kernel_testing import (
    device_backend_available,
    emulate_cuda_kernel,
    emulated_launches,
    emulation_compiler,
    fake_cupy_session,
    high_dim_cuda_views_available,
    run_in_fake_cupy_subprocess,
    warp_shuffle_available,
)
from cunumpy.kernels import CudaKernel

pytestmark = [
    pytest.mark.cxx,
    pytest.mark.skipif(emulation_compiler() is None, reason="needs a host C++ compiler"),
]

SCALE = r"""
#ifndef FACTOR
#define FACTOR 2
#endif
extern "C" __global__ void scale(double* x, double a, long long n) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) x[i] = FACTOR * a * x[i];
}
"""

FILL = r"""
extern "C" __global__ void fill(double* x, long long n) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) x[i] = (double)i;
}
"""


def run_fake(code):
    env = {**os.environ, "OMP_NUM_THREADS": "1", "CUNUMPY_FAKE_CUPY": "1"}
    env.pop("CUNUMPY_BACKEND", None)
    result = subprocess.run(
        [sys.executable, "-c", "import cunumpy\n" + textwrap.dedent(code)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result.stdout


def test_emulated_launches_run_kernel_calls_on_numpy_arrays():
    kernel = CudaKernel(SCALE, "scale", block_size=32)
    x = np.linspace(0.0, 1.0, 100)
    want = 2 * 1.5 * x
    with emulated_launches():
        kernel(x, 1.5, x.size)
    np.testing.assert_array_equal(x, want)
    with pytest.raises(TypeError):  # outside the block a NumPy array is a host array again
        kernel(x, 1.5, x.size)


PUSH_FIELDS = [("x", "double*"), ("v", "double*"), ("dt", "double"), ("n", "int")]


class _PushArgs(CudaStructArguments):
    struct_name = "PushArgs"
    fields = PUSH_FIELDS

    def __init__(self, x, v, dt):
        self.x, self.v, self.dt, self.n = x, v, dt, int(x.shape[0])


PUSH = (
    _PushArgs.struct.declaration
    + r"""
extern "C" __global__ void push(PushArgs p) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < p.n) p.x[i] += p.dt * p.v[i];
}
"""
)


def test_struct_arguments_holding_numpy_arrays_run_in_emulation():
    # As in 0.7's emulator: a struct parameter takes a CudaStructArguments whose fields are
    # NumPy arrays, a mapping of the field values or an object with them as attributes.
    k = CudaKernel(PUSH, "push", structs=[_PushArgs.struct])
    x = np.zeros(5)
    v = np.arange(5.0)
    expected = x.copy()
    with emulated_launches():
        k(_PushArgs(x, v, 0.5), n_threads=5)
    expected += 0.5 * v
    emulate_cuda_kernel(k, {"x": x, "v": v, "dt": 2.0, "n": 4}, n_threads=5)
    expected[:4] += 2.0 * v[:4]
    holder = types.SimpleNamespace(x=x, v=v, dt=-1.0, n=5)
    emulate_cuda_kernel(k, holder, n_threads=5)
    expected -= v
    np.testing.assert_array_equal(x, expected)


def test_struct_argument_without_a_field_names_it():
    k = CudaKernel(PUSH, "push", structs=[_PushArgs.struct])
    with pytest.raises(KernelArgumentTypeError, match="no value for the field 'n'"):
        emulate_cuda_kernel(k, {"x": np.zeros(2), "v": np.zeros(2), "dt": 1.0}, n_threads=2)


def test_emulated_launches_pass_options_and_nest():
    kernel = CudaKernel(SCALE, "scale", block_size=32)
    x = np.ones(40)
    with emulated_launches(options=["-DFACTOR=3"]):
        kernel(x, 1.0, x.size)
        with emulated_launches(options=["-DFACTOR=5"]):
            kernel(x, 1.0, x.size)
        kernel(x, 1.0, x.size)
    np.testing.assert_array_equal(x, np.full(40, 3.0 * 5.0 * 3.0))


def test_compile_inside_emulated_launches_builds_for_the_emulator(tmp_path, monkeypatch):
    monkeypatch.setenv("CUNUMPY_EMULATION_CACHE", str(tmp_path))
    kernel = CudaKernel(SCALE + "// compile test\n", "scale", block_size=32)
    with emulated_launches(options=["-DFACTOR=9"]):
        assert kernel.compile() is kernel and kernel.compiled_from_cache is False
        built = [p for p in tmp_path.rglob("*") if p.is_file()]
        assert built, "compile() inside emulated_launches() built nothing in the cache"
        assert kernel.recompile() is kernel
        x = np.ones(4)
        kernel(x, 1.0, 4)
    np.testing.assert_array_equal(x, np.full(4, 9.0))


def test_emulate_cuda_kernel_takes_options_and_a_compiler():
    kernel = CudaKernel(SCALE, "scale", block_size=16)
    x = np.arange(50, dtype=np.float64)
    emulate_cuda_kernel(kernel, x, 1.0, x.size, options=("-DFACTOR=7",))
    np.testing.assert_array_equal(x, 7.0 * np.arange(50))
    emulate_cuda_kernel(kernel, x, 0.5, x.size, compiler=emulation_compiler())
    np.testing.assert_array_equal(x, 7.0 * np.arange(50))


def test_n_threads_from_callables_see_the_arrays():
    seen = []

    def by_size(args):
        seen.append(type(args[0]).__name__)
        return args[0].size

    kernel = CudaKernel(FILL, "fill", block_size=8, n_threads_from=by_size)
    x = np.full(37, -1.0)
    emulate_cuda_kernel(kernel, x, x.size)
    np.testing.assert_array_equal(x, np.arange(37.0))
    with emulated_launches():
        y = np.full(21, -1.0)
        kernel(y, y.size)
    np.testing.assert_array_equal(y, np.arange(21.0))
    assert seen == ["ndarray", "ndarray"]


def test_fake_cupy_session_needs_the_fake_and_runs_kernels_on_it():
    with pytest.raises(RuntimeError, match="fake CuPy"):
        with fake_cupy_session():
            pass
    out = run_fake(
        f"""
        import numpy as np
        import cunumpy as xp
        from cunumpy.kernels import CudaKernel
        from cunumpy.kernel_testing import fake_cupy_session
        assert xp.get_backend() == "cupy"  # CUNUMPY_FAKE_CUPY=1 alone selects the fake
        xp.set_backend("numpy")  # the session switches to it and back
        kernel = CudaKernel({SCALE!r}, "scale", block_size=32)
        with fake_cupy_session(options=["-DFACTOR=4"]):
            assert xp.get_backend() == "cupy"
            x = xp.ones(10)
            kernel(x, 0.5, 10)
            print(xp.to_numpy(x).tolist())
            y = np.ones(3)
            kernel(y, 1.0, 3)  # NumPy arrays too, inside the session
            print(y.tolist())
        print(xp.get_backend())
        """
    )
    lines = out.strip().splitlines()
    assert lines == [str([2.0] * 10), str([4.0] * 3), "numpy"]


def test_run_in_fake_cupy_subprocess():
    done = run_in_fake_cupy_subprocess(
        "import cunumpy, cupy, os; print(cupy.__cunumpy_fake__, os.environ['MAYBEMPI'])"
    )
    assert done.returncode == 0 and done.stdout.split() == ["True", "0"]
    with pytest.raises(pytest.fail.Exception, match="exit code 3"):
        run_in_fake_cupy_subprocess("import sys; print('last words'); sys.exit(3)")
    with pytest.raises(pytest.fail.Exception, match="signal SIGABRT"):
        run_in_fake_cupy_subprocess("import os; os.abort()")


def test_capabilities_follow_the_device_backend():
    # without a GPU or the fake nothing can run; on the emulated device all can
    if not device_backend_available():
        assert warp_shuffle_available() is False and high_dim_cuda_views_available() is False
    out = run_fake(
        """
        from cunumpy import kernel_testing as kt
        print(kt.warp_shuffle_available(), kt.high_dim_cuda_views_available(),
              kt.bounds_check_views_available())
        print(kt.requires_warp_shuffle.mark.name)
        """
    )
    assert out.split() == ["True", "True", "True", "skipif"]


def test_the_guide_runs(capsys):
    import re
    from pathlib import Path

    guide = Path(__file__).resolve().parents[2] / "docs" / "coming-from-0.7.md"
    blocks = re.findall(r"```python\n(.*?)```", guide.read_text(), flags=re.S)
    assert len(blocks) == 5
    for code in blocks:
        exec(compile(code, str(guide), "exec"), {})
    out = capsys.readouterr().out
    assert "((7, 4), (16, 16))" in out and "[ 0.  1.  4.  9. 16.]" in out
    assert "struct MarkerArguments {" in out and "('n_markers', 'long long')" in out
