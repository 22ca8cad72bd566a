"""xp.scipy, xp.optimize and xp.integrate on NumPy and on the emulated device (the fake
cupyx.scipy), against SciPy itself and values generated with cunumpy 0.7.1."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import cunumpy as xp

pytest.importorskip("scipy")
import scipy.integrate  # noqa: E402
import scipy.interpolate  # noqa: E402
import scipy.linalg  # noqa: E402
import scipy.optimize  # noqa: E402
import scipy.special  # noqa: E402

S = np.array([2.0, 3.0, 4.0])


@pytest.fixture
def fake():
    """The emulated device as the active backend."""
    from cunumpy.kernel_testing import install_fake_cupy, uninstall_fake_cupy

    cupy = install_fake_cupy()
    try:
        with xp.use_backend("cupy", strict=True):
            yield cupy
    finally:
        uninstall_fake_cupy()


def test_scipy_namespace_on_numpy_is_scipy():
    assert xp.scipy.interpolate.CubicSpline is scipy.interpolate.CubicSpline
    assert xp.scipy.sparse.linalg.cg is scipy.sparse.linalg.cg
    assert repr(xp.scipy.sparse) == "<cunumpy scipy namespace <backend>.sparse>"
    assert xp.scipy.special.available("erf") and not xp.scipy.special.available("nope")
    assert xp.scipy.available("sparse.linalg")  # as in 0.7.1
    assert xp.scipy.available("sparse")
    with pytest.raises(AttributeError, match="cunumpy.scipy.sparse has no attribute 'nope'"):
        _ = xp.scipy.sparse.nope
    with pytest.raises(ValueError, match="not a forwarded subpackage"):
        type(xp.scipy)("io")
    assert "interpolate" in dir(xp.scipy) and "csr_matrix" in dir(xp.scipy.sparse)


def test_fake_cupyx_scipy_interpolate_and_sparse_on_fake_arrays(fake):
    import cupyx.scipy.interpolate
    import cupyx.scipy.sparse
    import cupyx.scipy.sparse.linalg

    x = np.linspace(0.0, 1.0, 11)
    y = np.sin(3 * x)
    spline = xp.scipy.interpolate.CubicSpline(fake.asarray(x), fake.asarray(y))
    t = fake.linspace(0.0, 1.0, 7)
    got = spline(t)
    assert isinstance(got, fake.ndarray)
    np.testing.assert_allclose(got.get(), scipy.interpolate.CubicSpline(x, y)(t.get()))
    assert xp.scipy.interpolate.CubicSpline is cupyx.scipy.interpolate.CubicSpline

    dense = np.array([[4.0, 1.0, 0.0], [1.0, 3.0, 1.0], [0.0, 1.0, 2.0]])
    a = cupyx.scipy.sparse.csr_matrix(fake.asarray(dense))
    assert isinstance(a, cupyx.scipy.sparse.csr_matrix)
    assert isinstance(a, cupyx.scipy.sparse.spmatrix) and cupyx.scipy.sparse.issparse(a)
    assert not isinstance(a, cupyx.scipy.sparse.csc_matrix)
    assert isinstance(a.T, cupyx.scipy.sparse.csc_matrix) and a.T.shape == (3, 3)
    assert isinstance(a.data, fake.ndarray) and a.nnz == 7
    b = fake.asarray([1.0, 2.0, 3.0])
    np.testing.assert_allclose((a @ b).get(), dense @ b.get())
    x_cg, info = xp.scipy.sparse.linalg.cg(a, b, rtol=1e-12)
    assert info == 0
    np.testing.assert_allclose(x_cg.get(), np.linalg.solve(dense, b.get()), rtol=1e-9)
    np.testing.assert_allclose(a.toarray().get(), dense)
    # host arrays are refused as on a GPU
    with pytest.raises(TypeError, match="host/device mix-up"):
        spline(np.linspace(0, 1, 3))
    with pytest.raises(AttributeError, match="fake cupyx.scipy.sparse has no attribute 'nope'"):
        _ = cupyx.scipy.sparse.nope


def test_solve_circulant_fill_in_matches_scipy(fake):
    from cunumpy._scipy import FILLS

    c = np.array([2.0, -1.0, 0.0, 0.5])
    b = np.array([[1.0, 0.0], [2.0, 1.0], [3.0, 0.0], [4.0, 1.0]])
    got = FILLS["linalg"]["solve_circulant"](fake.asarray(c), fake.asarray(b))
    np.testing.assert_allclose(got.get(), scipy.linalg.solve_circulant(c, b))
    with pytest.raises(np.linalg.LinAlgError, match="singular"):
        FILLS["linalg"]["solve_circulant"](fake.asarray(np.ones(4)), fake.asarray(b))


def test_newton_matches_071_and_scipy():
    # values from cunumpy 0.7.1 with the same calls
    secant = xp.optimize.newton(lambda x: np.cos(x) - S / 5 * x, np.ones(3))
    np.testing.assert_allclose(
        secant, [1.110510503581112, 0.9582518984679899, 0.8370607706219725], rtol=1e-15
    )
    np.testing.assert_allclose(
        secant, scipy.optimize.newton(lambda x: np.cos(x) - S / 5 * x, np.ones(3)), rtol=1e-15
    )
    r = xp.optimize.newton(lambda x: x**3 - S, np.ones(3), tol=1e-12, maxiter=3, full_output=True)
    np.testing.assert_allclose(
        r.root, [1.2589782049980656, 1.4313873789236071, 1.5504618512831925], rtol=1e-15
    )
    assert not r.converged.any() and not r.zero_der.any()
    with pytest.warns(RuntimeWarning, match="3 of 3 points did not converge"):
        root = xp.optimize.newton(
            lambda x: x**3 - S, np.ones(3), fprime=lambda x: 3 * x**2, maxiter=3
        )
    np.testing.assert_allclose(
        root, [1.259933493449977, 1.4428120982493433, 1.5911111111111111], rtol=1e-15
    )
    exact = xp.optimize.newton(
        lambda x, s: x**2 - s, np.ones(3), fprime=lambda x, s: 2 * x, args=(S,)
    )
    np.testing.assert_allclose(exact, np.sqrt(S), rtol=1e-15)
    scalar = xp.optimize.newton(lambda x: x**2 - 2.0, 1.0)
    assert isinstance(scalar, np.ndarray) and scalar.shape == ()
    zero = xp.optimize.newton(
        lambda x: x**2 + 1.0, np.zeros(2), fprime=lambda x: 2 * x, full_output=True
    )
    assert zero.zero_der.all() and not zero.converged.any()


def test_newton_on_the_emulated_device_stays_there(fake):
    s = fake.asarray(S)
    with xp.profiling.count_transfers() as counter:
        root = xp.optimize.newton(lambda x: x**2 - s, fake.ones(3), fprime=lambda x: 2 * x)
    assert isinstance(root, fake.ndarray)
    # one small read-back per iteration (the convergence flags), nothing else crosses
    assert counter.to_device == 0 and 1 <= counter.to_host <= 10
    assert all(e.nbytes <= 3 for e in counter.events if e.kind == "to_host")
    np.testing.assert_allclose(root.get(), np.sqrt(S), rtol=1e-15)


def test_host_solvers_with_device_callbacks(fake):
    target = fake.asarray([4.0, 9.0])
    seen = []

    def residual(x):
        seen.append(type(x))
        return x**2 - target

    with xp.profiling.count_transfers() as counter:
        root = xp.optimize.fsolve(residual, fake.ones(2))
    assert isinstance(root, fake.ndarray) and set(seen) == {fake.ndarray}
    assert counter.to_host >= len(seen) and counter.to_device >= len(seen)
    np.testing.assert_allclose(root.get(), [2.0, 3.0], rtol=1e-10)
    res = xp.optimize.root(lambda x: x**3 - 8.0, fake.ones(1))
    assert res.success and isinstance(res.x, fake.ndarray)
    np.testing.assert_allclose(res.x.get(), [2.0])
    res = xp.optimize.minimize(lambda x: fake.sum((x - 1.0) ** 2), fake.zeros(2))
    np.testing.assert_allclose(res.x.get(), [1.0, 1.0], atol=1e-6)
    y = xp.integrate.odeint(lambda y, t: -y, fake.ones(1), np.array([0.0, 1.0]))
    assert isinstance(y, fake.ndarray)
    np.testing.assert_allclose(y.get()[-1, 0], np.exp(-1.0), rtol=1e-6)
    value, _ = xp.integrate.quad(lambda x: fake.asarray(x) ** 2, 0.0, 3.0)
    assert value == pytest.approx(9.0, rel=1e-13)


def test_host_solvers_on_numpy_are_scipy():
    np.testing.assert_allclose(
        xp.optimize.fsolve(lambda x: x**2 - np.array([4.0, 9.0]), np.ones(2)), [2.0, 3.0]
    )
    assert xp.integrate.quad(lambda x: x**2, 0.0, 3.0) == scipy.integrate.quad(
        lambda x: x**2, 0.0, 3.0
    )
    np.testing.assert_array_equal(
        xp.integrate.odeint(lambda y, t: -y, np.ones(1), np.array([0.0, 1.0])),
        scipy.integrate.odeint(lambda y, t: -y, np.ones(1), np.array([0.0, 1.0])),
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = xp.optimize.minimize(lambda x: np.sum((x - 1.0) ** 2), np.zeros(2))
    np.testing.assert_allclose(res.x, 1.0, atol=1e-6)


def test_fake_cupyx_scipy_typical_fem_calls(fake):
    """What finite-element codes do with xp.scipy on the emulated device: CSR from device
    arrays, Kronecker products, sparse solves, B-splines, special functions, FFTs."""
    sp = xp.scipy.sparse
    data, ind, ptr = (
        fake.asarray([1.0, 2.0, 3.0]),
        fake.asarray([0, 1, 2]),
        fake.asarray([0, 1, 2, 3]),
    )
    a = sp.csr_matrix((data, ind, ptr), shape=(3, 3))
    assert a.shape == (3, 3) and a.nnz == 3 and isinstance(a.indptr, fake.ndarray)
    big = sp.kron(a, sp.identity(2, format="csr"))
    assert big.shape == (6, 6)
    np.testing.assert_allclose(big.toarray().get(), np.kron(np.diag([1.0, 2, 3]), np.eye(2)))
    x = sp.linalg.spsolve(a.tocsc(), fake.ones(3))
    np.testing.assert_allclose(x.get(), [1.0, 0.5, 1.0 / 3.0])
    np.testing.assert_allclose(((2.0 * a) @ a + a).toarray().get(), np.diag([3.0, 10.0, 21.0]))
    knots = fake.linspace(0.0, 1.0, 8)
    spline = xp.scipy.interpolate.make_interp_spline(knots, knots**2, k=3)
    assert isinstance(spline.c, fake.ndarray)
    np.testing.assert_allclose(spline(fake.asarray([0.5])).get(), [0.25])
    np.testing.assert_allclose(
        xp.scipy.special.erf(fake.asarray([0.5])).get(), scipy.special.erf([0.5])
    )
    np.testing.assert_allclose(xp.scipy.fft.fft(fake.ones(4)).get(), [4.0, 0.0, 0.0, 0.0])
