"""The fake CuPy (emulated device backend) without kernels: arrays that are not NumPy arrays,
refused implicit conversions and host/device mix-ups, real copies, the runtime stand-ins and
array-api-compat on top. Each test runs in its own process (``CUNUMPY_FAKE_CUPY=1``), so the
fake never leaks into the other tests."""

import os
import subprocess
import sys
import textwrap

import pytest


def run_fake(code, *, fake_env=True):
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    env.pop("CUNUMPY_BACKEND", None)
    if fake_env:
        env["CUNUMPY_FAKE_CUPY"] = "1"
    else:
        env.pop("CUNUMPY_FAKE_CUPY", None)
    result = subprocess.run(
        # the fake is installed by `import cunumpy`, before anything imports cupy
        [sys.executable, "-c", "import cunumpy\n" + textwrap.dedent(code)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result.stdout


def test_installed_at_import_and_selected_like_cupy():
    out = run_fake(
        """
        import sys
        import cunumpy as xp
        import cupy
        assert cupy.__cunumpy_fake__ is True and cupy.__version__ == "0.0.0+cunumpy-fake"
        assert xp.cupy_available()
        assert xp.set_backend("cupy", strict=True) == "cupy"
        assert xp.xp.xp.__name__ == "array_api_compat.cupy"
        a = xp.arange(5.0)
        assert type(a) is cupy.ndarray and xp.is_gpu(a) and not xp.is_cpu(a)
        assert xp.get_array_backend(a) == "cupy"
        from cunumpy.kernel_testing import fake_cupy_active
        assert fake_cupy_active()
        info = xp.backend_info()
        assert info["device"]["name"] == "cunumpy fake device", info
        print("OK")
        """
    )
    assert "OK" in out


def test_arrays_are_not_numpy_arrays_and_refuse_implicit_conversion():
    run_fake(
        """
        import numpy as np, cupy
        a = cupy.arange(6.0).reshape(2, 3)
        assert not isinstance(a, np.ndarray)
        for convert in (np.asarray, np.array, lambda v: np.add(v, np.ones(3))):
            try:
                convert(a)
            except TypeError as e:
                assert convert is not np.asarray or "Implicit conversion" in str(e), e
            else:
                raise AssertionError("implicit conversion was allowed")
        for mix in (lambda: cupy.exp(np.ones(3)), lambda: a + np.ones((2, 3)),
                    lambda: np.ones((2, 3)) * a, lambda: cupy.concatenate([a, np.ones((2, 3))])):
            try:
                mix()
            except TypeError as e:
                assert "host/device mix-up" in str(e), e
            else:
                raise AssertionError("a NumPy array was accepted by device code")
        try:  # basic-index assignment of host data: CuPy raises ValueError
            a[0] = np.ones(3)
        except ValueError as e:
            assert "cannot be used for fill" in str(e), e
        else:
            raise AssertionError("a NumPy array was assigned through basic indexing")
        assert float((a + np.float64(1.0)).sum()) == 21.0  # NumPy scalars are fine
        assert type(np.add(a, 1)) is cupy.ndarray  # NumPy ufuncs run on the device, as in CuPy
        print("OK")
        """
    )


def test_copies_views_pointers_and_interface():
    run_fake(
        """
        import numpy as np, cupy
        h = np.arange(12.0).reshape(3, 4)
        d = cupy.asarray(h)
        h[0, 0] = 100.0
        assert d.get()[0, 0] == 0.0, "asarray copies host data"
        g = d.get()
        g[1, 1] = -1
        assert d[1, 1].get() == 5.0, "get() is a copy"
        v = d[1:, ::2]
        v[0, 0] = 42.0
        assert d.get()[1, 0] == 42.0, "slices are views sharing memory"
        assert cupy.asarray(d) is d and cupy.array(d) is not d
        d.set(np.ones((3, 4)))
        assert (cupy.asnumpy(d) == 1).all()
        assert d.data.ptr == d.__cuda_array_interface__["data"][0] and d.data.device_id == 0
        assert d.device.id == 0
        assert v._c_contiguous is False and d._c_contiguous is True and d.flags.c_contiguous
        assert v.__cuda_array_interface__["strides"] == (32, 16)
        assert (d.dtype, d.shape, d.strides, d.size, d.nbytes, d.ndim) == (
            np.dtype("float64"), (3, 4), (32, 8), 12, 96, 2)
        t = cupy.arange(6).reshape(2, 3).T
        assert t.shape == (3, 2) and type(t) is cupy.ndarray
        f = cupy.zeros(4, dtype=cupy.float32)
        f.fill(2.5)
        assert f.astype(cupy.int32).dtype == np.int32 and float(f.sum()) == 10.0
        c = f.copy(); c += 1
        assert float(f[0]) == 2.5 and float(c[0]) == 3.5
        import pickle
        p = pickle.loads(pickle.dumps(d))
        assert type(p) is cupy.ndarray and (p.get() == d.get()).all()
        print("OK")
        """
    )


def test_math_reductions_and_creation_match_numpy():
    run_fake(
        """
        import numpy as np, cupy
        rng = np.random.default_rng(0)
        h = rng.standard_normal((5, 7))
        d = cupy.asarray(h)
        for name in ("exp", "sin", "cos", "abs", "tanh", "floor"):
            np.testing.assert_array_equal(getattr(cupy, name)(d).get(), getattr(np, name)(h))
        np.testing.assert_array_equal(cupy.sqrt(cupy.abs(d)).get(), np.sqrt(np.abs(h)))
        np.testing.assert_array_equal(cupy.log(cupy.abs(d) + 1).get(), np.log(np.abs(h) + 1))
        np.testing.assert_array_equal(cupy.where(d > 0, d, 0).get(), np.where(h > 0, h, 0))
        np.testing.assert_array_equal(cupy.clip(d, -0.5, 0.5).get(), np.clip(h, -0.5, 0.5))
        np.testing.assert_array_equal(cupy.minimum(d, 0).get(), np.minimum(h, 0))
        np.testing.assert_array_equal(cupy.maximum(d, d.T.T).get(), h)
        for r in ("sum", "mean", "min", "max", "prod", "var", "std", "any", "all"):
            for axis in (None, 0, 1):
                got = getattr(d, r)(axis=axis)
                assert type(got) is cupy.ndarray, (r, type(got))
                np.testing.assert_array_equal(got.get(), getattr(h, r)(axis=axis))
                by_module = getattr(cupy, r)(d, axis=axis).get()
                np.testing.assert_array_equal(by_module, getattr(np, r)(h, axis=axis))
        np.testing.assert_array_equal((d @ d.T).get(), h @ h.T)
        np.testing.assert_array_equal((-d * 2 - 1 / (d ** 2 + 1)).get(), -h * 2 - 1 / (h ** 2 + 1))
        np.testing.assert_array_equal(cupy.add.reduce(d, axis=0).get(), np.add.reduce(h, axis=0))
        assert cupy.zeros((2, 3)).shape == (2, 3) and cupy.ones(3, cupy.int8).dtype == np.int8
        assert cupy.empty(4).shape == (4,) and (cupy.full(3, 7).get() == 7).all()
        np.testing.assert_array_equal(cupy.linspace(0, 1, 5).get(), np.linspace(0, 1, 5))
        np.testing.assert_array_equal(cupy.arange(2, 9, 3).get(), np.arange(2, 9, 3))
        assert cupy.zeros_like(d).shape == (5, 7) and cupy.ones_like(d).dtype == d.dtype
        assert cupy.ascontiguousarray(d.T)._c_contiguous
        assert cupy.asfortranarray(d).flags.f_contiguous
        assert cupy.array([1, 2, 3]).dtype == np.int64
        np.testing.assert_allclose(cupy.linalg.norm(d).get(), np.linalg.norm(h))
        np.testing.assert_allclose(cupy.fft.fft(d).get(), np.fft.fft(h))
        r = cupy.random.default_rng(1).random(4)
        assert type(r) is cupy.ndarray and r.shape == (4,)
        cupy.testing.assert_allclose(d, h)
        print("OK")
        """
    )


def test_runtime_stand_ins():
    run_fake(
        """
        import cupy
        assert cupy.is_available() and cupy.cuda.runtime.getDeviceCount() == 1
        assert cupy.cuda.runtime.getDevice() == 0
        free, total = cupy.cuda.runtime.memGetInfo()
        assert 0 < free <= total
        props = cupy.cuda.runtime.getDeviceProperties(0)
        assert props["name"] == b"cunumpy fake device"
        assert (props["major"], props["minor"]) == (9, 0)
        dev = cupy.cuda.Device()
        assert dev.id == 0
        with cupy.cuda.Device(0) as d:
            d.synchronize()
        dev.use()
        try:
            cupy.cuda.Device(1)
        except ValueError:
            pass
        else:
            raise AssertionError("device 1 exists")
        s = cupy.cuda.Stream(non_blocking=True)
        assert cupy.cuda.Stream.null.ptr == 0 and s.ptr != 0
        assert cupy.cuda.get_current_stream().ptr == 0
        with s:
            assert cupy.cuda.get_current_stream() is s
        assert cupy.cuda.get_current_stream().ptr == 0
        s.synchronize()
        e1, e2 = cupy.cuda.Event(), cupy.cuda.Event()
        e1.record(); e2.record(s); e2.synchronize()
        assert cupy.cuda.get_elapsed_time(e1, e2) >= 0
        cupy.get_default_memory_pool().free_all_blocks()
        cupy.get_default_pinned_memory_pool().free_all_blocks()
        f = lambda x: x + 1
        assert cupy.fuse(f) is f and cupy.fuse(kernel_name="k")(f) is f
        for make in (lambda: cupy.RawKernel("", "k")(),
                     lambda: cupy.RawModule(code="").get_function("k"),
                     lambda: cupy.ElementwiseKernel("", "", "")()):
            try:
                make()
            except NotImplementedError as e:
                assert "fake CuPy cannot compile CUDA kernels" in str(e)
            else:
                raise AssertionError("a CuPy kernel ran")
        import cunumpy as xp
        xp.set_backend("cupy")
        assert xp.cuda.device_count() == 1 and xp.cuda.memory_info()[1] > 0
        xp.cuda.free_memory()
        with xp.cuda.stream() as st:
            assert st.ptr != 0
        with xp.profiling.timed_region("step") as t:
            xp.sum(xp.ones(3))
        assert t.elapsed >= 0
        print("OK")
        """
    )


def test_implicit_syncs_and_copies_are_recorded():
    out = run_fake(
        """
        import numpy as np
        import cunumpy as xp
        xp.set_backend("cupy", strict=True)
        with xp.profiling.count_transfers() as c:
            d = xp.to_cupy(np.arange(10.0))   # to_device
            h = xp.to_numpy(d)                # to_host
            s = float(d.sum())                # implicit sync
            i = int(d[3])                     # implicit sync
            b = bool(d[1] > 0)                # implicit sync
            v = d[2].item()                   # implicit sync
            same = xp.to_cupy(d)              # no copy
        assert same is d and s == 45.0 and i == 3 and b and v == 2.0
        assert (c.to_device, c.to_host, c.syncs) == (1, 1, 4), c
        print(c.report())
        """
    )
    assert "sync" in out


def test_install_after_import_and_uninstall():
    run_fake(
        """
        import sys
        import cunumpy as xp
        assert "cupy" not in sys.modules and not xp.cupy_available()
        from cunumpy.kernel_testing import install_fake_cupy, uninstall_fake_cupy, fake_cupy_active
        cupy = install_fake_cupy()
        assert install_fake_cupy() is cupy and fake_cupy_active()
        assert xp.cupy_available() and xp.set_backend("cupy", strict=True) == "cupy"
        assert type(xp.ones(2)) is cupy.ndarray
        uninstall_fake_cupy()
        assert "cupy" not in sys.modules and xp.get_backend() == "numpy" and not fake_cupy_active()
        assert not xp.cupy_available()
        print("OK")
        """,
        fake_env=False,
    )


@pytest.mark.parametrize("value", ["0", "no", ""])
def test_other_values_do_not_install_the_fake(value):
    out = run_fake(
        f"""
        import os, sys
        os.environ["CUNUMPY_FAKE_CUPY"] = {value!r}
        import cunumpy
        print("cupy" in sys.modules and getattr(sys.modules["cupy"], "__cunumpy_fake__", False))
        """,
        fake_env=False,
    )
    assert out.strip() == "False"


def test_scipy_special_ufuncs_and_unpickled_arrays_behave_as_on_cupy():
    # struphy 3.5's suite: scipy.special.erfinv on a device array runs cupyx.scipy.special's
    # (CuPy's __array_ufunc__ looks there after cupy); an unpickled array is returned as itself
    # by ascontiguousarray (its dtype object is an equal copy, which made NumPy return a view)
    run_fake(
        """
        import pickle
        import numpy as np
        import scipy.special as sp
        import cupy
        h = np.linspace(-0.9, 0.9, 7)
        d = cupy.asarray(h)
        r = sp.erfinv(d)
        assert isinstance(r, cupy.ndarray)
        np.testing.assert_array_equal(r.get(), sp.erfinv(h))
        try:
            sp.erfinv(d, np.empty(7))
        except TypeError as e:
            assert "host/device mix-up" in str(e), e
        else:
            raise AssertionError("a NumPy out= was taken")
        u = pickle.loads(pickle.dumps(d, protocol=pickle.HIGHEST_PROTOCOL))
        assert cupy.ascontiguousarray(u, dtype=np.float64) is u
        assert cupy.ascontiguousarray(u, dtype=np.float32) is not u
        assert cupy.ascontiguousarray(d[::2]) is not d
        print("OK")
        """
    )
