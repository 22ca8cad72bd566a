"""``CudaKernel``: a CUDA C kernel whose every launch is checked against its C signature.

The checks, the packing, the NVRTC compile (with a disk cache) and the launch through the CUDA
driver run in Rust (``_core.KernelLauncher``); this class adds construction from files,
properties and the optional NaN/inf scan.
"""

from __future__ import annotations

import operator
import os
from collections.abc import Callable, Hashable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from .. import _core
from .._emulate import compile_for_emulation, emulate_cuda_kernel, emulation_options
from ..cuda._debug import get_cuda_debug
from ..cuda._source import (
    DEBUG_OPTIONS,
    CudaParameter,
    cuda_include_dir,
    cuda_kernel_names,
    parameters_of,
    resolve_includes,
    struct_name,
    template_arg_texts,
)
from ..exceptions import (
    CudaConstantTypeError,
    CudaSignatureError,
    CudaSourceEncodingError,
    CudaStructTypeError,
    InvalidArgumentError,
    InvalidArgumentTypeError,
    KernelArgumentTypeError,
    LaunchShapeTypeError,
    NonFiniteOutputError,
)
from ._vectorcall import use_vectorcall

__all__ = ["CudaKernel", "CudaKernelVariants"]


def _struct_entry(struct: Any) -> tuple[str, int]:
    """(name, byte size) of a struct type: a ``CudaStruct`` or anything with ``name`` and
    ``itemsize`` (or a NumPy structured ``dtype``)."""
    size = getattr(struct, "itemsize", None)
    if size is None and hasattr(struct, "dtype"):
        size = struct.dtype.itemsize
    if size is None:
        raise CudaStructTypeError(
            f"structs= takes CudaStruct objects (or NumPy structured dtypes), got {struct!r} "
            f"({type(struct).__name__})"
        )
    return struct_name(struct), int(size)


def read_cuda_source(path: str | os.PathLike[str]) -> str:
    """The text of a CUDA source file; a file that is not UTF-8 raises
    :class:`~cunumpy.exceptions.CudaSourceEncodingError` naming the file and the byte."""
    data = Path(path).read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise CudaSourceEncodingError(
            f"{path}: not UTF-8 text: byte 0x{data[exc.start]:02x} at offset {exc.start} "
            f"(line {line}) cannot be decoded; save the file as UTF-8"
        ) from None


def _block_tuple(block_size: Any, name: str) -> tuple[int, ...]:
    """``block_size`` as a tuple of ints; anything but an int or a sequence of ints (a string,
    floats, bools) is refused rather than iterated or truncated."""

    def one(value: Any) -> int:
        # a bool is an int to operator.index; index it as a str instead, which refuses it
        return operator.index("bool" if isinstance(value, bool | np.bool_) else value)

    try:
        if not isinstance(block_size, str | bytes):
            try:
                return (one(block_size),)
            except TypeError:
                if isinstance(block_size, Sequence | np.ndarray):
                    return tuple(one(b) for b in block_size)
    except TypeError:
        pass
    raise LaunchShapeTypeError(
        f"CudaKernel {name!r}: block_size must be an int or a sequence of 1 to 3 ints, "
        f"got {block_size!r} ({type(block_size).__name__})"
    )


def _max_registers(value: Any, name: str) -> int | None:
    """``max_registers`` checked: ``None`` or an int from 16 to 255 (what ptxas accepts)."""
    if value is None:
        return None
    if isinstance(value, bool | np.bool_) or not isinstance(value, int | np.integer):
        raise KernelArgumentTypeError(
            f"CudaKernel {name!r}: max_registers must be an int or None, "
            f"got {value!r} ({type(value).__name__})"
        )
    if not 16 <= value <= 255:
        raise InvalidArgumentError(
            f"CudaKernel {name!r}: max_registers must be from 16 to 255, got {value}"
        )
    return int(value)


@use_vectorcall
class CudaKernel(_core.KernelLauncher):
    """A CUDA C ``__global__`` function, launched with checked arguments.

    ``kernel(*args, n_threads=None, grid=None, block=None, shared_mem=0, stream=None)``
    checks every argument against the parsed signature (dtype, C-contiguity, device, scalar
    range and exactness), never copies arrays, compiles once per device with NVRTC (cached on
    disk, keyed by the source, options, included headers, NVRTC version and architecture) and
    launches on CuPy's current stream unless ``stream`` is given. ``n_threads`` defaults to
    the leading axes of the first array argument (see ``n_threads_from``).

    ``max_registers=N``: a kernel that compiles to more than N registers a thread is compiled
    again with ``--maxrregcount=N`` (so that more blocks fit an SM); one that needs N or fewer
    is left as the compiler made it (a cap given to every kernel raises those that needed
    fewer towards it; a kernel's own ``__launch_bounds__`` takes precedence over the option).
    :attr:`attributes` shows the registers it got.
    """

    def __init__(
        self,
        source: str,
        name: str,
        *,
        block_size: int | Sequence[int] = 128,
        options: Sequence[str] = (),
        include_dirs: Sequence[str | os.PathLike[str]] = (),
        source_dir: str | os.PathLike[str] | None = None,
        structs: Sequence[Any] = (),
        template_args: Any = None,
        check_signature: bool = True,
        debug: bool | None = None,
        n_threads_from: Any = "auto",
        check_finite: bool = False,
        max_registers: int | None = None,
    ) -> None:
        for what, value in (("source", source), ("name", name)):
            if not isinstance(value, str):
                raise KernelArgumentTypeError(
                    f"CudaKernel {name!r}: {what} must be a str, got {type(value).__name__}"
                    + ("; read a file with CudaKernel.from_file" if what == "source" else "")
                )
        self._name = name
        self._source = source
        self._block = _block_tuple(block_size, name)
        self._max_registers = _max_registers(max_registers, name)
        self._given_options = tuple(options)
        self._include_dirs = tuple(str(d) for d in include_dirs)
        self._source_dir = None if source_dir is None else str(source_dir)
        self._structs = tuple(structs)
        self._template_args = template_args
        self._debug = debug
        self._check_finite = bool(check_finite)
        self._signature: list[CudaParameter] | None = None
        self._check = bool(check_signature)
        self.compiled_from_cache: bool | None = None
        # NVRTC compiles a string, not a file: the source's own folder must be named for its
        # quoted includes (`#include "../particles.cuh"`), as a compiler of the file would search it
        source_dirs = [self._source_dir] if self._source_dir else []
        include_options = [f"-I{d}" for d in (*source_dirs, *self._include_dirs)]
        shipped = cuda_include_dir()
        self._options = (*self._given_options, *include_options, f"-I{shipped}")
        compile_options = list(self._options)
        if self.debug_active():
            compile_options += [o for o in DEBUG_OPTIONS if o not in compile_options]
        self._compile_options = tuple(compile_options)
        self._expression = self._configure(
            source,
            name,
            options=compile_options,
            include_dirs=[*([self._source_dir] if self._source_dir else []), *self._include_dirs],
            source_dir=self._source_dir,
            shipped_dir=shipped,
            block=list(self._block),
            structs=[_struct_entry(s) for s in self._structs],
            template_args=template_arg_texts(template_args),
            check_signature=self._check,
            max_registers=self._max_registers,
        )
        self.n_threads_from = n_threads_from
        self._set_flags(self.debug_active(), self._check_finite)
        if self._check:
            self._check_struct_definitions()

    def _check_struct_definitions(self) -> None:
        """A struct the source (or a header it includes) defines must match its
        ``CudaStruct`` (field names, order, types, offsets, size); a mismatch would make the
        kernel read the wrong bytes."""
        from ..exceptions import CudaStructError

        checks = [getattr(s, "_source_problem", None) for s in self._structs]
        checks = [c for c in checks if c is not None]
        if not checks:
            return
        texts = [("the kernel source", self._source)]
        try:
            headers = self.included_headers
        except Exception:  # an unresolvable include is the compiler's to report
            headers = ()
        for header in headers:
            try:
                texts.append((str(header), Path(header).read_text(errors="replace")))
            except OSError:
                continue
        for check in checks:
            for where, text in texts:
                problem = check(text, lenient=True)
                if problem is not None:
                    raise CudaStructError(f"kernel {self._name!r} ({where}): {problem}")

    # -- construction from files ---------------------------------------------------------------
    @classmethod
    def from_file(
        cls,
        path: str | os.PathLike[str],
        name: str | None = None,
        *,
        suffix: str = "_cuda.cu",
        **kwargs: Any,
    ) -> CudaKernel:
        """The kernel ``name`` (default: the file name minus ``suffix``) of a ``.cu`` file; the
        file's folder is searched first for quoted includes."""
        path = Path(path)
        if name is None:
            if not path.name.endswith(suffix):
                raise CudaSignatureError(
                    f"{path} does not end with {suffix!r}: pass the kernel name "
                    f"(CudaKernel.from_file(path, name)) or the file's suffix (suffix=...)"
                )
            name = path.name[: -len(suffix)]
        kwargs["include_dirs"] = (str(path.parent), *kwargs.get("include_dirs", ()))
        kwargs.setdefault("source_dir", str(path.parent))
        source = read_cuda_source(path)
        try:
            return cls(source, name, **kwargs)
        except CudaSignatureError as exc:
            if str(path) in str(exc):
                raise
            raise type(exc)(f"{path}: {exc.full_message}") from None

    @classmethod
    def all_from_file(cls, path: str | os.PathLike[str], **kwargs: Any) -> dict[str, CudaKernel]:
        """One kernel per ``__global__`` function of the file, in source order."""
        path = Path(path)
        names = cuda_kernel_names(read_cuda_source(path))
        if not names:
            raise CudaSignatureError(f"{path}: no __global__ function found in the file")
        return {n: cls.from_file(path, n, **kwargs) for n in names}

    # -- compiling ---------------------------------------------------------------------------
    def compile(self, *, log_stream: Any = None, device: int | None = None) -> CudaKernel:
        """Compiles for the current device now (or loads the disk cache); returns ``self``.

        ``log_stream`` (a text stream such as ``sys.stderr``) receives one line saying what
        was compiled, with which options, and whether the disk cache had it; a compile error
        raises :class:`~cunumpy.exceptions.CudaCompileError` with the compiler's log. Inside
        ``kernel_testing.emulated_launches()`` it builds the kernel for the CPU emulator.
        ``device``: the CUDA device ordinal to compile and load for, in place of the calling
        thread's current device (a worker thread compiling for its caller); the compile lets go
        of the GIL, so several kernels compile at once from several threads."""
        device = _device_ordinal(self._name, device)
        options = emulation_options()
        if options is not None:
            self.compiled_from_cache = bool(
                compile_for_emulation(self, options=options)["from_cache"]
            )
        else:
            self.compiled_from_cache = self._compile(device)
        if log_stream is not None:
            origin = "loaded from the disk cache" if self.compiled_from_cache else "compiled"
            log_stream.write(
                f"cunumpy: kernel {self._name!r} {origin} with options "
                f"{' '.join(self._compile_options)}\n"
            )
        return self

    def recompile(self, *, log_stream: Any = None) -> CudaKernel:
        """Forgets the current device's compiled kernel and compiles again."""
        self._forget_compiled()
        return self.compile(log_stream=log_stream)

    def check_args(self, *args: Any) -> None:
        """Checks arguments exactly as a launch would, without launching (no GPU needed)."""
        self._check_args(*args)

    def compile_options(self) -> tuple[str, ...]:
        """The options a compile now uses: :attr:`options` plus
        :data:`~cunumpy.cuda.DEBUG_OPTIONS` when debugging is on. (Included headers are part
        of the compile cache's key, so no ``-DCUNUMPY_INCLUDE_HASH`` is needed.)"""
        return self._compile_options

    @property
    def included_headers(self) -> tuple[Path, ...]:
        """The header files the source includes (recursively; resolved at each access):
        quoted includes from :attr:`source_dir` and the include folders, angle includes from
        the shipped headers."""
        dirs = [*([self._source_dir] if self._source_dir else []), *self._include_dirs]
        return tuple(
            resolve_includes(
                self._source,
                dirs,
                base_dir=self._source_dir,
                angle_dirs=[cuda_include_dir(), *self._include_dirs],
            )
        )

    def launch_shape(
        self,
        n_threads: int | Sequence[int] | None = None,
        *,
        grid: int | Sequence[int] | None = None,
        block: int | Sequence[int] | None = None,
        args: Sequence[Any] | None = None,
    ) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """``(grid, block)`` of a launch with these launch arguments, without launching.

        ``args`` are call arguments, used to infer the size (see :attr:`n_threads_from`) when
        neither ``n_threads`` nor ``grid`` is given. Raises the errors the launch would raise
        (:class:`~cunumpy.exceptions.LaunchShapeTypeError` unless exactly one of ``n_threads``
        and ``grid`` is given or inferred). A grid with a zero extent launches nothing.

        >>> k = CudaKernel('extern "C" __global__ void f(double* a) {}', "f",
        ...                block_size=(16, 16))
        >>> k.launch_shape((100, 50))
        ((7, 4), (16, 16))
        """
        call_args = tuple(args or ())
        g3, b3 = self._launch_shape(*call_args, n_threads=n_threads, grid=grid, block=block)
        block_len = len(self._block) if block is None else len(_block_tuple(block, self._name))
        if grid is not None:
            n_grid = len(_block_tuple(grid, self._name))
            n_block = block_len
        else:
            if n_threads is None:
                n_threads = self._inferred_n_threads(call_args, block_len)
            n_grid = len(_block_tuple(n_threads, self._name))
            n_block = max(n_grid, block_len)
        return tuple(int(v) for v in g3[:n_grid]), tuple(int(v) for v in b3[:n_block])

    def _inferred_n_threads(self, args: tuple[Any, ...], block_len: int) -> Any:
        rule = self._n_threads_from
        if callable(rule):
            return rule(args)
        return (0,) * (block_len if rule == "auto" else 1)

    def prepare_args(self, *args: Any) -> tuple[Any, ...]:
        """The arguments as the kernel receives them, checked: argument objects flattened,
        scalars cast to the declared C types (NumPy scalars), arrays as given, views as a
        NumPy ``void`` scalar holding ``data``, ``shape`` and (for ``ArrayND``) ``strides`` in
        elements, struct values as a ``void`` scalar of the struct's dtype. Raises the errors
        of a launch (wrong count, dtype, contiguity, range, ...)."""
        import numpy as np

        self._check_args(*args)
        flat: list[Any] = []
        for a in args:
            method = getattr(type(a), "__cuda_args__", None)
            if method is not None and not isinstance(a, int | float):
                flat.extend(method(a))
            else:
                flat.append(a)
        signature = self.signature
        if signature is None:
            return tuple(flat)
        out: list[Any] = []
        for value, param in zip(flat, signature, strict=True):
            if param.view_ndim is not None:
                out.append(_view_value(value, param))
            elif param.struct is not None:
                struct = param.struct if not isinstance(param.struct, str) else None
                packed = getattr(value, "packed", None)
                if struct is not None and isinstance(packed, bytes):
                    out.append(np.frombuffer(packed, dtype=struct.dtype)[0])
                else:
                    out.append(value)
            elif param.pointer or param.dtype is None:
                out.append(value)
            else:
                out.append(param.dtype.type(value))
        return tuple(out)

    def _emulated_launch(
        self,
        *args: Any,
        n_threads: Any = None,
        grid: Any = None,
        block: Any = None,
        shared_mem: int = 0,
        stream: Any = None,
    ) -> None:
        """A launch inside ``kernel_testing.emulated_launches()``: run by the CPU emulator
        (``stream`` is ignored: emulated launches are synchronous)."""
        emulate_cuda_kernel(
            self,
            *args,
            n_threads=n_threads,
            grid=grid,
            block=block,
            shared_mem=shared_mem,
            options=emulation_options() or (),
        )

    # -- __constant__ memory -------------------------------------------------------------------
    @property
    def constant_names(self) -> tuple[str, ...]:
        """The ``__constant__`` variables the source declares at global scope, in order."""
        return tuple(self._constant_names())

    def set_constant(self, name: str, value: Any) -> None:
        """Copies ``value`` into the kernel's ``__constant__`` variable ``name`` on the current
        device (the emulated one under ``CUNUMPY_FAKE_CUPY=1`` or
        ``kernel_testing.emulated_launches()``), compiling the kernel first if needed.

        ``value`` is a NumPy scalar or array of exactly the declared C type (``float`` takes
        ``float32``; nothing is cast) with exactly the variable's element count (a
        ``float c[16]`` takes 16 elements in any shape; nothing is truncated or padded). The
        copy is one host-to-device transfer, counted by
        :func:`~cunumpy.profiling.count_transfers`; on a GPU the device is synchronised before
        and after it, so launches queued before it read the old value and later ones the new.

        Raises :class:`~cunumpy.exceptions.CudaConstantNotFoundError` (a ``KeyError``) when
        ``name`` is not a ``__constant__`` variable of the source,
        :class:`~cunumpy.exceptions.CudaConstantTypeError` (a ``TypeError``) for another
        dtype, a value that is not a NumPy one, or a variable of a struct type or declared
        ``const``, and :class:`~cunumpy.exceptions.CudaConstantSizeError` (a ``ValueError``)
        for another element count.

        >>> k = CudaKernel('__constant__ float a[2]; '
        ...                'extern "C" __global__ void f(float* x) { x[0] = a[1]; }', "f")
        >>> k.constant_names
        ('a',)
        """
        if not isinstance(name, str):
            raise CudaConstantTypeError(
                f"CudaKernel {self._name!r}: set_constant(name, value) takes the variable's name "
                f"as a str, got {type(name).__name__}"
            )
        if not isinstance(value, np.ndarray | np.generic):
            raise CudaConstantTypeError(
                f"CudaKernel {self._name!r}: set_constant({name!r}, value) takes a NumPy scalar "
                f"or array of the declared C type (for example np.float32(2.0) for a float), got "
                f"{type(value).__name__}; nothing is converted implicitly"
            )
        array = np.ascontiguousarray(value)
        if not array.dtype.isnative:
            raise CudaConstantTypeError(
                f"CudaKernel {self._name!r}: set_constant({name!r}, value) got a value in "
                f"non-native byte order ({array.dtype.str}); convert it with "
                f"value.astype(value.dtype.newbyteorder('='))"
            )
        self._set_constant(name, array.dtype.name, int(array.size), array.tobytes())

    def get_constant(self, name: str) -> Any:
        """The value of the kernel's ``__constant__`` variable ``name`` on the current device:
        a NumPy scalar for a scalar variable, else an array of the declared shape (one axis
        when an extent is not a literal). Before any :meth:`set_constant` it is the
        initialiser's value (zeros without one). One device-to-host transfer, counted. Raises
        the errors of :meth:`set_constant` for a name that is not a variable or a type that
        cannot be read."""
        if not isinstance(name, str):
            raise CudaConstantTypeError(
                f"CudaKernel {self._name!r}: get_constant(name) takes the variable's name as a "
                f"str, got {type(name).__name__}"
            )
        dtype, shape, data = self._get_constant(name)
        array = np.frombuffer(data, dtype=np.dtype(dtype)).reshape(shape).copy()
        return array[()] if array.ndim == 0 else array

    # -- properties --------------------------------------------------------------------------
    @property
    def attributes(self) -> dict[str, int] | None:
        """The compiled kernel's resource use on the current CUDA device, as the driver reports
        it (``num_regs``: registers a thread, ``local_size_bytes``: local memory a thread,
        ``max_threads_per_block``, ``shared_size_bytes``, ``const_size_bytes``,
        ``ptx_version``, ``binary_version``, ``max_dynamic_shared_size_bytes``: CuPy's
        ``RawKernel.attributes`` names). Compiles for the current device first when needed;
        ``None`` on the emulated device."""
        return self._attributes()

    @property
    def max_registers(self) -> int | None:
        """The register cap applied to a compile that needs more (``None``: no cap)."""
        return self._max_registers

    @property
    def name(self) -> str:
        return self._name

    @property
    def source(self) -> str:
        return self._source

    @property
    def block_size(self) -> int | tuple[int, ...]:
        return self._block[0] if len(self._block) == 1 else self._block

    @property
    def options(self) -> tuple[str, ...]:
        """The options as given plus ``-I`` for the include folders and the shipped headers."""
        return self._options

    @property
    def include_dirs(self) -> tuple[str, ...]:
        return self._include_dirs

    @property
    def source_dir(self) -> str | None:
        return self._source_dir

    @property
    def structs(self) -> tuple[Any, ...]:
        return self._structs

    @property
    def template_args(self) -> Any:
        return self._template_args

    @property
    def debug(self) -> bool | None:
        return self._debug

    def debug_active(self) -> bool:
        """``debug`` if given, else the global setting (``CUNUMPY_CUDA_DEBUG``)."""
        return get_cuda_debug() if self._debug is None else bool(self._debug)

    @property
    def signature(self) -> list[CudaParameter] | None:
        """The parsed parameters, or ``None`` with ``check_signature=False``."""
        if self._check and self._signature is None:
            # parsed once, when the kernel was configured (Rust keeps it)
            self._signature = parameters_of(self._parsed_params(), self._structs)
        return self._signature

    @property
    def check_finite(self) -> bool:
        return self._check_finite

    @check_finite.setter
    def check_finite(self, value: bool) -> None:
        self._check_finite = bool(value)
        self._set_flags(self.debug_active(), self._check_finite)

    @property
    def n_threads_from(self) -> Any:
        return self._n_threads_from

    @n_threads_from.setter
    def n_threads_from(self, value: Any) -> None:
        self._set_n_threads_from(value)
        self._n_threads_from = value

    def __repr__(self) -> str:
        return f"CudaKernel(name={self._name!r}, block_size={self.block_size!r})"

    # -- the NaN/inf scan (check_finite=True) --------------------------------------------------
    def _check_finite_outputs(self, args: list[Any]) -> None:
        import cupy

        cupy.cuda.get_current_stream().synchronize()
        for i, a in enumerate(args):
            if isinstance(a, cupy.ndarray) and a.dtype.kind in "fc" and a.size:
                if not bool(cupy.isfinite(a).all()):
                    raise NonFiniteOutputError(
                        f"kernel {self._name!r} left a NaN or inf in argument {i} "
                        f"(dtype {a.dtype}, shape {a.shape})"
                    )


def _view_value(value: Any, param: CudaParameter) -> Any:
    """An ``ArrayND``/``CArrayND`` argument as the struct the kernel receives."""
    import numpy as np

    iface = value.__cuda_array_interface__
    shape = tuple(int(n) for n in iface["shape"])
    itemsize = np.dtype(iface["typestr"]).itemsize
    fields: list[tuple[str, Any]] = [("data", np.uint64), ("shape", np.int64, (len(shape),))]
    values: list[Any] = [int(iface["data"][0]), shape]
    if not param.contiguous:
        strides = iface.get("strides")
        if strides is None:
            strides = tuple(
                int(np.prod(shape[i + 1 :], dtype=np.int64)) * itemsize for i in range(len(shape))
            )
        fields.append(("strides", np.int64, (len(shape),)))
        values.append(tuple(int(s) // itemsize for s in strides))
    out = np.zeros((), dtype=np.dtype(fields, align=True))
    for (name, *_), v in zip(fields, values, strict=True):
        out[name] = v
    return out[()]


class CudaKernelVariants:
    """Kernels made on demand by ``factory(*key)`` and cached per key (for example one
    kernel per dtype or template argument)."""

    def __init__(self, factory: Callable[..., CudaKernel]) -> None:
        self._factory = factory
        self._kernels: dict[tuple[Hashable, ...], CudaKernel] = {}

    def get(self, *key: Hashable) -> CudaKernel:
        kernel = self._kernels.get(key)
        if kernel is None:
            kernel = self._factory(*key)
            if not isinstance(kernel, CudaKernel):
                raise InvalidArgumentTypeError(
                    f"the variant factory must return a CudaKernel, got {type(kernel).__name__}"
                )
            self._kernels[key] = kernel
        return kernel

    def keys(self) -> list[tuple[Hashable, ...]]:
        return list(self._kernels)

    def __len__(self) -> int:
        return len(self._kernels)

    def __iter__(self) -> Iterator[tuple[Hashable, ...]]:
        return iter(list(self._kernels))

    def compile_all(self, keys: Sequence[Any] = (), *, jobs: int | None = 1) -> list[Any]:
        """Creates the given keys and compiles every variant, ``jobs`` at a time (compiles
        release the GIL). Every variant is tried; all failures are raised together."""
        for key in keys:
            self.get(*(key if isinstance(key, tuple) else (key,)))
        return compile_kernels(dict(self._kernels), jobs=jobs)


def _device_ordinal(kernel: str, device: Any) -> int | None:
    """``device`` as a CUDA device ordinal (NumPy integers too), or ``None`` for none given."""
    if device is None:
        return None
    try:
        ordinal = -1 if isinstance(device, bool) else operator.index(device)
    except TypeError:
        ordinal = -1
    if ordinal < 0:
        raise InvalidArgumentError(
            f"CudaKernel {kernel!r}: compile's device: expected a device ordinal (an int >= 0), "
            f"got {device!r}"
        )
    return ordinal


def compile_kernels(kernels: dict[Any, CudaKernel], *, jobs: int | None = 1) -> list[Any]:
    """Compiles every kernel; raises one ``CudaCompileError`` listing every failure."""
    from ..exceptions import CudaCompileError

    if jobs is None:
        jobs = os.cpu_count() or 1
    if jobs < 1:
        raise InvalidArgumentError(f"jobs must be at least 1, got {jobs}")

    # the caller's device: a worker thread has no current context, and would build for device 0
    device = _core._known_cuda_device()

    def attempt(item: tuple[Any, CudaKernel]) -> tuple[Any, BaseException | None]:
        key, kernel = item
        try:
            kernel.compile(device=device)
        except Exception as exc:  # collected and reported together below
            return key, exc
        return key, None

    if jobs == 1:
        results = [attempt(item) for item in kernels.items()]
    else:
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            results = list(pool.map(attempt, kernels.items()))
    failures = [(key, exc) for key, exc in results if exc is not None]
    if failures:
        text = "\n\n".join(f"{key!r}: {exc}" for key, exc in failures)
        raise CudaCompileError(f"{len(failures)} of {len(kernels)} kernel(s) failed:\n\n{text}")
    return [key for key, _ in results]
