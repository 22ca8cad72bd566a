"""Quadrature and ODE integration with SciPy on the host, callbacks on the data's backend.

For setup-time work with device data: each evaluation copies its arrays across (counted). In
a time loop, write the integrand on a fixed grid with array operations instead.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._conversions import is_cupy_array, to_numpy
from ._scipy_host import device, host, on_device, scipy_module, wants_device

__all__ = ["odeint", "quad"]


def quad(func: Callable[..., Any], a: float, b: float, args: tuple = (), **kwargs: Any) -> Any:
    """Integrate a scalar function with :func:`scipy.integrate.quad`.

    SciPy (QUADPACK) runs on the host and calls `func` with a Python float. `func` may compute
    on the device and return a 0-d device array: it is copied to the host (counted), one
    synchronization per evaluation.

    Parameters
    ----------
    func : callable
        ``func(x, *args)``, a scalar.
    a, b : float
        The limits (``numpy.inf`` allowed).
    args : tuple, optional
        Extra arguments of `func`, passed unchanged.
    **kwargs
        The other arguments of :func:`scipy.integrate.quad`.

    Returns
    -------
    tuple
        SciPy's result, ``(value, abserr)`` and what ``full_output`` adds, on the host.

    Examples
    --------
    >>> value, error = xp.integrate.quad(lambda x: x**2, 0.0, 3.0)
    >>> round(value, 12)
    9.0
    """
    solver = scipy_module("integrate", "cunumpy.integrate.quad").quad

    def scalar(x: float, *rest: Any) -> Any:
        value = func(x, *rest)
        return float(to_numpy(value)) if is_cupy_array(value) else value

    return solver(scalar, a, b, args=args, **kwargs)


def odeint(
    func: Callable[..., Any],
    y0: Any,
    t: Any,
    args: tuple = (),
    Dfun: Callable[..., Any] | None = None,  # noqa: N803 - SciPy's name
    **kwargs: Any,
) -> Any:
    """Integrate a system of ODEs with :func:`scipy.integrate.odeint`.

    SciPy (LSODA) runs on the host; with `y0` on the device, `func` and `Dfun` get ``y`` on
    the device and the solution comes back on the device.

    Parameters
    ----------
    func : callable
        ``func(y, t, *args)`` (``func(t, y, *args)`` with ``tfirst=True``).
    y0 : array
        Initial condition; its backend is the backend of the callbacks and of the result.
    t : array
        The output times, starting with the time of `y0`; either backend.
    args : tuple, optional
        Extra arguments of `func` and `Dfun`.
    Dfun : callable, optional
        The Jacobian of `func`, with the same arguments.
    **kwargs
        The other arguments of :func:`scipy.integrate.odeint`.

    Returns
    -------
    array or tuple
        ``y`` at the times `t`, shape ``(len(t), len(y0))``, on `y0`'s backend; with
        ``full_output=True`` also SciPy's info dict.

    Examples
    --------
    >>> y = xp.integrate.odeint(lambda y, t: -y, xp.ones(1), xp.asarray([0.0, 1.0]))
    >>> round(float(y[-1, 0]), 6)
    0.367879
    """
    solver = scipy_module("integrate", "cunumpy.integrate.odeint").odeint
    if not wants_device(y0):
        return solver(func, y0, host(t), args=args, Dfun=Dfun, **kwargs)
    # y is the first argument unless tfirst=True puts t first
    arrays_first = not kwargs.get("tfirst", False)

    def moved(callback: Callable[..., Any] | None) -> Callable[..., Any] | None:
        if callback is None or arrays_first:
            return on_device(callback)
        inner = on_device(lambda y, t, *rest: callback(t, y, *rest))
        return lambda t, y, *rest: inner(y, t, *rest)

    return device(solver(moved(func), host(y0), host(t), args=args, Dfun=moved(Dfun), **kwargs))
