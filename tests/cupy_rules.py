"""How CuPy treats NumPy's protocols and host data: one list of checks, run against the real
CuPy on the GPU (tests/gpu/test_cupy_rules_gpu.py) and against the emulated device's CuPy
(tests/cpu/test_fake_cupy_fidelity.py), so the fake's rules are checked to be CuPy's."""

from __future__ import annotations

import pickle
from collections.abc import Callable
from typing import Any

import numpy as np


def _raises(kind: type[BaseException], fn: Callable[[], Any], what: str) -> None:
    try:
        fn()
    except kind:
        return
    raise AssertionError(f"{what}: expected {kind.__name__}")


def numpy_functions_run_on_the_device(cupy: Any) -> None:
    h = np.linspace(0.1, 2.0, 12).reshape(3, 4)
    a = cupy.asarray(h)
    for got, want in [
        (np.sin(a), np.sin(h)),
        (np.sqrt(a), np.sqrt(h)),
        (np.add(a, 1.0), h + 1.0),
        (np.add.reduce(a, axis=1), h.sum(axis=1)),
        (np.concatenate([a, a]), np.concatenate([h, h])),
        (np.stack([a, a], axis=1), np.stack([h, h], axis=1)),
        (np.where(a > 1, a, 0.0), np.where(h > 1, h, 0.0)),
        (np.linalg.norm(a, axis=0), np.linalg.norm(h, axis=0)),
    ]:
        assert isinstance(got, cupy.ndarray), type(got)
        np.testing.assert_allclose(got.get(), want, rtol=1e-14)
    eq = np.array_equal(a, cupy.asarray(h))
    assert isinstance(eq, cupy.ndarray) and eq.shape == () and bool(eq)


def host_arrays_are_refused_by_device_code(cupy: Any) -> None:
    h = np.ones((2, 3))
    a = cupy.ones((2, 3))
    for what, fn in [
        ("np.add(device, host)", lambda: np.add(a, h)),
        ("device + host", lambda: a + h),
        ("cupy.concatenate with a host array", lambda: cupy.concatenate([a, h])),
        ("np.asarray(device)", lambda: np.asarray(a)),
        ("cupy.exp(host)", lambda: cupy.exp(h)),
    ]:
        _raises(TypeError, fn, what)


def host_data_is_copied_where_cupy_copies_it(cupy: Any) -> None:
    h = np.array([1.0, 4.0, 9.0, 16.0])
    np.testing.assert_array_equal(cupy.diff(h).get(), np.diff(h))
    d = cupy.diff(cupy.asarray(h), prepend=np.zeros(1))
    np.testing.assert_array_equal(d.get(), np.diff(h, prepend=np.zeros(1)))
    assert bool(cupy.allclose(cupy.asarray(h), h))
    np.testing.assert_array_equal(cupy.asarray(h)[np.array([3, 0])].get(), [16.0, 1.0])
    assert cupy.isscalar(1.0) and not cupy.isscalar(h)
    assert cupy.ndim(h) == 1 and cupy.shape(h) == (4,)


def item_assignment_from_host(cupy: Any) -> None:
    a = cupy.zeros(5)
    h = np.arange(5.0)
    _raises(ValueError, lambda: a.__setitem__(Ellipsis, h), "a[...] = host")
    _raises(ValueError, lambda: a.__setitem__(slice(0, 2), h[:2]), "a[:2] = host")
    a[np.array([0, 4])] = np.array([10.0, 40.0])  # advanced indexing: copied
    a[1:3] = np.float64(2.0)
    np.testing.assert_array_equal(a.get(), [10.0, 2.0, 2.0, 0.0, 40.0])


def ascontiguousarray_returns_the_array_itself(cupy: Any) -> None:
    a = cupy.arange(12.0).reshape(3, 4)
    assert cupy.ascontiguousarray(a) is a
    assert cupy.ascontiguousarray(a.T) is not a


def ndarray_members(cupy: Any) -> None:
    h = np.arange(6.0).reshape(2, 3)
    a = cupy.asarray(h)
    np.testing.assert_array_equal(a.flat[1:4].get(), h.flat[1:4])
    a.flat[0] = 9.0
    assert float(a[0, 0]) == 9.0
    a.put([0, 7], [1.5, 2.5])  # CuPy's default mode is "wrap"
    np.testing.assert_array_equal(a.get().ravel()[:2], [1.5, 2.5])
    assert a.tobytes() == a.get().tobytes()
    back = pickle.loads(a.dumps())
    assert isinstance(back, cupy.ndarray)
    np.testing.assert_array_equal(back.get(), a.get())


def runtime_errors(cupy: Any) -> None:
    from cupy.cuda import driver, runtime

    assert issubclass(runtime.CUDARuntimeError, RuntimeError)
    assert issubclass(driver.CUDADriverError, RuntimeError)
    try:
        runtime.setDevice(runtime.getDeviceCount() + 7)
    except runtime.CUDARuntimeError as e:
        assert "cudaErrorInvalidDevice" in str(e), e
    else:
        raise AssertionError("setDevice of a device that does not exist")


CHECKS = [
    numpy_functions_run_on_the_device,
    host_arrays_are_refused_by_device_code,
    host_data_is_copied_where_cupy_copies_it,
    item_assignment_from_host,
    ascontiguousarray_returns_the_array_itself,
    ndarray_members,
    runtime_errors,
]
