"""The CuPy backend end to end (needs a CUDA GPU; CUNUMPY_REQUIRE_CUDA=1 makes skips fail)."""

import threading

import numpy as np
import pytest

import cunumpy as xp
from cunumpy.profiling import count_transfers

pytestmark = pytest.mark.gpu


@pytest.fixture
def cupy_backend():
    with xp.use_backend("cupy", strict=True):
        import cupy

        yield cupy


def test_backend_names_come_from_cupy(cupy_backend):
    a = xp.arange(10.0)
    assert isinstance(a, cupy_backend.ndarray)
    assert float(xp.sum(a)) == 45.0
    assert xp.get_array_backend(a) == "cupy" and xp.is_gpu(a)
    assert xp.cupy_backend


def test_backend_info_names_the_device(cupy_backend):
    info = xp.backend_info()
    assert info["backend"] == "cupy"
    assert info["cupy_available"] is True
    assert (
        info["device"]["name"] == cupy_backend.cuda.runtime.getDeviceProperties(0)["name"].decode()
    )
    assert "H200" in info["device"]["name"]
    assert info["device"]["compute_capability"] == "9.0"
    assert info["versions"]["cupy"] == cupy_backend.__version__


def test_conversions_are_counted_with_their_bytes(cupy_backend):
    host = np.arange(1000, dtype=np.float64)
    with count_transfers() as counter:
        dev = xp.to_cupy(host)
        same = xp.to_cupy(dev)
        back = xp.to_numpy(dev)
        fortran = xp.to_numpy(cupy_backend.asfortranarray(dev.reshape(10, 100)))
    assert same is dev or same.data.ptr == dev.data.ptr
    assert np.array_equal(back, host)
    assert fortran.flags.f_contiguous
    assert counter.to_device == 1 and counter.bytes_to_device == 8000
    assert counter.to_host == 2 and counter.bytes_to_host == 16000
    assert counter.device_copies == 0


def test_as_device_array_references_or_copies_once(cupy_backend):
    dev = cupy_backend.zeros(8, dtype=np.float32)
    with count_transfers() as counter:
        assert xp.as_device_array(dev, np.float32, 1, name="w") is dev
        converted = xp.as_device_array(dev, np.float64, name="w")
        uploaded = xp.as_device_array(np.ones(4), name="v")
    assert converted.dtype == np.float64
    assert isinstance(uploaded, cupy_backend.ndarray)
    assert counter.device_copies == 1 and counter.to_device == 1
    with pytest.raises(ValueError, match="must have 2 dimension"):
        xp.as_device_array(dev, ndim=2, name="w")


def test_synchronize_is_recorded(cupy_backend):
    with count_transfers() as counter:
        xp.synchronize()
    assert counter.syncs == 1 and counter.total == 0


def test_mixed_backends_are_refused(cupy_backend):
    with pytest.raises(TypeError, match="mismatched backends"):
        xp.assert_same_backend(np.ones(2), cupy_backend.ones(2))


def test_eight_threads_moving_arrays_each_see_their_own_copies(cupy_backend):
    results = {}
    barrier = threading.Barrier(8)

    def work(i):
        with count_transfers() as counter:
            barrier.wait()
            for _ in range(i + 1):
                dev = xp.to_cupy(np.zeros(i + 1, dtype=np.float64))
                xp.to_numpy(dev)
            barrier.wait()
        results[i] = counter

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i, counter in results.items():
        assert counter.to_device == i + 1 and counter.to_host == i + 1
        assert counter.bytes_to_device == (i + 1) * (i + 1) * 8


def test_device_helpers(cupy_backend):
    assert xp.cuda.device_count() >= 1
    free, total = xp.cuda.memory_info()
    assert 0 < free <= total
    with xp.cuda.stream() as s:
        assert cupy_backend.cuda.get_current_stream() == s
    xp.cuda.set_device(0)
    with pytest.raises(ValueError, match="visible CUDA device"):
        xp.cuda.set_device(xp.cuda.device_count())


def test_timed_region_synchronises_on_cupy(cupy_backend):
    with count_transfers() as counter:
        with xp.profiling.timed_region("step") as timing:
            xp.sum(xp.ones(1000))
    assert timing.synced and timing.elapsed > 0
    assert counter.syncs == 2
