"""``__constant__`` memory set from Python: a polynomial whose coefficients live in constant
memory, evaluated for every element of an array.

Runs on a GPU with CuPy, or on the emulated device without one::

    CUNUMPY_FAKE_CUPY=1 python examples/constant_memory.py
"""

from __future__ import annotations

import numpy as np

import cunumpy as xp
from cunumpy.kernels import CudaKernel

SOURCE = r"""
#define DEGREE 4
__constant__ double coeffs[DEGREE];   // c0 + c1 x + c2 x^2 + c3 x^3
__constant__ float shift = 0.0f;      // an initialiser is the value until it is set

extern "C" __global__ void polyval(const double* x, double* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    double v = x[i] + shift, acc = 0.0;
    for (int k = DEGREE - 1; k >= 0; --k) acc = acc * v + coeffs[k];
    y[i] = acc;
}
"""


def main() -> np.ndarray:
    import cupy  # the real one on a GPU, cunumpy's fake one under CUNUMPY_FAKE_CUPY=1

    kernel = CudaKernel(SOURCE, "polyval")
    print("constants:", kernel.constant_names, "shift starts at", kernel.get_constant("shift"))
    c = np.array([1.0, -2.0, 0.5, 0.25])
    with xp.profiling.count_transfers() as counter:
        kernel.set_constant("coeffs", c)  # float64[4]: exactly the declared type and size
        kernel.set_constant("shift", np.float32(0.5))
    print("copies to the device:", counter.count("to_device"), "bytes:", counter.bytes("to_device"))

    x_host = np.linspace(-1.0, 1.0, 1000)
    x = cupy.asarray(x_host)
    y = cupy.empty_like(x)
    kernel(x, y, np.int32(x.size), n_threads=x.size)
    expected = np.polynomial.polynomial.polyval(x_host + 0.5, c)
    result = cupy.asnumpy(y)
    assert np.allclose(result, expected), "the kernel read other constants than were set"
    print("max |error| against NumPy:", float(np.max(np.abs(result - expected))))
    return result


if __name__ == "__main__":
    main()
