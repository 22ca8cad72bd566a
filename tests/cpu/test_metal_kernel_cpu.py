"""``MetalKernel`` without a Mac and without a compiler: the constructor and call of cunumpy
0.7.1, the checks every call passes before any launch (typed errors naming the kernel and the
argument), ``metal_available``, and MLX's array conversion where MLX installs (it has Linux
wheels without Metal). The Metal launch itself is in test_metal_device.py (skipped without a
Metal device); emulated launches are in tests/cxx/test_metal_kernel_cxx.py."""

import inspect

import numpy as np
import pytest

from cunumpy.exceptions import (
    KernelArgumentOverflowError,
    KernelArgumentTypeError,
    KernelArgumentValueError,
    LaunchShapeError,
)
from cunumpy.kernels import MetalKernel, metal_available


@pytest.fixture(autouse=True)
def no_fake_metal(monkeypatch):
    monkeypatch.delenv("CUNUMPY_FAKE_METAL", raising=False)


def _has_metal():
    try:
        import mlx.core as mx
    except ImportError:
        return False
    return bool(mx.metal.is_available())


SCALE = "uint i = thread_position_in_grid.x; y[i] = a[0] * x[i];"


def test_signature_and_attributes_of_0_7_1():
    # parameter names, kinds and defaults as cunumpy 0.7.1 has them
    sig = inspect.signature(MetalKernel)
    assert list(sig.parameters) == [
        "source",
        "inputs",
        "outputs",
        "name",
        "header",
        "threadgroup",
        "float64",
        "atomic_outputs",
        "init_value",
    ]
    defaults = {k: p.default for k, p in sig.parameters.items() if p.default is not p.empty}
    assert defaults == {
        "name": "cunumpy_kernel",
        "header": "",
        "threadgroup": 256,
        "float64": "error",
        "atomic_outputs": False,
        "init_value": None,
    }
    call = inspect.signature(MetalKernel.__call__)
    assert [(k, p.kind.name) for k, p in call.parameters.items()][1:] == [
        ("args", "VAR_POSITIONAL"),
        ("out", "KEYWORD_ONLY"),
        ("n_threads", "KEYWORD_ONLY"),
        ("template", "KEYWORD_ONLY"),
    ]
    k = MetalKernel(SCALE, ["x", "a"], ["y"])
    # 0.7.1: MetalKernel('cunumpy_kernel', inputs=('x', 'a'), outputs=('y',))
    assert repr(k) == "MetalKernel('cunumpy_kernel', inputs=('x', 'a'), outputs=('y',))"
    assert (k.source, k.inputs, k.outputs, k.float64, k.threadgroup) == (
        SCALE,
        ("x", "a"),
        ("y",),
        "error",
        (256,),
    )
    # 0.7.1 takes a single string as one name
    assert MetalKernel(SCALE, "x", "y").inputs == ("x",)


@pytest.mark.parametrize(
    "kwargs, error, text",
    [
        ({"float64": "x"}, ValueError, "float64 must be 'error' or 'cast'"),
        ({"outputs": []}, ValueError, "at least one output"),
        ({"outputs": ["x"]}, ValueError, "distinct"),
        ({"threadgroup": 0}, ValueError, "1 to 3 positive integers"),
        ({"threadgroup": (1, 1, 1, 1)}, ValueError, "1 to 3 positive integers"),
        ({"inputs": ["1x"]}, KernelArgumentValueError, "C identifiers"),
    ],
)
def test_constructor_errors(kwargs, error, text):
    args = {"source": SCALE, "inputs": ["x"], "outputs": ["y"], **kwargs}
    with pytest.raises(error, match=text):
        MetalKernel(**args)


def _wrong_calls():
    x = np.ones(4, np.float32)
    y = np.empty(4, np.float32)
    ro = np.empty(4, np.float32)
    ro.setflags(write=False)
    return [
        ((x,), {"out": y}, KernelArgumentTypeError, r"takes 2 input\(s\) \(x, a\), got 1"),
        ((x.astype(np.float64), 2.0), {"out": y}, KernelArgumentTypeError, "input 'x' is float64"),
        ((x, 2.0), {"out": y.astype(np.float64)}, KernelArgumentTypeError, "output 'y' is float64"),
        ((x.astype(np.complex128), 2.0), {"out": y}, KernelArgumentTypeError, "complex128"),
        ((x.astype("U1"), 2.0), {"out": y}, KernelArgumentTypeError, "input 'x' has dtype <U1"),
        (([1.0, 2.0], 2.0), {"out": y}, KernelArgumentTypeError, "input 'x' must be a NumPy"),
        ((x, 2**40), {"out": y}, KernelArgumentOverflowError, "input 'a'.*int32"),
        ((x, 2.0), {"out": np.ones(8, np.float32)[::2]}, KernelArgumentTypeError, "C-contiguous"),
        ((x, 2.0), {"out": ro}, KernelArgumentTypeError, "writeable"),
        ((x, 2.0), {"out": [y, y]}, KernelArgumentTypeError, r"out must hold 1 array"),
        ((x, 2.0), {"out": 3}, KernelArgumentTypeError, "out must be a NumPy array"),
        ((x, 2.0), {"out": y, "n_threads": 0}, LaunchShapeError, "n_threads"),
        ((x, 2.0), {"out": y, "n_threads": (1, 1, 1, 1)}, LaunchShapeError, "n_threads"),
        ((x, 2.0), {"out": y, "template": {"T": 1.5}}, KernelArgumentTypeError, "template 'T'"),
    ]


@pytest.mark.parametrize("args, kwargs, error, text", _wrong_calls())
def test_wrong_calls_raise_typed_errors_before_any_launch(args, kwargs, error, text):
    # No Metal device and no emulator here: a call that got past its checks would raise
    # ImportError or RuntimeError instead, so these errors come before any launch.
    k = MetalKernel(SCALE, ["x", "a"], ["y"], name="scale")
    with pytest.raises(error, match=text) as info:
        k(*args, **kwargs)
    assert "'scale'" in str(info.value)


def test_float64_cast_and_a_too_large_threadgroup_are_checked_too():
    k = MetalKernel(SCALE, ["x", "a"], ["y"], threadgroup=(64, 32), name="big")
    with pytest.raises(LaunchShapeError, match="2048 threads"):
        k(np.ones(4, np.float32), 2.0, out=np.empty(4, np.float32))


@pytest.mark.skipif(_has_metal(), reason="a Metal device is present")
def test_a_valid_call_without_metal_says_what_is_missing():
    k = MetalKernel(SCALE, ["x", "a"], ["y"], float64="cast")
    assert not metal_available()
    try:
        import mlx.core  # noqa: F401

        error, text = RuntimeError, "MLX reports none"
    except ImportError:
        error, text = ImportError, "needs MLX"
    with pytest.raises(error, match=text):
        k(np.ones(4), 2.0, out=np.empty(4))


def test_metal_available_follows_the_fake_metal_setting(monkeypatch):
    monkeypatch.setenv("CUNUMPY_FAKE_METAL", "1")
    assert metal_available() is True
    monkeypatch.setenv("CUNUMPY_FAKE_METAL", "off")
    assert metal_available() is _has_metal()


@pytest.mark.parametrize(
    "dtype", ["bool", "int8", "uint8", "int16", "int32", "uint32", "int64", "float16", "float32"]
)
def test_mlx_array_conversion_round_trips(dtype):
    mx = pytest.importorskip("mlx.core")
    from cunumpy.kernels._metal_kernel import from_mlx, mlx_dtype, to_mlx

    a = (np.arange(24).reshape(2, 3, 4) % 7).astype(dtype)
    m = to_mlx(a[:, ::-1])  # any layout: the copy is row-contiguous
    assert m.dtype == mlx_dtype(dtype) == getattr(mx, "bool_" if dtype == "bool" else dtype)
    assert tuple(m.shape) == (2, 3, 4)
    back = from_mlx(m)
    assert back.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(back, a[:, ::-1])
    # a copy, not a view of MLX's memory
    assert back.flags.writeable and back.flags.c_contiguous


@pytest.mark.skipif(_has_metal(), reason="a Metal device is present (test_metal_device.py)")
def test_the_mlx_call_is_accepted_by_mlx_and_fails_only_for_want_of_metal():
    # MLX's Linux wheel has the real binding of mx.fast.metal_kernel (nanobind): a keyword or a
    # type it does not take raises TypeError while the arguments are read; a call it takes then
    # fails for want of a Metal back-end. So this checks every argument the MLX path passes.
    mx = pytest.importorskip("mlx.core")
    k = MetalKernel(
        "uint i = thread_position_in_grid.x; y[i] = (T)x[i] * (float)N;",
        ["x"],
        ["y", "z"],
        init_value=0,
        name="mlx_args",
    )
    with pytest.raises(RuntimeError, match="No Metal back-end"):
        results = k._mlx_call(
            mx,
            [np.ones(4, np.float32)],
            [(4,), (2, 2)],
            [np.float32, np.int32],
            (4, 1, 1),
            (4, 1, 1),
            [("T", "type", "float"), ("N", "int", "3"), ("B", "bool", "true")],
        )
        mx.eval(*results)
    assert k._mlx_kernel is not None  # mx.fast.metal_kernel took the constructor's arguments
