"""Setup-time solves: batched Newton on the backend, SciPy's quad on the host."""

import numpy as np

import cunumpy as xp

c = xp.asarray(np.array([2.0, 9.0, 16.0]))
roots = xp.optimize.newton(lambda x: x * x - c, xp.ones(3), fprime=lambda x: 2 * x)
print([round(v, 12) for v in xp.to_numpy(roots).tolist()])
value, err = xp.integrate.quad(lambda t: t * t, 0.0, 3.0)
print(round(value, 12), err < 1e-9)
