"""Host-only code with backend arrays: host_call, evaluate_on_host, setup_on_host."""

import numpy as np

import cunumpy as xp


def host_only(a, b):
    assert isinstance(a, np.ndarray) and isinstance(b, np.ndarray)
    return a + b, np.cumsum(a)


a = xp.asarray(np.arange(4.0))
s, c = xp.host_call(host_only, a, xp.ones(4))
print(xp.get_array_backend(s), xp.to_numpy(s).tolist(), xp.to_numpy(c).tolist())


class Field:
    @xp.setup_on_host
    def __init__(self, n):
        self.backend_during_setup = xp.get_backend()
        self.table = np.arange(float(n))

    @xp.evaluate_on_host
    def evaluate(self, x):
        assert isinstance(x, np.ndarray)
        return np.interp(x, self.table, self.table**2)


f = Field(5)
print(f.backend_during_setup)
r = f.evaluate(xp.asarray(np.array([0.5, 2.5])))
print(xp.get_array_backend(r), xp.to_numpy(r).tolist())
