"""CudaKernel's checks on a machine without a GPU: every argument error is raised before
anything is compiled, exactly as on a GPU."""

import numpy as np
import pytest

import cunumpy as xp
from cunumpy.exceptions import (
    CudaSignatureError,
    CudaUnavailableError,
    InvalidArgumentError,
    KernelArgumentOverflowError,
    KernelArgumentTypeError,
    KernelArgumentValueError,
    LaunchShapeError,
    LaunchShapeTypeError,
)
from cunumpy.kernels import CudaKernel


class InterfaceArray:
    """A device array seen only through `__cuda_array_interface__` (the protocol PyTorch and
    Numba implement); its pointer is never dereferenced because nothing launches here."""

    def __init__(self, shape, typestr="<f8", strides=None):
        self.__cuda_array_interface__ = {
            "shape": tuple(shape),
            "typestr": typestr,
            "data": (0x7F0000000000, False),
            "strides": strides,
            "version": 3,
        }


AXPY = """
// y += a * x
extern "C" __global__ void axpy(double a, const double* __restrict__ x, double* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] += a * x[i];
}
"""


@pytest.fixture
def axpy():
    return CudaKernel(AXPY, "axpy")


def test_signature_is_parsed(axpy):
    names = [p.name for p in axpy.signature]
    assert names == ["a", "x", "y", "n"]
    assert axpy.signature[1].dtype == np.float64 and axpy.signature[1].pointer
    assert repr(axpy) == "CudaKernel(name='axpy', block_size=128)"
    assert axpy.expression == "axpy"


def test_good_arguments_pass_the_checks(axpy):
    x, y = InterfaceArray((8,)), InterfaceArray((8,))
    axpy.check_args(2.0, x, y, 8)
    axpy.check_args(np.float64(2.0), x, y, np.int32(8))
    axpy.check_args(2, x, y, True)  # an exact int into double; a bool into int


@pytest.mark.parametrize(
    ("args", "error", "message"),
    [
        (
            (2.0, np.ones(8), "y", 8),
            KernelArgumentTypeError,
            r"axpy\(\): argument 1 \(const double\* x\) must be a CuPy array, got "
            r"numpy.ndarray; arrays are never copied",
        ),
        (
            (2.0, InterfaceArray((8,), "<f4"), "y", 8),
            KernelArgumentTypeError,
            "must have dtype float64, got float32",
        ),
        (
            (2.0, InterfaceArray((4, 4), strides=(64, 8)), "y", 8),
            KernelArgumentTypeError,
            "must be C-contiguous",
        ),
        ((2.0, "x", "y", 2**31), KernelArgumentOverflowError, r"out of range \[-2147483648"),
        ((2.0, "x", "y", 8.0), KernelArgumentTypeError, "cannot take float 8.0 without losing"),
        ((2**60 + 1, "x", "y", 8), KernelArgumentValueError, "cannot be represented exactly"),
        ((np.float32(2.0), "x", "y", np.float64(8)), KernelArgumentTypeError, "float64 scalar"),
        ((True, "x", "y", 8), KernelArgumentTypeError, "cannot take a value of type bool"),
        ((2.0, "x", "y"), KernelArgumentTypeError, r"missing 1 argument: argument 3 \(int n\)"),
        (
            (2.0, "x", "y", b"8"),
            KernelArgumentTypeError,
            "takes a scalar, got a value of type bytes",
        ),
    ],
)
def test_bad_arguments_fail_with_a_clear_error(axpy, args, error, message):
    args = tuple(InterfaceArray((8,)) if isinstance(a, str) and a in "xy" else a for a in args)
    with pytest.raises(error, match=message):
        axpy.check_args(*args)
    with pytest.raises(error, match=message):  # a launch checks first, then needs a GPU
        axpy(*args, n_threads=8)


def test_argument_objects_are_flattened(axpy):
    class Pair:
        def __init__(self, x, y):
            self.x, self.y = x, y

        def __cuda_args__(self):
            return (self.x, self.y)

    axpy.check_args(1.0, Pair(InterfaceArray((4,)), InterfaceArray((4,))), 4)


def test_launch_without_a_gpu_raises_cuda_unavailable(axpy):
    if xp.cupy_available():
        pytest.skip("this machine has a GPU")
    x = InterfaceArray((8,))
    with pytest.raises(CudaUnavailableError, match="cannot use CUDA for kernel 'axpy'"):
        axpy(2.0, x, x, 8)
    axpy(2.0, InterfaceArray((0,)), InterfaceArray((0,)), 0)  # an empty grid launches nothing


@pytest.mark.parametrize(
    ("value", "error", "message"),
    [
        (8, InvalidArgumentError, "from 16 to 255, got 8"),
        (256, InvalidArgumentError, "from 16 to 255, got 256"),
        (True, KernelArgumentTypeError, "must be an int or None, got True"),
        (96.0, KernelArgumentTypeError, r"got 96.0 \(float\)"),
        ("128", KernelArgumentTypeError, "got '128' \\(str\\)"),
    ],
)
def test_max_registers_is_checked_before_anything_compiles(value, error, message):
    with pytest.raises(error, match=r"CudaKernel 'axpy': max_registers " + "must"):
        CudaKernel(AXPY, "axpy", max_registers=value)
    with pytest.raises(error, match=message):
        CudaKernel(AXPY, "axpy", max_registers=value)
    assert CudaKernel(AXPY, "axpy", max_registers=np.int32(64)).max_registers == 64
    assert CudaKernel(AXPY, "axpy").max_registers is None


@pytest.mark.parametrize("device", [-1, True, 0.0, "0", [0]])
def test_compile_for_a_device_is_checked_before_anything_compiles(device):
    with pytest.raises(InvalidArgumentError, match=r"CudaKernel 'axpy': compile's device: "):
        CudaKernel(AXPY, "axpy").compile(device=device)


def test_compile_for_a_device_on_the_emulated_device(emulated):
    # the ordinal names a CUDA device; under emulation the kernel builds for the emulator
    kernel = CudaKernel(AXPY, "axpy").compile(device=np.int64(0))
    assert kernel.is_compiled
    import cupy

    x = cupy.arange(4.0)
    y = cupy.ones(4)
    kernel(2.0, x, y, 4, n_threads=4)
    np.testing.assert_array_equal(cupy.asnumpy(y), 1.0 + 2.0 * np.arange(4.0))


def test_attributes_on_the_emulated_device_are_none(axpy, emulated):
    # an emulated kernel is C++ on the CPU: it has no registers or PTX version to report
    assert axpy.attributes is None


def test_launch_shape_errors(axpy):
    x = InterfaceArray((8,))
    with pytest.raises(LaunchShapeTypeError, match="exactly one of n_threads and grid"):
        axpy(2.0, x, x, 8, n_threads=8, grid=1)
    with pytest.raises(LaunchShapeError, match="at most 1024 threads"):
        axpy(2.0, x, x, 8, block=(64, 32))
    with pytest.raises(LaunchShapeError, match="must be non-negative"):
        axpy(2.0, x, x, 8, n_threads=-1)
    axpy.n_threads_from = None
    with pytest.raises(LaunchShapeTypeError, match="exactly one of n_threads and grid"):
        axpy(2.0, x, x, 8)
    with pytest.raises(LaunchShapeTypeError, match="n_threads_from must be"):
        axpy.n_threads_from = "everything"


def test_signature_errors_name_kernel_and_parameter():
    with pytest.raises(CudaSignatureError, match="no __global__ function 'nope'"):
        CudaKernel(AXPY, "nope")
    with pytest.raises(CudaSignatureError, match=r"'double& a'.*of 'r'.*references"):
        CudaKernel("__global__ void r(double& a) {}", "r")
    with pytest.raises(CudaSignatureError, match="float2"):
        CudaKernel("__global__ void v(float2* a) {}", "v")
    with pytest.raises(CudaSignatureError, match="pass them as template_args"):
        CudaKernel("template <typename T> __global__ void t(T* a) {}", "t")
    unchecked = CudaKernel("__global__ void r(double& a) {}", "r", check_signature=False)
    assert unchecked.signature is None


def test_source_tools():
    source = "/* __global__ void hidden() */ __global__ void a(int* x) {}\n" + AXPY
    assert xp.cuda.cuda_kernel_names(source) == ["a", "axpy"]
    assert xp.cuda.ctype_of(np.float32) == "float"
    assert xp.cuda.ctype_of("complex128") == "complex<double>"
    with pytest.raises(ValueError, match="no C type"):
        xp.cuda.ctype_of("U3")
    params = xp.cuda.parse_cuda_signature(
        "template <typename T, int N> __global__ void __launch_bounds__(N) f(T* x, T a) {}",
        "f",
        template_args=(np.float32, 64),
    )
    assert [(p.name, p.dtype) for p in params] == [("x", np.float32), ("a", np.float32)]


def test_from_file_and_all_from_file(tmp_path):
    path = tmp_path / "axpy_cuda.cu"
    path.write_text(AXPY + '\nextern "C" __global__ void other(int* x) {}\n')
    kernel = CudaKernel.from_file(path)
    assert kernel.name == "axpy" and str(tmp_path) in kernel.include_dirs
    assert list(CudaKernel.all_from_file(path)) == ["axpy", "other"]
    with pytest.raises(ValueError, match="pass the kernel name"):
        CudaKernel.from_file(tmp_path / "plain.cu")
