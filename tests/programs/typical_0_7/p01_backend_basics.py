"""Arrays through the backend namespace, as 0.7's README starts."""

import cunumpy as xp

print(xp.get_backend(), xp.numpy_backend, xp.cupy_backend)
x = xp.linspace(0.0, 1.0, 5)
y = xp.sin(x) * 2.0 + xp.arange(5)
host = xp.to_numpy(y)
print(type(host).__name__, host.dtype, [round(v, 12) for v in host.tolist()])
print(round(float(xp.sum(y)), 12), int(xp.argmax(y)))
print(xp.is_gpu(y), xp.is_cpu(host), xp.get_array_backend(y), xp.get_array_backend(host))
print(xp.default_float_dtype())
z = xp.zeros((2, 3), dtype=xp.float32)
print(z.shape, str(z.dtype), xp.to_numpy(z + 1).sum())
