"""Transfer counting on the emulated device is complete: every host/device copy, explicit or
implicit, is one ledger event with its bytes, path by path (issue 21, item 1); copies that
cunumpy's own helpers make are counted once, and device-only work is not counted."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

PRELUDE = """
import cunumpy
import io, os, pickle, tempfile
import numpy as np, cupy
import cunumpy as xp
from cunumpy.profiling import count_transfers
h = np.arange(12.0).reshape(3, 4)   # 96 bytes
d = cupy.asarray(h)

def only(kind, nbytes, fn, *, implicit=None):
    with count_transfers() as c:
        fn()
    events = [e for e in c.events if e.kind not in ("launch",)]
    assert [e.kind for e in events] == [kind], (kind, c.report())
    assert events[0].nbytes == nbytes, (nbytes, c.report())
    if implicit is not None:
        assert events[0].implicit is implicit, c.report()
"""

# (name, statement, kind, bytes, implicit): one event each.
PATHS = [
    ("xp.asarray of host data", "xp.asarray(h)", "to_device", 96, False),
    ("xp.array of host data", "xp.array(h)", "to_device", 96, False),
    ("cupy.asarray", "cupy.asarray(h)", "to_device", 96, False),
    ("cupy.array of a list", "cupy.array([1.0, 2.0])", "to_device", 16, False),
    ("cupy.ascontiguousarray of host", "cupy.ascontiguousarray(h.T)", "to_device", 96, False),
    ("ndarray.get", "d.get()", "to_host", 96, False),
    ("ndarray.get(out=)", "d.get(out=np.empty((3, 4)))", "to_host", 96, False),
    ("ndarray.set", "d.set(h)", "to_device", 96, False),
    ("cupy.asnumpy", "cupy.asnumpy(d)", "to_host", 96, False),
    ("xp.to_numpy", "xp.to_numpy(d)", "to_host", 96, False),
    ("xp.to_cupy", "xp.to_cupy(h)", "to_device", 96, False),
    ("xp.as_device_array", "xp.as_device_array(h, name='h')", "to_device", 96, False),
    ("ndarray.tolist", "d.tolist()", "to_host", 96, True),
    ("repr", "repr(d)", "to_host", 96, True),
    ("str", "str(d)", "to_host", 96, True),
    ("ndarray.tobytes", "d.tobytes()", "to_host", 96, False),
    ("ndarray.tofile", "d.tofile(os.path.join(tempfile.mkdtemp(), 'd.bin'))", "to_host", 96, False),
    ("pickle.dumps", "pickle.dumps(d)", "to_host", 96, True),
    ("cupy.testing", "cupy.testing.assert_array_equal(d[0], h[0])", "to_host", 32, True),
    ("cupy.diff of host data", "cupy.diff(h[0])", "to_device", 32, True),
    ("advanced setitem from host", "d[np.array([0])] = np.ones((1, 4))", "to_device", 8, True),
    (
        "ufunc.at with host indices",
        "cupy.add.at(d[0], np.array([0, 1]), 1.0)",
        "to_device",
        16,
        True,
    ),
    ("cupy.savetxt", "cupy.savetxt(io.StringIO(), d)", "to_host", 96, True),
    ("float() of a 0-d array", "float(d[0, 0])", "sync", 8, True),
]


def run_fake(code: str) -> None:
    env = {**os.environ, "CUNUMPY_FAKE_CUPY": "1", "CUNUMPY_BACKEND": "cupy"}
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(PRELUDE) + textwrap.dedent(code)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "OK" in done.stdout


def test_every_copy_path_is_one_event_with_its_bytes():
    body = "".join(
        f"only({kind!r}, {nbytes}, lambda: {stmt}, implicit={implicit})  # {name}\n"
        for name, stmt, kind, nbytes, implicit in PATHS
        if not stmt.startswith("d[")
    )
    body += "def setitem():\n    d[np.array([0])] = np.ones((1, 4))\n"
    body += "with count_transfers() as c:\n    setitem()\n"
    # the index (8 bytes) and the values (32 bytes) are both copied to the device
    body += "assert c.to_device == 2 and c.bytes_to_device == 8 + 32, c.report()\n"
    run_fake(body + "print('OK')\n")


def test_unpickling_and_loading_copy_to_the_device():
    run_fake(
        """
        blob = pickle.dumps(d)
        only("to_device", 96, lambda: pickle.loads(blob), implicit=True)
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "h.npy")
            np.save(path, h)
            only("to_device", 96, lambda: cupy.load(path))
            only("to_host", 96, lambda: cupy.save(os.path.join(tmp, "d.npy"), d), implicit=True)
        print("OK")
        """
    )


def test_device_work_and_refused_conversions_are_not_counted():
    run_fake(
        """
        from cunumpy.profiling import assert_no_transfers
        import pytest
        with assert_no_transfers():
            e = d + d
            e = cupy.sin(d) * 2.0
            e = np.sqrt(d)
            e = np.concatenate([d, d])
            e = d.copy()
            assert cupy.asarray(d) is d and cupy.ascontiguousarray(d) is d
            e = d[1:, ::2]
            e[...] = 1.0
        with count_transfers() as c:
            with pytest.raises(TypeError):
                np.asarray(d)
            with pytest.raises(TypeError):
                d + h
        assert c.total == 0, c.report()
        print("OK")
        """
    )


def test_assert_no_transfers_catches_each_implicit_copy():
    run_fake(
        """
        from cunumpy.profiling import assert_no_transfers
        import pytest
        for copy in (lambda: d.get(), lambda: cupy.asarray(h), lambda: repr(d),
                     lambda: cupy.diff(h), lambda: d.tobytes(), lambda: xp.asarray(h)):
            with pytest.raises(AssertionError):
                with assert_no_transfers():
                    copy()
        print("OK")
        """
    )


def test_device_mirror_counts_once():
    run_fake(
        """
        from cunumpy.memory import DeviceMirror
        host = np.zeros(10)
        with count_transfers() as c:
            m = DeviceMirror(host)
            m.to_device()
            m.to_host()
        assert (c.to_device, c.to_host) == (1, 1), c.report()
        assert (c.bytes_to_device, c.bytes_to_host) == (80, 80), c.report()
        print("OK")
        """
    )


def test_mpi_copies_count_once():
    run_fake(
        """
        MPI = xp.mpi.get_mpi()
        comm = MPI.COMM_WORLD
        dev = cupy.arange(4.0)
        with count_transfers() as c:  # the serial stand-in copies the device array to the host
            comm.Allreduce(dev, np.zeros(4))
        assert (c.to_host, c.bytes_to_host) == (1, 32), c.report()
        xp.mpi.set_mpi_cuda_aware(False)
        with count_transfers() as c:  # staged through host memory: one copy each way
            with xp.mpi.mpi_buffer(dev, send=True, recv=True) as buf:
                comm.Allreduce(MPI.IN_PLACE, buf)
        assert (c.to_host, c.to_device) == (1, 1), c.report()
        assert "mpi_buffer" in c.report() and "contextlib" not in c.report(), c.report()
        print("OK")
        """
    )


def test_clip_with_scalar_bounds_copies_nothing_and_keeps_the_array_api_results():
    # array_api_compat's clip copies each scalar bound to the device; xp.clip on the CuPy
    # backend gives Python scalars to cupy.clip instead (struphy's EQDSK evaluation clips
    # device coordinates inside assert_no_transfers). Results as array_api_compat.numpy's.
    run_fake(
        """
        from cunumpy.profiling import assert_no_transfers
        import array_api_compat.numpy as anp
        cases = [(0, 5), (None, 5), (-3, None), (-1000, 1000), (1, 1), (0.5, 2.5), (7, 2)]
        for dtype in ("float32", "float64", "int8", "uint16", "int64"):
            host = np.array([-100, -5, 0, 3, 7, 100, 120]).astype(dtype)
            dev = cupy.asarray(host)
            for lo, hi in cases:
                if np.dtype(dtype).kind in "iu" and isinstance(lo, float):
                    continue  # float bounds on integers: array_api_compat's path, which copies
                with assert_no_transfers():
                    got = xp.clip(dev, lo, hi)
                want = anp.clip(host, lo, hi)
                assert got.dtype == want.dtype, (dtype, lo, hi, got.dtype)
                np.testing.assert_array_equal(xp.to_numpy(got), want)
        out = cupy.empty(7, dtype="float64")
        line = cupy.asarray(np.linspace(-1, 1, 7))
        with assert_no_transfers():
            r = xp.clip(line, -0.5, 0.5, out=out)
        np.testing.assert_array_equal(xp.to_numpy(r), xp.to_numpy(out))
        np.testing.assert_array_equal(xp.to_numpy(out), np.clip(np.linspace(-1, 1, 7), -0.5, 0.5))
        # array bounds keep the array API path
        got = xp.clip(cupy.asarray(np.arange(5.0)), cupy.asarray(np.full(5, 1.0)), 3.0)
        np.testing.assert_array_equal(xp.to_numpy(got), np.clip(np.arange(5.0), 1.0, 3.0))
        print("OK")
        """
    )
