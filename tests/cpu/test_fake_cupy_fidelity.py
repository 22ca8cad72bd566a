"""The emulated device's CuPy behaves as real CuPy where programs notice: NumPy functions on
device arrays through __array_ufunc__/__array_function__, what CuPy accepts from the host
(and what it refuses), the ndarray members and the cuda stand-ins. Each test runs in its own
process with CUNUMPY_FAKE_CUPY=1; results are compared with NumPy on the same data."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap


def run_fake(code: str) -> str:
    env = {**os.environ, "CUNUMPY_FAKE_CUPY": "1", "CUNUMPY_BACKEND": "cupy"}
    env.pop("CUPY_EXPERIMENTAL_SLICE_COPY", None)
    done = subprocess.run(
        [sys.executable, "-c", "import cunumpy\n" + textwrap.dedent(code)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "OK" in done.stdout
    return done.stdout


def test_numpy_ufuncs_and_functions_run_on_the_device():
    run_fake(
        """
        import numpy as np, cupy, pytest
        h = np.linspace(0.1, 2.0, 12).reshape(3, 4)
        a = cupy.asarray(h)
        for got, want in [
            (np.sin(a), np.sin(h)),
            (np.sqrt(a), np.sqrt(h)),
            (np.add(a, a), h + h),
            (np.add.reduce(a, axis=1), h.sum(axis=1)),
            (np.multiply.outer(a[0], a[1]), np.multiply.outer(h[0], h[1])),
            (np.concatenate([a, a]), np.concatenate([h, h])),
            (np.stack([a, a], axis=1), np.stack([h, h], axis=1)),
            (np.where(a > 1, a, 0.0), np.where(h > 1, h, 0.0)),
            (np.linalg.norm(a, axis=0), np.linalg.norm(h, axis=0)),
            (np.mean(a), np.mean(h)),
            (2.0 * np.float64(3.0) * a, 6.0 * h),
        ]:
            assert type(got) is cupy.ndarray, type(got)
            np.testing.assert_array_equal(got.get(), want)
        out = cupy.empty_like(a)
        assert np.exp(a, out=out) is out
        np.testing.assert_array_equal(out.get(), np.exp(h))
        eq = np.array_equal(a, cupy.asarray(h))
        assert type(eq) is cupy.ndarray and eq.shape == () and bool(eq)
        assert not bool(np.array_equal(a, a[:2]))
        assert bool(np.allclose(a, a + 1e-12))
        # what CuPy refuses stays refused: host arrays in device ufuncs and functions
        for bad in (lambda: np.add(a, h), lambda: a + h, lambda: h + a,
                    lambda: np.concatenate([a, h]), lambda: np.asarray(a),
                    lambda: np.array_equal(a, h)):
            with pytest.raises(TypeError):
                bad()
        print("OK")
        """
    )


def test_functions_copy_host_data_where_cupy_does():
    run_fake(
        """
        import numpy as np, cupy, pytest
        import cunumpy as xp
        from cunumpy.profiling import count_transfers
        h = np.array([1.0, 4.0, 9.0, 16.0])
        with count_transfers() as c:
            d = cupy.diff(h)
            g = cupy.diff(cupy.asarray(h), prepend=np.zeros(1))
        assert type(d) is cupy.ndarray
        np.testing.assert_array_equal(d.get(), np.diff(h))
        np.testing.assert_array_equal(g.get(), np.diff(h, prepend=np.zeros(1)))
        assert c.to_device == 3 and c.bytes_to_device == 32 + 8 + 32, c.report()
        assert bool(cupy.allclose(cupy.asarray(h), h))
        np.testing.assert_array_equal(cupy.unique(np.array([3, 1, 3])).get(), [1, 3])
        assert cupy.atleast_2d(h).shape == (1, 4)
        # dtype and shape queries take host arrays and copy nothing
        with count_transfers() as c:
            assert xp.isscalar(np.float64(1.0)) and not xp.isscalar(h)
            assert cupy.isscalar(3) and not cupy.isscalar(h)
            assert cupy.ndim(h) == 1 and cupy.shape(h) == (4,)
            assert cupy.result_type(h, np.float32) == np.float64
        assert c.total == 0, c.report()
        # anything else refuses host arrays: CuPy's kernels do; its reductions such as
        # cupy.sum(h) would run NumPy's method on the host, which the fake reports as a mix-up
        with pytest.raises(TypeError, match="host/device mix-up"):
            cupy.sum(h)
        # ... unless asked to do as CuPy does (CuPy's own test suite relies on it)
        from cunumpy._fake_cupy._functions import follow_cupy_on_host_arrays
        assert follow_cupy_on_host_arrays(True) is False
        try:
            assert type(cupy.sum(h)) is np.float64 and cupy.sum(h) == 30.0
            np.testing.assert_array_equal(cupy.amax(h.reshape(2, 2), 1), [4.0, 16.0])
            np.testing.assert_array_equal(cupy.around(h / 3, 1), np.around(h / 3, 1))
            assert cupy.var(h, None, None, None, 1) == np.var(h, ddof=1)
            with pytest.raises(TypeError, match="host/device mix-up"):
                cupy.exp(h)  # a ufunc is a kernel: refused still
        finally:
            follow_cupy_on_host_arrays(False)
        with pytest.raises(TypeError, match="host/device mix-up"):
            cupy.sum(h)
        print("OK")
        """
    )


def test_every_inplace_operator_updates_the_array_itself():
    run_fake(
        """
        import operator
        import numpy as np, cupy
        for op in ("iadd", "isub", "imul", "ifloordiv", "imod", "iand", "ior", "ixor",
                   "ilshift", "irshift"):
            h = np.array([[2, 3, 7], [4, 1, 6]], dtype=np.int8)
            d = cupy.asarray(h)
            alias = d
            getattr(operator, op)(d, np.int8(3))  # `d op= 3` without rebinding: in place only
            getattr(operator, op)(h, np.int8(3))
            np.testing.assert_array_equal(alias.get(), h, err_msg=op)
        # and the reflected shifts of a Python int by an array
        d = cupy.asarray(np.array([1, 2, 3], dtype=np.int8))
        np.testing.assert_array_equal((3 << d).get(), 3 << np.array([1, 2, 3], dtype=np.int8))
        np.testing.assert_array_equal((64 >> d).get(), 64 >> np.array([1, 2, 3], dtype=np.int8))
        print("OK")
        """
    )


def test_ascontiguousarray_returns_the_same_array_when_it_fits():
    run_fake(
        """
        import numpy as np, cupy
        a = cupy.arange(12.0).reshape(3, 4)
        assert cupy.ascontiguousarray(a) is a
        assert cupy.ascontiguousarray(a, dtype=np.float64) is a
        assert cupy.ascontiguousarray(a.T) is not a
        assert cupy.ascontiguousarray(a, dtype=np.float32) is not a
        f = cupy.asfortranarray(a)
        assert f is not a and cupy.asfortranarray(f) is f
        t = cupy.ascontiguousarray(a.T)
        np.testing.assert_array_equal(t.get(), np.arange(12.0).reshape(3, 4).T)
        print("OK")
        """
    )


def test_item_assignment_from_host_follows_cupy():
    run_fake(
        """
        import numpy as np, cupy, pytest
        from cunumpy.profiling import count_transfers
        a = cupy.zeros(5)
        h = np.arange(5.0)
        # basic indexing: CuPy refuses host arrays (it would fill with a scalar)
        for key in (Ellipsis, slice(None), slice(0, 2)):
            with pytest.raises(ValueError, match="non-scalar numpy.ndarray cannot be used"):
                a[key] = h[: 2 if key == slice(0, 2) else 5]
        with pytest.raises(ValueError):
            a[:2] = [1.0, 2.0]
        a[...] = 7.0
        a[1:3] = np.float64(2.0)
        a[...] = cupy.asarray(h)  # the explicit copy works
        np.testing.assert_array_equal(a.get(), h)
        # advanced indexing: CuPy copies host indices and values to the device
        with count_transfers() as c:
            a[np.array([0, 4])] = np.array([10.0, 40.0])
            a[[1, 2]] = -1.0
            b = a[np.array([4, 0])]
        np.testing.assert_array_equal(a.get(), [10.0, -1.0, -1.0, 3.0, 40.0])
        np.testing.assert_array_equal(b.get(), [40.0, 10.0])
        assert c.to_device == 4, c.report()
        assert c.bytes_to_device == 16 + 16 + 16 + 16, c.report()
        print("OK")
        """
    )


def test_experimental_slice_copy_is_honoured():
    code = """
        import cunumpy, os, numpy as np, cupy
        from cunumpy.profiling import count_transfers
        a = cupy.zeros(3)
        with count_transfers() as c:
            a[:] = np.arange(3.0)
        np.testing.assert_array_equal(a.get(), [0.0, 1.0, 2.0])
        assert c.to_device == 1 and c.bytes_to_device == 24, c.report()
        print("OK")
        """
    env = {**os.environ, "CUNUMPY_FAKE_CUPY": "1", "CUNUMPY_BACKEND": "cupy",
           "CUPY_EXPERIMENTAL_SLICE_COPY": "1"}  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True, text=True
    )
    assert done.returncode == 0 and "OK" in done.stdout, done.stderr[-3000:]


def test_ndarray_members_flat_put_tobytes_tofile_dump():
    run_fake(
        """
        import io, pickle, tempfile, os
        import numpy as np, cupy
        h = np.arange(6.0).reshape(2, 3)
        a = cupy.asarray(h)
        fl = a.flat
        assert len(fl) == 6 and fl.base is a
        np.testing.assert_array_equal(fl[1:4].get(), h.flat[1:4])
        assert float(fl[5]) == 5.0 and type(fl[5]) is cupy.ndarray
        fl[0] = 9.0
        assert [float(v) for v in a.flat][:2] == [9.0, 1.0]
        np.testing.assert_array_equal(fl.copy().get(), a.get().ravel())
        a.put([0, 7], [1.5, 2.5])  # mode="wrap" by default, as in CuPy
        np.testing.assert_array_equal(a.get().ravel()[:2], [1.5, 2.5])
        assert a.tobytes() == a.get().tobytes() and a.tobytes("F") == a.get().tobytes("F")
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "a.bin")
            a.tofile(path)
            np.testing.assert_array_equal(np.fromfile(path).reshape(2, 3), a.get())
            path = os.path.join(d, "a.pkl")
            a.dump(path)
            back = pickle.load(open(path, "rb"))
        assert type(back) is cupy.ndarray
        np.testing.assert_array_equal(back.get(), a.get())
        np.testing.assert_array_equal(pickle.loads(a.dumps()).get(), a.get())
        buf = io.BytesIO(); a.dump(buf); buf.seek(0)
        np.testing.assert_array_equal(pickle.load(buf).get(), a.get())
        np.testing.assert_array_equal(a.byteswap().get(), a.get().byteswap())
        print("OK")
        """
    )


def test_cuda_driver_runtime_errors_random_and_namespace():
    run_fake(
        """
        import pickle
        import numpy as np, cupy, pytest
        import cunumpy as xp
        from cupy.cuda import runtime, driver
        assert issubclass(runtime.CUDARuntimeError, RuntimeError)
        assert cupy.cuda.runtime.CUDARuntimeError is runtime.CUDARuntimeError
        with pytest.raises(runtime.CUDARuntimeError, match="cudaErrorInvalidDevice") as info:
            runtime.setDevice(3)
        assert info.value.status == 101
        assert pickle.loads(pickle.dumps(info.value)).status == 101
        assert issubclass(driver.CUDADriverError, RuntimeError) and driver.get_build_version() == 0
        # the backend namespace has cupy's submodules, as `from cupy import *` gives them
        assert xp.random is cupy.random and xp.cuda is not None
        xp.random.seed(2)
        r = xp.random.random((2, 3))
        np.random.seed(2)
        assert type(r) is cupy.ndarray
        np.testing.assert_array_equal(r.get(), np.random.random((2, 3)))
        s = cupy.random.RandomState(5).standard_normal(3)
        np.testing.assert_array_equal(s.get(), np.random.RandomState(5).standard_normal(3))
        np.testing.assert_array_equal(
            xp.random.default_rng(4).random(3).get(), np.random.default_rng(4).random(3)
        )
        with pytest.raises(AttributeError, match="module 'cunumpy' has no attribute 'no_such'"):
            xp.no_such
        print("OK")
        """
    )


def test_a_missing_name_names_cunumpy_on_numpy_too():
    import pytest

    import cunumpy as xp

    with pytest.raises(AttributeError, match="module 'cunumpy' has no attribute 'no_such'") as e:
        xp.no_such  # noqa: B018
    assert e.value.name == "no_such"
    assert "array_api_compat.numpy" in str(e.value)  # says where else it looked


def test_the_fake_follows_the_rules_checked_on_real_cupy():
    tests = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    run_fake(
        f"""
        import sys
        import cupy
        sys.path.insert(0, {tests!r})
        import cupy_rules
        for check in cupy_rules.CHECKS:
            check(cupy)
        print("OK")
        """
    )
