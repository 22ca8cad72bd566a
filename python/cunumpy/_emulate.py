"""The CPU emulator of CUDA kernels, as the kernel layer and ``cunumpy.kernel_testing`` use it:
``emulate_cuda_kernel`` (NumPy arrays presented as device memory), ``compile_for_emulation``,
and the state of ``kernel_testing.emulated_launches()`` blocks, which ``CudaKernel`` reads.

The kernel source is compiled as host C++ with a prelude that provides the CUDA built-ins
(threads as fibers at barriers and warp intrinsics, shuffles, votes, atomics, shared memory, the
math library); arguments go through the same checks and the same packed argument buffer as a
GPU launch (the work is done in Rust, ``emulate.rs``).
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from . import _core
from ._struct_value import CudaStructRecord, CudaStructValue
from .exceptions import InvalidArgumentTypeError

__all__ = ["compile_for_emulation", "emulate_cuda_kernel", "emulation_options"]

# The open emulated_launches() blocks (their options), process-wide like the setting itself.
_lock = threading.Lock()
_open_blocks: list[tuple[str, ...]] = []


def open_emulation_block(options: tuple[str, ...]) -> None:
    """Records an open ``emulated_launches(options=...)`` block; launches are emulated."""
    with _lock:
        _open_blocks.append(options)
        _core._set_emulated_launches(True)


def close_emulation_block(options: tuple[str, ...]) -> None:
    """Forgets the most recent open block with these options (blocks of several threads may
    close in any order); launches run normally again when none is left."""
    with _lock:
        del _open_blocks[len(_open_blocks) - 1 - _open_blocks[::-1].index(options)]
        _core._set_emulated_launches(bool(_open_blocks))


def emulation_options() -> tuple[str, ...] | None:
    """The extra compiler options of the innermost open :func:`emulated_launches` block, or
    ``None`` outside of one (read by launches of ``CudaKernel``)."""
    with _lock:
        return _open_blocks[-1] if _open_blocks else None


class _HostArrayAsDevice:
    """A NumPy array presented through ``__cuda_array_interface__``: the emulator's device
    memory is host memory, so the kernel reads and writes the array itself."""

    __slots__ = ("array", "__cuda_array_interface__")

    def __init__(self, array: np.ndarray) -> None:
        self.array = array
        iface = array.__array_interface__
        self.__cuda_array_interface__ = {
            "shape": array.shape,
            "typestr": array.dtype.str,
            "data": (int(iface["data"][0]), False),
            "strides": None if array.flags.c_contiguous else array.strides,
            "version": 3,
        }

    @property
    def shape(self) -> tuple[int, ...]:
        return self.array.shape

    @property
    def dtype(self) -> np.dtype:
        return self.array.dtype

    # what code sizing a launch reads from an array (n_threads_from callables, for example)
    @property
    def size(self) -> int:
        return self.array.size

    @property
    def ndim(self) -> int:
        return self.array.ndim

    @property
    def nbytes(self) -> int:
        return self.array.nbytes

    @property
    def itemsize(self) -> int:
        return self.array.itemsize

    @property
    def strides(self) -> tuple[int, ...]:
        return self.array.strides

    def __len__(self) -> int:
        return len(self.array)


def _is_fake(a: Any) -> bool:
    """Whether ``a`` is a fake-CuPy array (an array argument, never expanded)."""
    cupy = sys.modules.get("cupy")
    return bool(getattr(cupy, "__cunumpy_fake__", False)) and isinstance(a, cupy.ndarray)


def _expand(args: tuple[Any, ...]) -> list[Any]:
    """Argument objects (``__cuda_args__``) expanded, as the launch does, so the NumPy arrays
    inside them can be presented too. A ``CudaStructArguments`` stays itself (one struct
    argument): its fields may hold NumPy arrays, which only :func:`_struct_values` can pack.
    A struct argument is any object whose type has ``__cuda_struct__``."""
    out: list[Any] = []
    for a in args:
        method = getattr(type(a), "__cuda_args__", None)
        if hasattr(type(a), "__cuda_struct__"):
            out.append(a)
        elif method is not None and not isinstance(a, np.ndarray | int | float) and not _is_fake(a):
            out.extend(method(a))
        else:
            out.append(a)
    return out


def _present(value: Any) -> Any:
    """A NumPy array as device memory for the emulator (a read-only one as a private copy, so
    a kernel writing it cannot corrupt the original); anything else as it is."""
    if isinstance(value, np.ndarray) and value.ndim > 0:
        return _HostArrayAsDevice(value if value.flags.writeable else value.copy())
    return value


def _struct_values(kernel: Any, args: list[Any]) -> list[Any]:
    """The struct parameters' arguments packed with NumPy arrays presented as device memory.

    As in cunumpy 0.7's emulator, a struct argument may be a ``CudaStructArguments`` whose
    fields hold NumPy arrays, a mapping of field values, or any object with one attribute per
    field; a packed ``CudaStructValue`` passes as it is. Other positions are left alone (the
    launch checks them)."""
    from .exceptions import KernelArgumentTypeError

    signature = getattr(kernel, "signature", None)
    if not signature or len(signature) != len(args):
        return args
    structs = {s.name: s for s in getattr(kernel, "structs", ()) if hasattr(s, "field_names")}
    out = list(args)
    for i, (param, a) in enumerate(zip(signature, args, strict=True)):
        struct = getattr(param, "struct", None)
        struct = structs.get(struct) if isinstance(struct, str) else struct
        if not hasattr(struct, "field_names") or isinstance(a, CudaStructValue | CudaStructRecord):
            continue
        if isinstance(a, np.ndarray | np.generic | int | float | complex | str | bytes):
            continue  # not a struct at all: the launch's check names the problem
        values = {}
        for name in struct.field_names:
            if isinstance(a, Mapping):
                missing = name not in a
                value = a.get(name)
            else:
                missing = not hasattr(a, name)
                value = getattr(a, name, None)
            if missing:
                raise KernelArgumentTypeError(
                    f"kernel {kernel.name!r}: struct argument {i} ({struct.name} {param.name}) "
                    f"has no value for the field {name!r}; expected a mapping or an object "
                    f"with the fields {list(struct.field_names)}, given {type(a).__name__}"
                )
            values[name] = _present(value)
        out[i] = struct(**values)
    return out


def emulate_cuda_kernel(
    kernel: Any,
    *args: Any,
    n_threads: Any = None,
    grid: Any = None,
    block: Any = None,
    compiler: str | os.PathLike[str] | None = None,
    options: Sequence[str] = (),
    shared_mem: int = 0,
    shuffle_seed: int | None = None,
    bounds: bool = True,
    detect_races: bool = True,
) -> None:
    """Runs ``kernel`` (a :class:`~cunumpy.kernels.CudaKernel`) on the CPU with NumPy arrays.

    The launch shape, the argument checks and the packed argument buffer are those of a GPU
    launch, so an argument a GPU launch refuses is refused here (a non-C-contiguous array for
    a pointer parameter, a wrong dtype, an out-of-range scalar). NumPy arrays stand for device
    arrays and are written in place. A read-only array is passed as a private copy, so a
    kernel that writes it cannot corrupt the original (its writes are dropped). Fake-CuPy
    arrays are accepted too.

    ``shuffle_seed`` runs the threads of each block in a seeded random order, switching at
    barriers, warp intrinsics and accesses through pointer parameters, so a kernel with a race
    gives seed-dependent results. ``bounds`` (on by default) checks every access through a
    pointer parameter against the array's extent. ``detect_races`` (on by default, with
    ``bounds``) reports two threads writing one element of an array argument with no
    ``__syncthreads()`` or warp operation between them, as an unsynchronised ``h[c] += w``
    does: :class:`~cunumpy.exceptions.EmulatedRaceError` names the kernel, the array, the index
    and both threads (atomics are not writes here). Faults raise
    :class:`~cunumpy.exceptions.EmulatedKernelFault` (an out-of-bounds access:
    :class:`~cunumpy.exceptions.EmulatedOutOfBoundsError`); the process survives.

    ``options`` are extra host-compiler options for this kernel (``-D``, ``-U``, ``-I``,
    ``-O``, ``-f``: for example ``-ffp-contract=off`` for NumPy-exact floating point);
    ``compiler`` is the host C++ compiler to use instead of ``$CXX``. An ``n_threads_from``
    callable receives the arguments as given (NumPy arrays).
    """
    _require_kernel(kernel)
    if n_threads is None and grid is None and callable(getattr(kernel, "n_threads_from", None)):
        n_threads = kernel.n_threads_from(args)
    with _host_compiler(compiler):
        _launch(
            _with_options(kernel, options),
            args,
            n_threads,
            grid,
            block,
            shared_mem,
            shuffle_seed,
            bounds,
            detect_races,
        )


def _launch(
    kernel: Any,
    args: tuple[Any, ...],
    n_threads: Any,
    grid: Any,
    block: Any,
    shared_mem: int,
    shuffle_seed: int | None,
    bounds: bool,
    detect_races: bool = True,
) -> None:
    presented: list[Any] = []
    cupy = sys.modules.get("cupy")
    for i, a in enumerate(_struct_values(kernel, _expand(args))):
        if cupy is not None and isinstance(a, cupy.ndarray) and not _is_fake(a):
            from .exceptions import KernelArgumentTypeError

            raise KernelArgumentTypeError(
                f"kernel {kernel.name!r}: argument {i} is a GPU array; the CPU emulator "
                "(emulate_cuda_kernel, emulated_launches) runs on NumPy or emulated-device "
                "arrays; pass xp.to_numpy(a) and copy the result back, or launch outside the "
                "emulated block"
            )
        presented.append(_present(a))
    _core._emulate_launch(
        kernel,
        *presented,
        n_threads=n_threads,
        grid=grid,
        block=block,
        shared_mem=shared_mem,
        shuffle_seed=shuffle_seed,
        bounds=bounds,
        detect_races=detect_races,
    )


@contextlib.contextmanager
def _host_compiler(compiler: str | os.PathLike[str] | None) -> Iterator[None]:
    """``$CXX`` set to ``compiler`` for the block (the emulator reads it per build)."""
    if compiler is None:
        yield
        return
    previous = os.environ.get("CXX")
    os.environ["CXX"] = os.fspath(compiler)
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop("CXX", None)
        else:
            os.environ["CXX"] = previous


def _with_options(kernel: Any, options: Sequence[str]) -> Any:
    """``kernel`` itself, or (cached on it) the same kernel with extra compile options."""
    extra = tuple(str(o) for o in options)
    if not extra:
        return kernel
    variants = kernel.__dict__.setdefault("_cunumpy_emulation_variants", {})
    variant = variants.get(extra)
    if variant is None:
        variant = variants[extra] = type(kernel)(
            kernel.source,
            kernel.name,
            block_size=kernel.block_size,
            options=(*kernel._given_options, *extra),
            include_dirs=kernel.include_dirs,
            source_dir=kernel.source_dir,
            structs=kernel.structs,
            template_args=kernel.template_args,
            check_signature=kernel.signature is not None,
            debug=kernel.debug,
            n_threads_from=kernel.n_threads_from,
            check_finite=kernel.check_finite,
        )
    return variant


def compile_for_emulation(
    kernel: Any, *, compiler: str | os.PathLike[str] | None = None, options: Sequence[str] = ()
) -> dict[str, Any]:
    """Compiles ``kernel`` for the emulator now (or finds it in the disk cache) and returns
    what was built: ``kernel`` (the expression), ``library``, ``from_cache`` (found in the disk
    cache, possibly written by another process), ``uses_fibers``, ``param_count``,
    ``param_names``, ``cache_dir`` and ``checked_build`` (the bounds-checked build that launches
    run was built too; False when it does not compile and launches run the plain one). A
    launch after it builds nothing. ``compiler`` and ``options`` as for
    :func:`emulate_cuda_kernel`."""
    _require_kernel(kernel)
    with _host_compiler(compiler):
        info = dict(_core._compile_for_emulation(_with_options(kernel, options)))
    for key in ("library", "cache_dir"):
        if info.get(key) is not None:
            info[key] = str(info[key])
    return info


def _require_kernel(kernel: Any) -> None:
    if not isinstance(kernel, _core.KernelLauncher):
        raise InvalidArgumentTypeError(
            f"expected a cunumpy.kernels.CudaKernel, got {type(kernel).__name__}"
        )
