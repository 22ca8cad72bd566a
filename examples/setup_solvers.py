"""Setup-time numerics on the active backend: many scalar roots at once with
xp.optimize.newton (on the device for CuPy data), a spline from xp.scipy.interpolate (SciPy, or
cupyx.scipy on CuPy), a sparse solve and a quadrature. Needs SciPy."""

from __future__ import annotations

import numpy as np

import cunumpy as xp


def main() -> dict[str, float]:
    # Kepler's equation E - e sin E = M for 1000 orbits at once
    e = xp.to_cunumpy(np.linspace(0.0, 0.9, 1000))
    mean = xp.to_cunumpy(np.linspace(0.1, 3.0, 1000))
    ecc = xp.optimize.newton(
        lambda ea: ea - e * xp.sin(ea) - mean, mean, fprime=lambda ea: 1.0 - e * xp.cos(ea)
    )
    worst = float(xp.max(xp.abs(ecc - e * xp.sin(ecc) - mean)))

    x = xp.to_cunumpy(np.linspace(0.0, np.pi, 20))
    spline = xp.scipy.interpolate.CubicSpline(x, xp.sin(x))
    t = xp.to_cunumpy(np.linspace(0.0, np.pi, 7))
    spline_error = float(xp.max(xp.abs(spline(t) - xp.sin(t))))

    n = 50
    diagonals = [np.full(n - 1, -1.0), np.full(n, 2.0), np.full(n - 1, -1.0)]
    laplacian = xp.scipy.sparse.csr_matrix(
        xp.to_cunumpy(np.diag(diagonals[1]) + np.diag(diagonals[0], 1) + np.diag(diagonals[2], -1))
    )
    rhs = xp.ones(n)
    solution, info = xp.scipy.sparse.linalg.cg(laplacian, rhs, rtol=1e-12)
    residual = float(xp.max(xp.abs(laplacian @ solution - rhs)))

    area, _ = xp.integrate.quad(lambda s: np.sin(s) ** 2, 0.0, np.pi)
    result = {"kepler": worst, "spline": spline_error, "cg": residual, "area": area}
    assert worst < 1e-12 and spline_error < 1e-3 and info == 0 and residual < 1e-9
    assert abs(area - np.pi / 2) < 1e-12
    print(result)
    return result


if __name__ == "__main__":
    main()
