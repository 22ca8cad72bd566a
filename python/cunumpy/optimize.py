"""Root finding and minimisation on either backend.

:func:`newton` solves many independent scalar equations at once on the array's own backend
(every step runs on the device for CuPy data). :func:`fsolve`, :func:`root` and
:func:`minimize` run SciPy on the host with callbacks that see the data on `x0`'s backend:
meant for setup, not for time loops (two counted copies per evaluation).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from . import _backend
from ._conversions import get_array_module, is_cupy_array, to_cupy
from ._scipy_host import device, host, on_device, scipy_module, wants_device

__all__ = ["NewtonResult", "fsolve", "minimize", "newton", "root"]


class NewtonResult(NamedTuple):
    """What :func:`newton` returns with ``full_output=True``.

    Attributes
    ----------
    root : array
        The estimated roots, on the backend of `x0`.
    converged : array of bool
        Where the last step was within the tolerance (or ``func`` was exactly zero).
    zero_der : array of bool
        Where the iteration stopped without converging on a zero derivative (Newton) or on
        equal function values (secant).
    """

    root: Any
    converged: Any
    zero_der: Any


def _start(x0: Any) -> tuple[Any, Any]:
    """`x0` as a float array on its own backend (scalars and lists on the active one)."""
    if isinstance(x0, np.ndarray) or is_cupy_array(x0):
        mod = get_array_module(x0)
        p = mod.asarray(x0)
    elif _backend.get_backend() == "cupy":
        p = to_cupy(np.asarray(x0))
        mod = get_array_module(p)
    else:
        mod = get_array_module(np.asarray(0.0))
        p = np.asarray(x0)
    dtype = mod.result_type(p.dtype, mod.float64)
    return mod, mod.astype(p, dtype, copy=True)


def newton(
    func: Callable[..., Any],
    x0: Any,
    fprime: Callable[..., Any] | None = None,
    args: tuple = (),
    tol: float = 1.48e-08,
    maxiter: int = 50,
    rtol: float = 0.0,
    full_output: bool = False,
) -> Any:
    """Find a root of each of many independent scalar equations at once.

    Newton's method with `fprime`, the secant method without it, on an array of starting
    points: ``func(x)`` returns ``f_i(x_i)`` for every entry. The steps are those of
    :func:`scipy.optimize.newton` with an array `x0`, written with fixed shapes (no boolean
    indexing) on the array's own backend, so on CuPy every step runs on the device. Points
    that have converged keep taking their (tiny) steps until all have, as in SciPy. Each
    iteration reads one small flag array back to the host to test for convergence.

    Parameters
    ----------
    func : callable
        ``func(x, *args)``: the residuals at `x`, an array of `x`'s shape.
    x0 : array_like
        The starting points. A NumPy or CuPy array stays on its backend; a scalar or a list
        goes to the active backend.
    fprime : callable, optional
        ``fprime(x, *args)``: the derivatives ``f_i'(x_i)``. Without it, the secant method.
    args : tuple, optional
        Extra arguments of `func` and `fprime`.
    tol : float, optional
        Absolute tolerance on the step.
    maxiter : int, optional
        Maximum number of iterations.
    rtol : float, optional
        Relative tolerance: a point has converged when ``abs(step) < tol + rtol * abs(x)``.
    full_output : bool, optional
        Return a :class:`NewtonResult` instead of only the roots.

    Returns
    -------
    array or NewtonResult
        The roots, of `x0`'s shape (0-d for a scalar `x0`), or the :class:`NewtonResult`.

    Warns
    -----
    RuntimeWarning
        Without `full_output`, when some points did not converge.

    Examples
    --------
    >>> s = xp.asarray([2.0, 3.0, 4.0])
    >>> xp.optimize.newton(lambda x: x**2 - s, xp.ones(3), fprime=lambda x: 2 * x)
    array([1.41421356, 1.73205081, 2.        ])
    """
    mod, p = _start(x0)
    failures = mod.ones(p.shape, dtype=bool)
    nz_der = mod.ones(p.shape, dtype=bool)
    if fprime is not None:
        for _ in range(maxiter):
            fval = mod.asarray(func(p, *args))
            fder = mod.asarray(fprime(p, *args))
            nz = fder != 0
            dp = mod.where(nz, fval / mod.where(nz, fder, 1.0), 0.0)
            p_new = p - dp
            fail_new = mod.where(nz, mod.abs(dp) >= tol + rtol * mod.abs(p_new), failures)
            # one host read per iteration: [all f zero, no nonzero derivative, none failing]
            flags = mod.stack([~mod.any(fval != 0), ~mod.any(nz), ~mod.any(fail_new & nz)]).tolist()
            if flags[0]:
                failures = fval != 0
                break
            nz_der = nz
            if flags[1]:
                break
            p, failures = p_new, fail_new
            if flags[2]:
                break
    else:
        dx = float(np.finfo(np.float64).eps) ** 0.33
        p1 = p * (1 + dx) + mod.where(p >= 0, dx, -dx)
        q0 = mod.asarray(func(p, *args))
        q1 = mod.asarray(func(p1, *args))
        active = mod.ones(p.shape, dtype=bool)
        for _ in range(maxiter):
            nz = q1 != q0
            dp = mod.where(nz, q1 * (p1 - p) / mod.where(nz, q1 - q0, 1.0), 0.0)
            stepped = mod.where(nz, p1 - dp, p)
            stepped = mod.where(~nz & active, (p1 + p) / 2.0, stepped)
            fail_new = mod.where(nz, mod.abs(dp) >= tol + rtol * mod.abs(stepped), failures)
            flags = mod.stack([~mod.any(nz), ~mod.any(fail_new & nz)]).tolist()
            nz_der = nz
            if flags[0]:
                p = (p1 + p) / 2.0
                break
            p, failures = stepped, fail_new
            active = active & nz
            if flags[1]:
                break
            p1, p = p, p1
            q0 = q1
            q1 = mod.asarray(func(p1, *args))
        else:
            p = p1  # out of iterations: the newest iterate (as 0.7.1; SciPy returns the one before)
    zero_der = ~nz_der & failures
    if full_output:
        return NewtonResult(p, ~failures, zero_der)
    n_failed = int(mod.sum(failures))
    if n_failed:
        n_zero = int(mod.sum(zero_der))
        why = f"{n_zero} on a zero derivative" if n_zero else f"after {maxiter} iterations"
        warnings.warn(
            f"cunumpy.optimize.newton: {n_failed} of {p.size} points did not converge ({why})",
            RuntimeWarning,
            stacklevel=2,
        )
    return p


def fsolve(
    func: Callable[..., Any],
    x0: Any,
    args: tuple = (),
    fprime: Callable[..., Any] | None = None,
    **kwargs: Any,
) -> Any:
    """Find a root of a system of equations with :func:`scipy.optimize.fsolve`.

    SciPy (MINPACK) runs on the host. With `x0` on the device, `func` and `fprime` get ``x``
    on the device, their results are copied back, and the root comes back on the device: two
    counted copies per evaluation, so use it for setup, not in a time loop.

    Parameters
    ----------
    func : callable
        ``func(x, *args)``, the residual, shaped like `x0`.
    x0 : array
        Initial guess; its backend is the backend of the callbacks and of the result.
    args : tuple, optional
        Extra arguments of `func` and `fprime`, passed unchanged.
    fprime : callable, optional
        ``fprime(x, *args)``, the Jacobian.
    **kwargs
        The other arguments of :func:`scipy.optimize.fsolve`.

    Returns
    -------
    array or tuple
        The root on `x0`'s backend (SciPy's tuple with ``full_output=True``).

    Examples
    --------
    >>> xp.optimize.fsolve(lambda x: x**2 - xp.asarray([4.0, 9.0]), xp.ones(2))
    array([2., 3.])
    """
    solver = scipy_module("optimize", "cunumpy.optimize.fsolve").fsolve
    if not wants_device(x0):
        return solver(func, x0, args=args, fprime=fprime, **kwargs)
    return device(solver(on_device(func), host(x0), args=args, fprime=on_device(fprime), **kwargs))


def root(
    fun: Callable[..., Any],
    x0: Any,
    args: tuple = (),
    jac: Any = None,
    callback: Callable[..., Any] | None = None,
    **kwargs: Any,
) -> Any:
    """Find a root of a system of equations with :func:`scipy.optimize.root`.

    SciPy runs on the host; with `x0` on the device, `fun`, `jac` and `callback` get ``x`` on
    the device and the arrays of the result come back on the device (see :func:`fsolve`).

    Parameters
    ----------
    fun : callable
        ``fun(x, *args)``, the residual (or ``(residual, jacobian)`` with ``jac=True``).
    x0 : array
        Initial guess; its backend is the backend of the callbacks and of the result.
    args : tuple, optional
        Extra arguments of `fun` and `jac`.
    jac : callable or bool, optional
        The Jacobian, or True when `fun` returns it too.
    callback : callable, optional
        ``callback(x, f)`` after each iteration (some methods only).
    **kwargs
        The other arguments of :func:`scipy.optimize.root` (``method``, ``tol``, ``options``).

    Returns
    -------
    OptimizeResult
        SciPy's result, its arrays on `x0`'s backend.

    Examples
    --------
    >>> res = xp.optimize.root(lambda x: x**3 - 8.0, xp.ones(1))
    >>> res.success, res.x
    (True, array([2.]))
    """
    solver = scipy_module("optimize", "cunumpy.optimize.root").root
    if not wants_device(x0):
        return solver(fun, x0, args=args, jac=jac, callback=callback, **kwargs)
    return device(
        solver(
            on_device(fun),
            host(x0),
            args=args,
            jac=on_device(jac),
            callback=on_device(callback, arrays=2),
            **kwargs,
        )
    )


def minimize(
    fun: Callable[..., Any],
    x0: Any,
    args: tuple = (),
    jac: Any = None,
    hess: Any = None,
    hessp: Callable[..., Any] | None = None,
    bounds: Any = None,
    constraints: Any = (),
    callback: Callable[..., Any] | None = None,
    **kwargs: Any,
) -> Any:
    """Minimize a scalar function with :func:`scipy.optimize.minimize`.

    SciPy runs on the host; with `x0` on the device, every callback (`fun`, `jac`, `hess`,
    `hessp`, `callback` and the functions of `constraints`) gets its arrays on the device,
    and the arrays of the result come back on the device (see :func:`fsolve`).

    Parameters
    ----------
    fun : callable
        ``fun(x, *args)``, a scalar (or ``(value, gradient)`` with ``jac=True``).
    x0 : array
        Initial guess; its backend is the backend of the callbacks and of the result.
    args : tuple, optional
        Extra arguments of the callbacks.
    jac, hess : callable, str or bool, optional
        Gradient and Hessian as in SciPy.
    hessp : callable, optional
        ``hessp(x, p, *args)``, the Hessian times ``p``.
    bounds : sequence or Bounds, optional
        Bounds on ``x`` (host data).
    constraints : dict, constraint object or sequence of them, optional
        As in SciPy; their functions get device arrays like `fun`.
    callback : callable, optional
        Called after each iteration, as in SciPy.
    **kwargs
        The other arguments of :func:`scipy.optimize.minimize`.

    Returns
    -------
    OptimizeResult
        SciPy's result, its arrays on `x0`'s backend.

    Examples
    --------
    >>> res = xp.optimize.minimize(lambda x: xp.sum((x - 1.0) ** 2), xp.zeros(2))
    >>> bool(xp.allclose(res.x, 1.0, atol=1e-6))
    True
    """
    solver = scipy_module("optimize", "cunumpy.optimize.minimize").minimize
    if not wants_device(x0):
        return solver(
            fun, x0, args=args, jac=jac, hess=hess, hessp=hessp, bounds=bounds,
            constraints=constraints, callback=callback, **kwargs,
        )  # fmt: skip
    return device(
        solver(
            on_device(fun),
            host(x0),
            args=args,
            jac=on_device(jac),
            hess=on_device(hess),
            hessp=on_device(hessp, arrays=2),
            bounds=bounds,
            constraints=_constraints_on_device(constraints),
            callback=_callback_on_device(callback),
            **kwargs,
        )
    )


def _constraints_on_device(constraints: Any) -> Any:
    if isinstance(constraints, dict):
        moved = dict(constraints)
        for key in ("fun", "jac"):
            if key in moved:
                moved[key] = on_device(moved[key])
        return moved
    if isinstance(constraints, list | tuple):
        return type(constraints)(_constraints_on_device(c) for c in constraints)
    for key in ("fun", "jac"):
        if callable(getattr(constraints, key, None)):
            setattr(constraints, key, on_device(getattr(constraints, key)))
    return constraints


def _callback_on_device(callback: Callable[..., Any] | None) -> Callable[..., Any] | None:
    if callback is None:
        return None
    import inspect

    try:
        params = inspect.signature(callback).parameters
    except (TypeError, ValueError):
        params = {}
    if list(params) == ["intermediate_result"]:
        # SciPy passes an OptimizeResult by keyword to such callbacks
        def with_result(intermediate_result: Any) -> Any:
            return callback(intermediate_result=device(intermediate_result))

        return with_result
    return on_device(callback)
