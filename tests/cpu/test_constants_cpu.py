"""What ``__constant__`` support checks before any device is involved (no compiler, no GPU):
the variables a source declares, and values that are not NumPy ones."""

from __future__ import annotations

import numpy as np
import pytest

from cunumpy.exceptions import CudaConstantTypeError
from cunumpy.kernels import CudaKernel

SOURCE = r"""
typedef float real;
__constant__ real scale = 1.0f;              // a typedef of the same source
__constant__ int table[2][3], other;         // two declarators
namespace inner { __constant__ float hidden; }
// __constant__ float commented_out;
#define N 4
__constant__ double by_macro[N];
extern "C" __global__ void k(float* x) { __shared__ float s[1]; x[0] = scale + table[0][0]; }
"""


def test_constant_names_lists_global_scope_variables_in_order():
    assert CudaKernel(SOURCE, "k").constant_names == ("scale", "table", "other", "by_macro")
    assert CudaKernel('extern "C" __global__ void f(int* x) {}', "f").constant_names == ()


@pytest.mark.parametrize("value", [1.0, 1, [1.0], "1", None])
def test_values_that_are_not_numpy_are_refused_before_any_device(value):
    k = CudaKernel(SOURCE, "k")
    with pytest.raises(CudaConstantTypeError, match="'k'.*NumPy scalar or array") as info:
        k.set_constant("scale", value)
    assert isinstance(info.value, TypeError)


def test_a_name_that_is_not_a_str_is_refused():
    k = CudaKernel(SOURCE, "k")
    with pytest.raises(CudaConstantTypeError, match="str"):
        k.set_constant(b"scale", np.float32(1))
    with pytest.raises(CudaConstantTypeError, match="str"):
        k.get_constant(0)
