"""The host memory pool of fused CPU results (`cunumpy.kernels.host_memory_pool`): large results
live in pooled buffers that return to the pool when the last array using them dies, and are
reused by the next call; small results stay plain `numpy.empty` arrays.

A fused function's first call with a signature takes the Python path, later ones the Rust fast
path; the tests call twice or more, so both allocate from the pool."""

import os
import subprocess
import sys

import numpy as np
import pytest

from cunumpy import _core
from cunumpy.kernels import fuse, host_memory_pool

N = 10**6  # 8 MB of float64: pooled
CLASS = 64 * 1024


def size_class(nbytes):
    return -(-nbytes // CLASS) * CLASS


def data_address(a):
    return a.__array_interface__["data"][0]


def owner(a):
    """The first `base` in the chain that is not an ndarray."""
    while isinstance(a, np.ndarray):
        a = a.base
    return a


@pytest.fixture
def pool():
    p = host_memory_pool()
    limit = p.get_limit()
    p.set_limit(1 << 30)
    p.free_all_blocks()
    yield p
    p.set_limit(limit)
    p.free_all_blocks()


@pytest.fixture
def xy():
    rng = np.random.default_rng(7)
    return rng.standard_normal(N), rng.standard_normal(N)


def axpy():
    @fuse
    def f(x, y):
        return 2.5 * x + np.sin(y)

    return f


def test_large_results_are_correct_and_come_from_the_pool(pool, xy):
    x, y = xy
    f = axpy()
    expected = 2.5 * x + np.sin(y)
    for _ in range(3):  # the Python path, then the fast path
        r = f(x, y)
        assert type(r) is np.ndarray
        np.testing.assert_allclose(r, expected, rtol=1e-13, atol=1e-13)
        assert r.flags.c_contiguous and r.flags.writeable and r.flags.owndata is False
        assert data_address(r) % 4096 == 0
        buf = owner(r)
        assert isinstance(buf, _core.PooledHostBuffer)
        assert buf.nbytes == r.nbytes == 8 * N
        assert buf.capacity == size_class(8 * N)
        assert pool.used_bytes() == size_class(8 * N)
        del r, buf


def test_a_returned_buffer_is_reused_by_the_next_call(pool, xy):
    x, y = xy
    f = axpy()
    nbytes = size_class(8 * N)
    r = f(x, y)
    address = data_address(r)
    assert (pool.used_bytes(), pool.free_bytes()) == (nbytes, 0)
    del r
    assert (pool.used_bytes(), pool.free_bytes()) == (0, nbytes)
    assert pool.n_free_blocks() == 1
    for _ in range(3):
        r = f(x, y)
        assert data_address(r) == address
        assert (pool.used_bytes(), pool.free_bytes()) == (nbytes, 0)
        np.testing.assert_allclose(r, 2.5 * x + np.sin(y), rtol=1e-13, atol=1e-13)
        del r
    # two live results: two buffers
    a, b = f(x, y), f(x, y)
    assert data_address(a) != data_address(b)
    assert pool.used_bytes() == 2 * nbytes
    assert pool.total_bytes() == pool.used_bytes() + pool.free_bytes()
    del a, b
    assert (pool.used_bytes(), pool.free_bytes()) == (0, 2 * nbytes)


def test_a_view_keeps_the_buffer_alive(pool, xy):
    x, y = xy
    f = axpy()
    expected = 2.5 * x + np.sin(y)
    r = f(x, y)
    view = r[10:-10:3]
    address = data_address(r)
    del r
    assert pool.free_bytes() == 0  # still in use through the view
    again = f(x * 0 + 1, y * 0)  # other values, must not land in the view's memory
    assert data_address(again) != address
    np.testing.assert_allclose(again, np.full(N, 2.5), rtol=1e-15)
    np.testing.assert_allclose(view, expected[10:-10:3], rtol=1e-13, atol=1e-13)
    del view
    assert pool.free_bytes() == size_class(8 * N)
    del again


def test_results_are_writable_arrays_of_their_own(pool, xy):
    x, y = xy
    f = axpy()
    r = f(x, y)
    r[:] = 3.0
    r2 = f(x, y)
    assert np.all(r == 3.0)
    np.testing.assert_allclose(r2, 2.5 * x + np.sin(y), rtol=1e-13, atol=1e-13)


def test_several_outputs_and_dtypes(pool):
    rng = np.random.default_rng(1)
    a = rng.standard_normal(N // 2) + 1j * rng.standard_normal(N // 2)  # 16 bytes each
    b = rng.integers(-5, 5, size=N // 2).astype(np.int32)

    @fuse
    def g(a, b):
        return a * b, abs(a) > b

    for _ in range(2):
        z, mask = g(a, b)
        np.testing.assert_allclose(z, a * b, rtol=1e-13)
        assert z.dtype == np.complex128
        assert isinstance(owner(z), _core.PooledHostBuffer)
        # the boolean result is 0.5 MB: below the 1 MiB threshold
        np.testing.assert_array_equal(mask, np.abs(a) > b)
        assert mask.base is None
        del z, mask
    assert pool.used_bytes() == 0


def test_limit_zero_keeps_nothing(pool, xy):
    x, y = xy
    f = axpy()
    pool.set_limit(0)
    assert pool.get_limit() == 0
    for _ in range(3):
        r = f(x, y)
        assert pool.used_bytes() == size_class(8 * N)
        np.testing.assert_allclose(r, 2.5 * x + np.sin(y), rtol=1e-13, atol=1e-13)
        del r
        assert pool.free_bytes() == 0
        assert pool.used_bytes() == 0


def test_lowering_the_limit_and_free_all_blocks(pool, xy):
    x, y = xy
    f = axpy()
    results = [f(x, y) for _ in range(3)]
    del results
    nbytes = size_class(8 * N)
    assert pool.free_bytes() == 3 * nbytes
    pool.set_limit(nbytes)
    assert pool.free_bytes() == nbytes
    pool.free_all_blocks()
    assert pool.free_bytes() == 0
    assert pool.n_free_blocks() == 0
    assert pool.total_bytes() == 0
    with pytest.raises(ValueError, match="non-negative"):
        pool.set_limit(-1)


def test_small_results_are_plain_numpy_arrays(pool):
    f = axpy()
    small = 1 << 16  # 512 KiB of float64
    x = np.linspace(0, 1, small)
    for _ in range(2):
        r = f(x, x)
        assert r.base is None and r.flags.owndata
        np.testing.assert_allclose(r, 2.5 * x + np.sin(x), rtol=1e-13)
    s = f(np.float64(2.0), np.float64(0.0))
    assert s == 5.0
    assert pool.total_bytes() == 0


@pytest.mark.parametrize(
    ("shape", "dtype", "pooled"),
    [
        ((0,), "float64", False),
        ((0, 1 << 20), "float64", False),
        (((1 << 17) - 1,), "float64", False),  # 8 bytes short of 1 MiB
        ((1 << 17,), "float64", True),  # 1 MiB
        ((1 << 20,), "bool", True),
        ((512, 256), "complex64", True),
        ((3, 1000, 50), "int16", False),
        ((3, 1000, 500), ">f4", True),
    ],
)
def test_host_empty_follows_the_threshold(pool, shape, dtype, pooled):
    """The Python path's allocation (`_core._host_empty`): the same rule as the fast path."""
    assert _core.HOST_POOL_MIN_BYTES == 1 << 20
    a = _core._host_empty(shape, dtype)
    assert type(a) is np.ndarray
    assert a.shape == shape and a.dtype == np.dtype(dtype)
    assert a.flags.c_contiguous and a.flags.writeable
    assert isinstance(a.base, _core.PooledHostBuffer) is pooled
    assert pool.used_bytes() == (size_class(a.nbytes) if pooled else 0)
    a[...] = 1
    assert np.all(a == 1)


def test_out_arguments_are_still_written_in_place(pool, xy):
    x, y = xy
    f = axpy()
    out = np.empty(N)
    for _ in range(2):
        r = f(x, y, out=out)
        assert r is out
    np.testing.assert_allclose(out, 2.5 * x + np.sin(y), rtol=1e-13, atol=1e-13)
    assert pool.total_bytes() == 0


def run_with_limit(value):
    code = "from cunumpy.kernels import host_memory_pool\nprint(host_memory_pool().get_limit())\n"
    env = dict(os.environ, CUNUMPY_HOST_POOL_LIMIT=value)
    return subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False
    )


def test_the_limit_comes_from_the_environment():
    done = run_with_limit("12345")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "12345"
    bad = run_with_limit("1GiB")
    assert bad.returncode != 0
    assert (
        "CUNUMPY_HOST_POOL_LIMIT" in bad.stderr
        and "cunumpy.exceptions.InvalidArgumentError" in bad.stderr
    )  # a ValueError
