"""SciPy through xp.scipy on either backend."""

import numpy as np

import cunumpy as xp

x = xp.asarray(np.linspace(0.0, 1.0, 4))
print([round(v, 12) for v in xp.to_numpy(xp.scipy.special.erf(x)).tolist()])
print(xp.scipy.available("special"), xp.scipy.available("sparse"))
m = xp.scipy.sparse.csr_matrix(xp.asarray(np.eye(3) * 2.0))
print(xp.to_numpy(m.dot(xp.asarray(np.ones(3)))).tolist())
