"""PyccelKernel's pinned staging path: asynchronous copies into reused page-locked buffers and
back in place, one stream wait per direction. On a GPU this path is taken with CuPy's pinned
memory and ``cudaMemcpyAsync`` (tests/gpu/test_kernel_porting_device.py); here the fake CuPy
(whose device arrays live in host memory at real addresses) is given a pinned allocator and a
``memcpyAsync`` that copies the bytes, so the staging logic (offsets, Fortran order, views,
aliasing, outputs, buffer reuse, errors) is checked against NumPy. Runs in a subprocess so the
fake never leaks."""

import os
import subprocess
import sys
import textwrap


def test_async_pinned_staging_round_trips_in_place():
    code = textwrap.dedent(
        """
        import ctypes
        import numpy as np
        from cunumpy.kernel_testing import install_fake_cupy
        cupy = install_fake_cupy()
        copies, waits = [], []

        def memcpy_async(dst, src, nbytes, kind, stream):
            copies.append((kind, nbytes))
            ctypes.memmove(dst, src, nbytes)

        class Pinned(bytearray):
            pass

        runtime = cupy.cuda.runtime
        runtime.memcpyAsync = memcpy_async
        runtime.memcpyDeviceToHost, runtime.memcpyHostToDevice = 2, 1
        cupy.cuda.alloc_pinned_memory = lambda size: Pinned(size)
        stream = cupy.cuda.get_current_stream()
        type(stream).synchronize = lambda self: waits.append(1)

        from cunumpy.kernels import PyccelKernel
        from cunumpy.kernels._pyccel_kernel import _pool

        def axpy(a, x, y, m, big):
            y[:] += a * x
            m[0, :] += 1.0
            big[1] = 5.0

        rng = np.random.default_rng(0)
        hx, hy = rng.normal(size=6), rng.normal(size=6)
        base = cupy.asarray(rng.normal(size=20))
        x, y = base[2:8], cupy.asarray(hy)              # a view at an offset
        hm = np.asfortranarray(rng.normal(size=(3, 4)))
        m = cupy.asfortranarray(cupy.asarray(hm))         # Fortran order
        big = cupy.zeros(3000)
        hx = base.get()[2:8]
        k = PyccelKernel(axpy, use_cupy=True)
        for call in range(3):
            copies.clear(); waits.clear()
            k(2.0, x, y, m, big)
            assert _pool.pinned
            # four arrays to the host, four back, then one wait per direction
            assert [c[0] for c in copies] == [2] * 4 + [1] * 4, copies
            assert len(waits) == 2, waits
        np.testing.assert_allclose(y.get(), hy + 3 * 2.0 * hx, rtol=1e-15)
        want_m = hm.copy(); want_m[0, :] += 3.0
        np.testing.assert_array_equal(m.get(), want_m)
        np.testing.assert_array_equal(base.get()[2:8], hx)   # x read only, copied back unchanged
        assert float(big[1].get()) == 5.0 and float(big.sum().get()) == 5.0

        # only declared outputs go back; an array passed twice is staged once
        def twice(a, b):
            assert a is b
            a += 1.0
        copies.clear()
        PyccelKernel(twice, use_cupy=True, outputs=(0,))(y, y)
        assert [c[0] for c in copies] == [2, 1]
        np.testing.assert_allclose(y.get(), hy + 6.0 * hx + 1.0, rtol=1e-15)

        # a raising kernel copies nothing back and still returns its buffers
        def boom(v):
            v[:] = -1.0
            raise ZeroDivisionError("boom")
        copies.clear()
        try:
            PyccelKernel(boom, use_cupy=True)(y)
        except ZeroDivisionError:
            pass
        assert [c[0] for c in copies] == [2]
        np.testing.assert_allclose(y.get(), hy + 6.0 * hx + 1.0, rtol=1e-15)

        # empty arrays copy no bytes; strided views take the blocking path
        empty, strided = cupy.zeros(0), base[::3]
        want = base.get()[::3] * 2
        copies.clear()
        PyccelKernel(lambda e, s: s.__imul__(2.0), use_cupy=True)(empty, strided)
        assert copies == []
        np.testing.assert_array_equal(strided.get(), want)
        print("ok")
        """
    )
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    env.pop("CUNUMPY_FAKE_CUPY", None)
    env.pop("CUNUMPY_BACKEND", None)
    result = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert result.stdout.strip().endswith("ok")
