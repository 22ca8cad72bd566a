"""``device_function_kernel``: the generated wrapper kernel and its errors (no compiler, no GPU;
running the wrappers is in tests/cxx/test_device_function_cxx.py and tests/gpu)."""

from __future__ import annotations

import pytest

from cunumpy.arguments import CudaStruct
from cunumpy.exceptions import CudaSignatureError
from cunumpy.kernel_testing import device_function_kernel, device_function_source
from cunumpy.kernels import CudaKernel

LERP = "__device__ double lerp(double a, double b, double t) { return a + t * (b - a); }"
VEC = CudaStruct("Vec2", [("x", "double"), ("y", "double")])
VEC_SOURCE = "struct Vec2 { double x, y; };\n"


def _kernel_line(source: str) -> str:
    return next(line for line in source.splitlines() if "__global__" in line)


def test_scalar_parameters_become_const_pointers_and_the_result_goes_to_out():
    kernel = device_function_kernel(LERP, "__device__ double lerp(double a, double b, double t)")
    assert isinstance(kernel, CudaKernel) and kernel.name == "lerp_kernel"
    assert _kernel_line(kernel.source) == (
        'extern "C" __global__ void lerp_kernel(const double* a, const double* b, '
        "const double* t, double* out, int n) {"
    )
    body = kernel.source.split(_kernel_line(kernel.source))[1]
    assert "if (cunumpy_thread_index >= n) return;" in body
    call = (
        "out[cunumpy_thread_index] = lerp(a[cunumpy_thread_index], b[cunumpy_thread_index], "
        "t[cunumpy_thread_index]);"
    )
    assert call in body
    assert kernel.source.startswith(LERP)  # the header source comes first, unchanged
    # the parsed signature of the wrapper is what a launch checks
    assert [(p.name, p.ctype, p.pointer) for p in kernel.signature] == [
        ("a", "double", True),
        ("b", "double", True),
        ("t", "double", True),
        ("out", "double", True),
        ("n", "int", False),
    ]


def test_pointers_pass_through_structs_by_value_void_has_no_out():
    source, name = device_function_source(
        VEC_SOURCE + "__device__ void push(const Vec2& v, float* acc, int k) { acc[k] += v.x; }",
        "void push(const Vec2 &v, float* acc, int k);",
        structs=[VEC],
        name="push_all",
    )
    assert name == "push_all"
    assert _kernel_line(source) == (
        'extern "C" __global__ void push_all(Vec2 v, float* acc, const int* k, int n) {'
    )
    assert "    push(v, acc, k[cunumpy_thread_index]);" in source.splitlines()
    # struct by value, given as a CudaStruct or by name
    kernel = device_function_kernel(
        VEC_SOURCE + "__device__ double norm1(Vec2 v, double s) { return s * (v.x + v.y); }",
        "double norm1(Vec2 v, double s)",
        structs=[VEC],
    )
    # (the struct parameter carries the CudaStruct and its dtype, as in cunumpy 0.7)
    assert [p.struct for p in kernel.signature][:2] == [VEC, None]
    assert kernel.signature[0].dtype == VEC.dtype
    assert [f.name for f in kernel.signature[0].struct.fields] == [f.name for f in VEC.fields]


def test_names_includes_and_cudakernel_keywords():
    kernel = device_function_kernel(
        "",
        "float scale(float x)",
        includes=("scale.cuh", "<cunumpy/index.cuh>"),
        n_threads_param="count",
        out_param="result",
        block_size=64,
        options=("-DSCALE=2",),
    )
    lines = kernel.source.splitlines()
    assert lines[:2] == ['#include "scale.cuh"', "#include <cunumpy/index.cuh>"]
    assert _kernel_line(kernel.source).startswith(
        'extern "C" __global__ void scale_kernel(const float* x, float* result, int count)'
    )
    assert kernel.block_size == 64 and "-DSCALE=2" in kernel.options
    # "out" and "n" are ordinary parameter names once the kernel's own names are changed
    source, _ = device_function_source(
        "", "int f(int out, int n)", out_param="y", n_threads_param="m"
    )
    assert "(const int* out, const int* n, int* y, int m)" in source
    # a void function has no output array, so a parameter may be named out
    source, _ = device_function_source("", "void g(double* out)")
    assert "(double* out, int n)" in source


@pytest.mark.parametrize(
    ("prototype", "structs", "match"),
    [
        ("double lerp", (), r"cannot parse the prototype 'double lerp'"),
        ("double f(double x", (), "cannot parse the prototype"),
        ("f(double x)", (), r"device_function_kernel\('f'\): the prototype .* no return type"),
        ("double* f(double x)", (), r"\('f'\): returns 'double\*'; .* not a pointer"),
        ("double& f(double x)", (), r"returns 'double&'"),
        ("Vec2 f(double x)", ("Vec2",), r"returns 'Vec2'; only void or a scalar"),
        ("double f(double& x)", (), r"parameter 0 \('double& x'\) is a reference to a non-struct"),
        ("double f(const Other& v)", ("Vec2",), r"non-struct type; only struct types .*Vec2"),
        ("double f(double out)", (), r"a parameter is named 'out'.*out_param="),
        ("void f(int k, int n)", (), r"a parameter is named 'n'.*n_threads_param="),
        ("double f(float3 v)", (), r"cannot wrap .*parameter 'float3 v' \(argument 0\) of 'f'"),
    ],
)
def test_errors_are_value_errors_naming_the_function(prototype, structs, match):
    with pytest.raises(CudaSignatureError, match=match) as info:
        device_function_kernel("", prototype, structs=structs)
    assert isinstance(info.value, ValueError)
    assert "cunumpy_device_function_probe" not in str(info.value)
