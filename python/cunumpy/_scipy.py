"""``xp.scipy``: SciPy on the NumPy backend, ``cupyx.scipy`` on the CuPy backend.

The namespace object resolves every attribute on the backend active at the time of the access,
so ``xp.scipy.sparse.linalg.cg`` is SciPy's or CuPy's ``cg`` the way ``xp.zeros`` is NumPy's or
CuPy's. CuPy lacks a few SciPy names; those in :data:`FILLS` are filled in by cunumpy.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np

from . import _backend
from .exceptions import InvalidArgumentError, ScipyUnavailableError

# The subpackages forwarded (the ones cupyx.scipy has).
SUBMODULES = (
    "fft",
    "fftpack",
    "interpolate",
    "linalg",
    "ndimage",
    "signal",
    "sparse",
    "sparse.csgraph",
    "sparse.linalg",
    "spatial",
    "special",
    "stats",
)


def _solve_circulant(
    c: Any,
    b: Any,
    singular: str = "raise",
    tol: float | None = None,
    caxis: int = -1,
    baxis: int = 0,
    outaxis: int = 0,
) -> Any:
    """``scipy.linalg.solve_circulant`` on CuPy arrays (cupyx.scipy.linalg lacks it): solves
    ``C x = b`` for the circulant matrix ``C`` whose first column is `c`, with FFTs."""
    import cupy

    c = cupy.moveaxis(cupy.asarray(c), caxis, -1)
    b = cupy.moveaxis(cupy.asarray(b), baxis, -1)
    n = c.shape[-1]
    if b.shape[-1] != n:
        raise InvalidArgumentError(
            f"cunumpy.scipy.linalg.solve_circulant: b must have {n} entries along baxis "
            f"(the length of c), got shape {tuple(b.shape)}"
        )
    fc = cupy.fft.fft(c, axis=-1)
    abs_fc = cupy.abs(fc)
    if tol is None:
        tol = float(abs_fc.max()) * n * float(cupy.finfo(cupy.float64).eps)
    near_zero = abs_fc <= tol
    if bool(near_zero.any()):
        if singular == "raise":
            raise np.linalg.LinAlgError(
                "cunumpy.scipy.linalg.solve_circulant: near singular circulant matrix"
            )
        fc = cupy.where(near_zero, 1, fc)
    fb = cupy.fft.fft(b, axis=-1)
    q = fb / fc
    if singular != "raise":
        q = cupy.where(near_zero, 0, q)
    x = cupy.fft.ifft(q, axis=-1)
    if not (cupy.iscomplexobj(c) or cupy.iscomplexobj(b)):
        x = x.real
    return cupy.moveaxis(x, -1, outaxis)


# cunumpy's own versions of SciPy names that cupyx.scipy lacks (CuPy backend only).
FILLS: dict[str, dict[str, Callable[..., Any]]] = {"linalg": {"solve_circulant": _solve_circulant}}


def _backend_root() -> tuple[str, str]:
    if _backend.get_backend() == "cupy":
        return "cupy", "cupyx.scipy"
    return "numpy", "scipy"


def _import(root: str, path: str) -> ModuleType:
    name = f"{root}.{path}" if path else root
    try:
        return importlib.import_module(name)
    except ImportError as err:
        package = "scipy" if root == "scipy" else "cupy"
        raise ScipyUnavailableError(
            f"cunumpy.scipy{'.' + path if path else ''}: the active backend needs {name}, which "
            f"cannot be imported ({err}); install {package}"
        ) from err


class ScipyNamespace:
    """A SciPy (sub)package of the active backend; ``xp.scipy`` is the root.

    Attribute access forwards to ``scipy.<path>`` on the NumPy backend and to
    ``cupyx.scipy.<path>`` on the CuPy backend, resolved at each access. A name the backend
    lacks raises ``AttributeError`` naming cunumpy and the backend, unless cunumpy fills it in
    (:data:`FILLS`, CuPy only). A missing SciPy (NumPy backend) raises
    :class:`~cunumpy.exceptions.ScipyUnavailableError` (an ``ImportError``).

    Parameters
    ----------
    path : str, optional
        Dotted path below the root, one of :data:`SUBMODULES`; empty for the root.

    Raises
    ------
    ValueError
        If `path` is not a forwarded subpackage.

    Examples
    --------
    >>> xp.scipy.interpolate.CubicSpline(x, y)  # doctest: +SKIP
    >>> x, info = xp.scipy.sparse.linalg.cg(A, b)  # doctest: +SKIP
    """

    def __init__(self, path: str = "") -> None:
        if path and path not in SUBMODULES:
            raise InvalidArgumentError(
                f"cunumpy.scipy: {path!r} is not a forwarded subpackage; expected one of "
                + ", ".join(SUBMODULES)
            )
        self._path = path

    def __repr__(self) -> str:
        return f"<cunumpy scipy namespace <backend>{'.' + self._path if self._path else ''}>"

    def _child(self, name: str) -> str:
        return f"{self._path}.{name}" if self._path else name

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name != "__version__":
            raise AttributeError(name)
        if self._child(name) in SUBMODULES:
            return ScipyNamespace(self._child(name))
        backend, root = _backend_root()
        module = _import(root, self._path)
        try:
            return getattr(module, name)
        except AttributeError:
            pass
        fill = FILLS.get(self._path, {}).get(name) if backend == "cupy" else None
        if fill is not None:
            return fill
        where = f"scipy.{self._path}" if self._path else "scipy"
        raise AttributeError(
            f"cunumpy.{where} has no attribute {name!r} on the {backend} backend "
            f"({module.__name__} lacks it)"
        )

    def available(self, name: str) -> bool:
        """Whether `name` (a function, class or subpackage) exists here on the active backend.

        Returns False, never raises, when the backend's SciPy is not installed.

        Examples
        --------
        >>> xp.scipy.special.available("erf")  # doctest: +SKIP
        True
        """
        try:
            getattr(self, name)
        except (AttributeError, ImportError):
            return False
        return True

    def __dir__(self) -> list[str]:
        prefix = f"{self._path}." if self._path else ""
        names = {n[len(prefix) :] for n in SUBMODULES if n.startswith(prefix)}
        names = {n for n in names if "." not in n} | {"available"}
        try:
            names |= {n for n in dir(_import(_backend_root()[1], self._path)) if n[0] != "_"}
        except ImportError:
            pass
        return sorted(n for n in names if n)


scipy = ScipyNamespace()

__all__ = ["FILLS", "SUBMODULES", "ScipyNamespace", "scipy"]
