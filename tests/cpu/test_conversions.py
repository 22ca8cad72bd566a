import numpy as np
import pytest

import cunumpy as xp
from cunumpy.exceptions import CupyUnavailableError, MixedBackendError


def test_to_numpy_returns_numpy_arrays_unchanged():
    a = np.arange(6.0).reshape(2, 3)
    assert xp.to_numpy(a) is a
    assert np.array_equal(xp.to_numpy([1, 2]), np.array([1, 2]))


def test_to_cunumpy_on_numpy_backend_makes_no_transfer():
    a = np.ones(4)
    with xp.profiling.count_transfers() as counter:
        assert xp.to_cunumpy(a) is a
    assert counter.total == 0


def test_array_inspection_on_host_arrays():
    a = np.zeros(3)
    assert xp.get_array_backend(a) == "numpy"
    assert xp.is_cpu(a) and not xp.is_gpu(a)
    assert xp.same_backend() and xp.same_backend(a) and xp.same_backend(a, [1.0])
    assert xp.get_array_module(a).__name__ == "array_api_compat.numpy"
    xp.assert_same_backend(a, np.ones(2))


@pytest.mark.skipif(xp.cupy_available(), reason="checks the machine without CuPy")
def test_to_cupy_without_cupy_is_a_clear_import_error():
    with pytest.raises(CupyUnavailableError, match="CuPy is not available or not functional: "):
        xp.to_cupy(np.ones(3))
    with pytest.raises(ImportError):
        xp.to_cupy(np.ones(3))


def test_as_device_array_refuses_on_numpy_backend():
    with xp.use_backend("numpy"):
        with pytest.raises(RuntimeError, match="device argument 'x'.*active backend is 'numpy'"):
            xp.as_device_array(np.ones(3), name="x")


class FakeDeviceArray:
    """Stands for an array from another backend in the mixed-backend error path only."""


def test_assert_same_backend_names_each_array(monkeypatch):
    monkeypatch.setattr(xp._conversions, "is_cupy_array", lambda a: isinstance(a, FakeDeviceArray))
    with pytest.raises(MixedBackendError, match=r"mismatched backends: \[0: numpy.*1: cupy"):
        xp.assert_same_backend(np.ones(2), FakeDeviceArray())
    with pytest.raises(TypeError):
        xp.assert_same_backend(np.ones(2), FakeDeviceArray())
