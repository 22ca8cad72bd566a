"""Exception classes of cunumpy.

They are defined in Python so that each can also inherit the built-in exception a user
would expect to catch (``TypeError``, ``ValueError``, ``RuntimeError``).
"""

from __future__ import annotations

from numpy.exceptions import AxisError as _AxisError

__all__ = [
    "CunumpyError",
    "InvalidArgumentError",
    "InvalidArgumentTypeError",
    "InvalidArgumentKeyError",
    "InvalidStateError",
    "InternalError",
    "HostMemoryError",
    "MetalUnavailableError",
    "NonFiniteOutputError",
    "KernelPackageError",
    "KernelParityError",
    "BackendError",
    "BackendUnavailableError",
    "MixedBackendError",
    "CupyUnavailableError",
    "CudaSignatureError",
    "CudaSourceEncodingError",
    "KernelArgumentTypeError",
    "KernelArgumentValueError",
    "KernelArgumentOverflowError",
    "CudaConstantError",
    "CudaConstantNotFoundError",
    "CudaConstantTypeError",
    "CudaConstantSizeError",
    "LaunchShapeError",
    "LaunchShapeTypeError",
    "CudaCompileError",
    "CudaRuntimeError",
    "CudaUnavailableError",
    "FusionError",
    "FusionTypeError",
    "FusionIndexError",
    "FusionValueError",
    "FusionUnsupportedError",
    "FusionAxisError",
    "FusionOverflowError",
    "CudaStructError",
    "CudaStructTypeError",
    "DeviceMirrorError",
    "KernelOutputsError",
    "KernelOutputIndexError",
    "KernelOutputKeyError",
    "MissingCudaKernelError",
    "KernelImplementationError",
    "KernelSignatureMismatchError",
    "KernelFolderError",
    "DuplicateKernelError",
    "PyccelCompileError",
    "EmulationError",
    "EmulationUnavailableError",
    "EmulationCompileError",
    "EmulatedKernelFault",
    "EmulatedOutOfBoundsError",
    "EmulatedRaceError",
    "CunumpyVersionError",
    "RemovedNameError",
    "DeviceSelectionError",
    "SharedDeviceWarning",
    "LaunchSizeWarning",
    "CacheFallbackWarning",
    "MPIBufferError",
    "MPIStagingError",
    "MPIStagingBusyError",
    "ScipyUnavailableError",
    "AlgorithmValueError",
    "AlgorithmTypeError",
    "StagingError",
    "StagingTypeError",
    "TransferBudgetExceeded",
    "TransferRuleError",
    "PetscUnavailableError",
    "RandomStreamsError",
    "CudaPortError",
    "CudaPortUnsupportedError",
    "CudaPortRaceError",
    "CudaPortInputError",
    "GraphError",
    "GraphCaptureError",
    "GraphRecaptureError",
]


#: Messages longer than this many characters are shortened in ``str(error)``; the whole text
#: stays in the exception's ``full_message`` attribute.
MESSAGE_LIMIT = 2000


def _shorten(text: str, limit: int = MESSAGE_LIMIT) -> str:
    """The first and last parts of ``text`` with a marker saying how much was cut."""
    head = limit * 3 // 4
    tail = limit - head
    cut = len(text) - head - tail
    return (
        f"{text[:head]}\n... [{cut} characters cut; the whole message is in the exception's "
        f"full_message attribute] ...\n{text[-tail:]}"
    )


class CunumpyError(Exception):
    """Base class of every error raised by cunumpy itself.

    ``full_message`` is the whole message; ``str(error)`` shows at most about
    :data:`MESSAGE_LIMIT` characters of it (the start and the end), so that an error about a
    deeply nested template stays readable.
    """

    full_message: str

    def __init__(self, *args: object, **kwargs: object) -> None:
        message = args[0] if len(args) == 1 else None
        if isinstance(message, str) and len(message) > MESSAGE_LIMIT:
            self.full_message = message
            args = (_shorten(message),)
        else:
            self.full_message = str(message) if message is not None else " ".join(map(str, args))
        super().__init__(*args, **kwargs)

    def __reduce__(self) -> tuple[object, ...]:  # pickles with the whole message
        return (type(self), (self.full_message,), dict(self.__dict__))


class InvalidArgumentError(CunumpyError, ValueError):
    """A cunumpy function or constructor got a value it does not accept (an unknown option, a
    negative count); the message names the function, the parameter and the value."""


class InvalidArgumentTypeError(CunumpyError, TypeError):
    """A cunumpy function or constructor got an argument of the wrong type; the message names
    the function, the parameter, what it takes and what it got."""


class InvalidArgumentKeyError(CunumpyError, KeyError):
    """A name looked up in a cunumpy object is not there (a kernel that was not profiled)."""

    def __str__(self) -> str:  # KeyError would show the message quoted
        return str(self.args[0]) if self.args else ""


class InvalidStateError(CunumpyError, RuntimeError):
    """A call that needs a state the process is not in (the CuPy backend, the fake CuPy, a
    PETSc built with CUDA); the message says what to set up first."""


class InternalError(CunumpyError, RuntimeError):
    """A bug in cunumpy (a state that should be impossible); please report it with the
    message."""


class HostMemoryError(CunumpyError, MemoryError):
    """The host memory pool (pinned staging buffers, pooled host arrays) could not allocate."""


class NonFiniteOutputError(CunumpyError, FloatingPointError):
    """A kernel with ``check_finite=True`` left a NaN or an infinity in an output; the message
    names the kernel and the argument."""


class KernelPackageError(CunumpyError, ModuleNotFoundError):
    """A kernel package (``KernelCatalog.from_package``, ``Kernel.from_folder``) is a module,
    not a package of kernel folders."""


class KernelParityError(CunumpyError, AssertionError):
    """``kernel_testing.assert_kernels_agree`` found host and CUDA calls that cannot be compared
    (different array arguments)."""


class MetalUnavailableError(CunumpyError, ImportError):
    """A ``MetalKernel`` call needs MLX, which is not installed (on an Apple silicon Mac:
    ``pip install 'cunumpy[metal]'``; elsewhere ``CUNUMPY_FAKE_METAL=1`` for the emulated
    Metal device)."""


class BackendError(CunumpyError, ValueError):
    """An unknown or malformed backend name."""


class BackendUnavailableError(CunumpyError, RuntimeError):
    """The CuPy backend was required (``strict=True``) but cannot work on this machine."""


class MixedBackendError(CunumpyError, TypeError):
    """Arrays that live on different backends were passed where one backend is required."""


class CupyUnavailableError(CunumpyError, ImportError):
    """CuPy was needed (for example by ``to_cupy``) but is not installed or sees no GPU."""


class CudaSignatureError(CunumpyError, ValueError):
    """A CUDA kernel's signature cannot be checked (unknown type, reference, no such kernel...)."""


class CudaSourceEncodingError(CunumpyError, UnicodeError):
    """A CUDA source file is not UTF-8 text; the message names the file and the byte."""


class KernelArgumentTypeError(CunumpyError, TypeError):
    """A kernel argument has the wrong kind, dtype, layout or count."""


class KernelArgumentValueError(CunumpyError, ValueError):
    """A kernel argument's value cannot be passed exactly (or lives on another device)."""


class KernelArgumentOverflowError(CunumpyError, OverflowError):
    """A scalar kernel argument is out of the range of its C type."""


class CudaConstantError(CunumpyError):
    """A value for a kernel's ``__constant__`` variable (``CudaKernel.set_constant`` /
    ``get_constant``) was refused; the message names the kernel and the variable."""


class CudaConstantNotFoundError(CudaConstantError, KeyError):
    """The name is not a ``__constant__`` variable declared at global scope in the kernel's
    source (the message lists those it declares), or the compiled module lacks it."""

    def __str__(self) -> str:  # a KeyError would show its message quoted
        return str(self.args[0]) if self.args else ""


class CudaConstantTypeError(CudaConstantError, TypeError):
    """The value is not a NumPy scalar or array of the variable's declared C type (nothing is
    cast), or the variable cannot be set (a struct type, or declared ``const``)."""


class CudaConstantSizeError(CudaConstantError, ValueError):
    """The value has not exactly as many elements as the ``__constant__`` variable (nothing is
    truncated or padded)."""


class LaunchShapeError(CunumpyError, ValueError):
    """A launch shape (grid, block, shared memory) is invalid or exceeds a device limit."""


class LaunchShapeTypeError(CunumpyError, TypeError):
    """The launch shape is missing or ambiguous (give exactly one of n_threads and grid)."""


class CudaCompileError(CunumpyError, RuntimeError):
    """NVRTC rejected a kernel. Attributes: ``kernel``, ``log``, ``options``, ``source``
    (numbered lines)."""

    kernel: str
    log: str
    options: list[str]
    source: str


class CudaRuntimeError(CunumpyError, RuntimeError):
    """A CUDA driver call, a launch, or the kernel itself failed."""


class CudaUnavailableError(CunumpyError, RuntimeError):
    """The CUDA driver or NVRTC cannot be loaded on this machine."""


class FusionError(CunumpyError):
    """Base class of the errors of ``cunumpy.kernels.fuse``."""


class FusionTypeError(FusionError, TypeError):
    """A fused function combines dtypes NumPy 2 does not allow, or was called with arguments
    of the wrong kind, dtype or layout."""


class FusionValueError(FusionError, ValueError):
    """A fused function's axes or shapes do not fit (an out-of-range axis, shapes that do not
    broadcast, an ``out=`` array of the wrong shape)."""


class FusionIndexError(FusionError, IndexError):
    """An index in a fused function is out of range: an integer or a slice step at plan time,
    a gathered index (``a[idx]``) when the plan runs (NumPy's ``IndexError``)."""


class FusionUnsupportedError(FusionError, TypeError):
    """A fused function uses an operation the fusion compiler does not support; the message
    names the operation and the line of the user's function."""


class FusionAxisError(FusionValueError, _AxisError):
    """A reduction's ``axis`` is out of range for its argument (also NumPy's ``AxisError``, so
    ``except np.exceptions.AxisError`` catches it as it catches NumPy's own)."""

    def __init__(self, message: str) -> None:
        # AxisError's own constructor takes (axis, ndim, prefix); keep the message as given
        ValueError.__init__(self, message)
        self._message = message
        self.full_message = message

    def __str__(self) -> str:
        return self._message


class FusionOverflowError(FusionError, OverflowError):
    """A Python integer given to a fused function does not fit the dtype it is used with, as
    NumPy 2 raises for ``int8_array + 300``."""


class EmulationError(CunumpyError, RuntimeError):
    """The CPU emulator of CUDA kernels failed (loading or caching a library)."""


class EmulationUnavailableError(EmulationError):
    """No host C++ compiler was found for emulating CUDA kernels (set ``CXX``)."""


class EmulationCompileError(EmulationError, CudaCompileError):
    """A kernel does not compile as host C++ for emulation. Attributes: ``kernel``, ``log``
    (the compiler's diagnostics), ``command``, ``options`` (the kernel's). Also a
    :class:`CudaCompileError`, as the same kernel's NVRTC error is on a GPU."""

    kernel: str
    log: str
    command: str
    options: list[str]


class EmulatedKernelFault(EmulationError, CudaRuntimeError):
    """An emulated kernel faulted (``__trap``, a failed ``assert``, a deadlock at a barrier, a
    misused warp intrinsic); the launch was abandoned and the process is fine. Attributes:
    ``kernel``, ``fault`` (``"trap"``, ``"assert"``, ``"deadlock"``, ``"invalid_warp_op"``,
    ``"out_of_bounds"``, ``"race"``, ``"other"``). Also a :class:`CudaRuntimeError`, as on a GPU."""

    kernel: str
    fault: str


class EmulatedOutOfBoundsError(EmulatedKernelFault, IndexError):
    """An emulated kernel accessed a pointer argument outside its array, or through NULL or a
    pointer into no array of the launch; the message names the kernel, the parameter (when
    there is one), the element index or address, and the thread."""


class EmulatedRaceError(EmulatedKernelFault):
    """Race detection (``detect_races=True``, on whenever threads run in a shuffled order)
    found two threads writing one element of a pointer argument with no ``__syncthreads()``
    or warp operation between them, as an unsynchronised ``hist[c] += w`` does; the message
    names the kernel, the array, the index and both threads. ``fault`` is ``"race"``."""


# -- the porting layer (Kernel, KernelCatalog, PyccelKernel, host implementations) ------------
class KernelOutputsError(CunumpyError, TypeError):
    """A ``PyccelKernel``'s ``outputs=`` declaration is malformed."""


class KernelOutputIndexError(CunumpyError, IndexError):
    """A declared output index names no argument of this call."""


class KernelOutputKeyError(CunumpyError, KeyError):
    """A declared output name names no argument of this call."""

    def __str__(self) -> str:  # KeyError would show the message quoted
        return str(self.args[0]) if self.args else ""


class MissingCudaKernelError(CunumpyError, NotImplementedError):
    """A ``Kernel`` without a CUDA version was called on the device (``missing_cuda="raise"``)."""


class KernelImplementationError(CunumpyError, LookupError):
    """The explicitly selected kernel implementation does not exist or failed to load."""


class KernelSignatureMismatchError(CunumpyError, ValueError):
    """The host and CUDA versions of a kernel take different parameters."""


class KernelFolderError(CunumpyError, FileNotFoundError):
    """A kernel folder lacks its host module."""


class DuplicateKernelError(CunumpyError, KeyError):
    """A kernel name is registered twice in a ``KernelCatalog``."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class PyccelCompileError(CunumpyError, RuntimeError):
    """Pyccel could not compile a host kernel module (the message holds its output)."""


class CudaStructError(CunumpyError, ValueError):
    """A ``CudaStruct`` cannot be laid out (bad name, unsupported or unknown field type,
    duplicate fields), or its layout differs from the compiler's."""


class CudaStructTypeError(CudaStructError, TypeError):
    """Something that is not a struct type was given where one is needed (``structs=``)."""


class DeviceMirrorError(CunumpyError, ValueError):
    """A ``DeviceMirror`` was used after its host array was reallocated (call ``rebind``)."""


class CunumpyVersionError(CunumpyError, ImportError):
    """The installed cunumpy is older than a program requires (``xp.require_version``)."""


class RemovedNameError(CunumpyError, AttributeError):
    """A name cunumpy had and removed on purpose; the message says what replaces it."""


class DeviceSelectionError(CunumpyError, ValueError):
    """A rank or device count that cannot pick a device (``xp.cuda.set_device_for_rank``)."""


class SharedDeviceWarning(UserWarning):
    """More ranks than devices on a node: several ranks share one GPU (allowed, reported)."""


class LaunchSizeWarning(UserWarning):
    """A launch without ``n_threads`` took its size from the first array argument while other
    array arguments have other sizes (shown once per kernel; pass ``n_threads=`` to choose)."""


class CacheFallbackWarning(UserWarning):
    """The emulation cache folder cannot be used (a file, read-only, a damaged entry): this
    process uses a temporary folder instead. Shown once per folder; the message names the
    folder and ``CUNUMPY_EMULATION_CACHE``, which moves the cache."""


class MPIBufferError(CunumpyError, RuntimeError):
    """A device buffer cannot be handed to MPI as asked: MPI's CUDA-awareness is unknown, or
    MPI is not CUDA-aware and nothing stages the buffer through the host."""


class MPIStagingError(CunumpyError, ValueError):
    """An ``xp.mpi.MPIStaging`` buffer used with an array of another shape, dtype or device."""


class MPIStagingBusyError(CunumpyError, RuntimeError):
    """An ``xp.mpi.MPIStaging`` buffer used by two ``mpi_buffer`` blocks at once."""


class ScipyUnavailableError(CunumpyError, ImportError):
    """``xp.scipy`` (or ``xp.optimize``/``xp.integrate``) needs SciPy on the NumPy backend, or
    ``cupyx.scipy`` on the CuPy backend, and it cannot be imported."""


class AlgorithmValueError(CunumpyError, ValueError):
    """An ``xp.algorithms`` function got an array of the wrong shape or values out of range
    (unsorted keys, a key past ``n_segments``, a level count outside the Morton range)."""


class AlgorithmTypeError(CunumpyError, TypeError):
    """An ``xp.algorithms`` function got an array of the wrong dtype (float keys, a non-bool
    mask)."""


class StagingError(CunumpyError, RuntimeError):
    """A staged copy was read after its buffer was reused, or streams and events were mixed
    wrongly (``to_host(stream=..., event=...)``)."""


class StagingTypeError(CunumpyError, TypeError):
    """A host stream or event (``HostStream``/``HostEvent``) was given where CuPy's is needed,
    or an array of a dtype staging cannot hold."""


class TransferBudgetExceeded(CunumpyError, AssertionError):
    """``TransferBudget.check()`` found transfers that break a phase's rules, or
    ``assert_no_transfers`` found a transfer in its block."""


class TransferRuleError(CunumpyError, ValueError):
    """``TransferBudget.require`` got an unknown event kind or limit."""


class RandomStreamsError(CunumpyError, ValueError):
    """``xp.rng.random_streams`` was given an unknown bit generator or backend."""


class PetscUnavailableError(CunumpyError, ImportError):
    """``xp.petsc.petsc_vec`` needs petsc4py, which is not installed."""


class CudaPortError(CunumpyError, ValueError):
    """``xp.kernels.generate_cuda`` did not translate a host kernel. ``function``, ``line``,
    ``construct`` and ``array`` (or ``None``) say where and what."""

    function: str
    line: int
    construct: str
    array: str | None


class CudaPortUnsupportedError(CudaPortError):
    """The host kernel uses a construct the translator does not handle (yet)."""


class CudaPortRaceError(CudaPortError):
    """The translator cannot prove the parallel loop race-free (a write not indexed by the loop
    variable and not a ``+=``/``-=``, a scalar carried between iterations, ...): it refuses
    rather than generate a kernel that might race."""


class CudaPortInputError(CudaPortError):
    """``generate_cuda`` was given something it cannot use: no such function, an argument
    without a type, a parallel-loop line that is not a top-level loop."""


class GraphError(CunumpyError):
    """Base of what :func:`cunumpy.cuda.graph` refuses."""


class GraphCaptureError(GraphError, RuntimeError):
    """A call inside a captured step that a graph cannot hold (a host kernel or fallback, a
    copy through host memory, a host synchronization, a launch on another stream), raised at
    that call, naming it and the user's line; or a step that cannot be captured at all."""


class GraphRecaptureError(GraphError, ValueError):
    """A replay's value that the captured graph cannot take (a scalar of another kind, an
    array of another dtype, shape or strides, a different number of arguments): capture the
    graph again for it. The message names the parameter, what it was and what was given."""
