"""``device_function_kernel`` run on the emulated device backend (the fake CuPy: every launch
runs in the CPU emulator with the checks of a GPU launch), against NumPy. Each test runs in its
own process so the fake never leaks into other tests."""

import os
import subprocess
import sys
import textwrap

import pytest
from kernel_fixtures import VEC2_HEADER

from cunumpy.kernel_testing import emulation_compiler

pytestmark = [
    pytest.mark.cxx,
    pytest.mark.skipif(emulation_compiler() is None, reason="needs a host C++ compiler"),
]


def run_fake(code, tmp_path):
    env = {**os.environ, "CUNUMPY_FAKE_CUPY": "1", "OMP_NUM_THREADS": "1", "TMP": str(tmp_path)}
    env.pop("CUNUMPY_BACKEND", None)
    result = subprocess.run(
        # the fake is installed by `import cunumpy`, before anything imports cupy
        [sys.executable, "-c", "import cunumpy\n" + textwrap.dedent(code)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result.stdout


def test_scalar_function_matches_numpy_elementwise(tmp_path):
    run_fake(
        """
        import numpy as np, cupy
        from cunumpy.kernel_testing import device_function_kernel, fake_cupy_active
        assert fake_cupy_active()
        SOURCE = r'''
        __device__ double smoothstep(double lo, double hi, double x) {
            double t = (x - lo) / (hi - lo);
            t = t < 0.0 ? 0.0 : (t > 1.0 ? 1.0 : t);
            return t * t * (3.0 - 2.0 * t);
        }'''
        k = device_function_kernel(SOURCE, "double smoothstep(double lo, double hi, double x)")
        rng = np.random.default_rng(0)
        lo, hi = rng.uniform(-1, 0, 300), rng.uniform(1, 2, 300)
        x = rng.uniform(-2, 3, 300)
        out = cupy.full(301, -7.0)  # one more element than threads: left untouched
        k(cupy.asarray(lo), cupy.asarray(hi), cupy.asarray(x), out, 300, n_threads=300)
        t = np.clip((x - lo) / (hi - lo), 0.0, 1.0)
        np.testing.assert_allclose(out.get()[:300], t * t * (3 - 2 * t), rtol=1e-14)
        assert out.get()[300] == -7.0
        # threads past n return: a grid larger than n writes nothing more
        out2 = cupy.zeros(300)
        k(cupy.asarray(lo), cupy.asarray(hi), cupy.asarray(x), out2, 100, n_threads=300)
        np.testing.assert_array_equal(out2.get()[100:], 0.0)
        np.testing.assert_allclose(out2.get()[:100], out.get()[:100], rtol=0)
        # the launch checks of a GPU launch apply to the wrapper
        from cunumpy.exceptions import KernelArgumentTypeError
        try:
            k(cupy.asarray(lo, dtype=np.float32), cupy.asarray(hi), cupy.asarray(x), out, 300)
        except KernelArgumentTypeError as exc:
            assert "lo" in str(exc)
        else:
            raise AssertionError("a float32 array was accepted for const double* lo")
        """,
        tmp_path,
    )


def test_struct_by_reference_pointer_and_void_function_from_an_included_header(tmp_path):
    (tmp_path / "vec2.cuh").write_text(VEC2_HEADER)
    run_fake(
        f"""
        import numpy as np, cupy
        from cunumpy.arguments import CudaStruct
        from cunumpy.kernel_testing import device_function_kernel
        VEC = CudaStruct("Vec2", [("x", "double"), ("y", "double")])
        inc = dict(includes=["vec2.cuh"], include_dirs=[{str(tmp_path)!r}], structs=[VEC])
        add = device_function_kernel("", "void add_scaled(const Vec2& v, double* acc, int k)",
                                     **inc)
        acc = cupy.ones(2 * 50)
        ks = np.arange(50, dtype=np.int32)
        add(VEC(x=0.5, y=-2.0), acc, cupy.asarray(ks), 50, n_threads=50)
        expected = np.ones((50, 2)) + np.outer(ks, [0.5, -2.0])
        np.testing.assert_array_equal(acc.get().reshape(50, 2), expected)

        sign = device_function_kernel("", "int dot_sign(Vec2 v, float wx, float wy)",
                                      name="signs", out_param="s", **inc)
        rng = np.random.default_rng(1)
        wx, wy = rng.normal(size=64).astype(np.float32), rng.normal(size=64).astype(np.float32)
        s = cupy.zeros(64, dtype=np.int32)
        sign(VEC(x=1.5, y=-0.25), cupy.asarray(wx), cupy.asarray(wy), s, 64)
        want = np.where(1.5 * wx.astype(np.float64) - 0.25 * wy >= 0.0, 1, -1)
        np.testing.assert_array_equal(s.get(), want)
        """,
        tmp_path,
    )
