"""``PyccelKernel``: call a host kernel (Pyccel, Numba, NumPy, plain Python) with device arrays.

A converting call copies every device array it finds in the arguments to the host once (through
reusable pinned buffers when CuPy has them), runs the host kernel, then copies the written
arrays back into the very same device arrays (no temporary device array). Every copy and one
``kernel_conversion`` marker per converting call go to the transfer ledger.
"""

from __future__ import annotations

import contextlib
import copy as _copy
import inspect
import threading
import typing
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from .. import _backend, _capture
from .._ledger import is_recording, record, recorded_by_caller
from ..exceptions import (
    InvalidArgumentTypeError,
    KernelOutputIndexError,
    KernelOutputKeyError,
    KernelOutputsError,
)
from ._kernel_args import _contains_device, _cupy, _in_modules, _is_device, _signature_names

__all__ = [
    "PyccelKernel",
    "as_kernel_array",
    "kernel_output",
    "kernel_outputs",
    "outputs_from_annotations",
]

_UNSET = object()
_SCALAR_ANNOTATIONS = {"int", "float", "bool", "complex", "str"}


def _describe(a: Any) -> str:
    return f"{a.dtype} array of shape {tuple(a.shape)}"


# -- pinned staging buffers ----------------------------------------------------------------------
class _PinnedPool:
    """Page-locked host buffers reused across calls, by power-of-two size class.

    A buffer is lent for the duration of one kernel call and handed back afterwards, so calls
    in several threads never share one. Without pinned memory (no CuPy, or a CuPy stand-in
    that has none) ordinary NumPy buffers are used.
    """

    _MIN = 4096
    _KEEP = 4  # free buffers kept per size class

    def __init__(self) -> None:
        self._free: dict[int, list[Any]] = {}
        self._lock = threading.Lock()
        self._pinned: bool | None = None

    @classmethod
    def _size_class(cls, nbytes: int) -> int:
        size = cls._MIN
        while size < nbytes:
            size *= 2
        return size

    def _allocate(self, size: int) -> Any:
        if self._pinned is not False:
            cupy = _cupy()
            try:
                memory = cupy.cuda.alloc_pinned_memory(size)
                self._pinned = True
                return np.frombuffer(memory, dtype=np.uint8, count=size)
            except Exception:  # NotImplementedError on a stand-in, or no CUDA host allocator
                self._pinned = False
        return np.empty(size, dtype=np.uint8)

    def take(self, nbytes: int) -> np.ndarray:
        size = self._size_class(max(int(nbytes), 1))
        with self._lock:
            free = self._free.get(size)
            if free:
                return free.pop()
        return self._allocate(size)

    def give_back(self, buffers: list[np.ndarray]) -> None:
        with self._lock:
            for buf in buffers:
                free = self._free.setdefault(buf.nbytes, [])
                if len(free) < self._KEEP:
                    free.append(buf)

    def clear(self) -> None:
        with self._lock:
            self._free.clear()

    @property
    def pinned(self) -> bool:
        """Whether the buffers lent are page-locked (known after the first allocation)."""
        return self._pinned is True


_pool = _PinnedPool()


def _host_view(buffer: np.ndarray, device: Any) -> np.ndarray:
    order = "F" if (device.flags.f_contiguous and not device.flags.c_contiguous) else "C"
    flat = buffer[: device.nbytes].view(device.dtype)
    return flat.reshape(device.shape, order=order)


# -- one converting call -------------------------------------------------------------------------
class _Conversion:
    """The state of one converting call: device→host pairs (by identity), lent buffers."""

    def __init__(self, kernel_name: str, object_modules: tuple[str, ...]) -> None:
        self.name = kernel_name
        self.object_modules = object_modules
        self.memo: dict[int, Any] = {}
        self.pairs: list[tuple[Any, np.ndarray]] = []  # (device, host)
        self.host_of: dict[int, Any] = {}  # id(host) -> device
        self.buffers: list[np.ndarray] = []
        self.keep: list[Any] = []  # keeps converted containers alive so ids stay unique
        self.nbytes = 0
        self.staged: set[int] = set()  # ids of host arrays in lent (contiguous) buffers
        self.pending: _AsyncCopier | None = None  # asynchronous copies to the host not waited
        self._copier: Any = _UNSET

    def to_host(self, value: Any) -> Any:
        key = id(value)
        if key in self.memo:
            return self.memo[key]
        if _is_device(value):
            host = self._copy_to_host(value)
            self.memo[key] = host
            return host
        if isinstance(value, tuple):
            out: Any = tuple(self.to_host(v) for v in value)
            if hasattr(value, "_fields"):  # a namedtuple
                out = type(value)(*out)
        elif isinstance(value, list):
            out = []
            self.memo[key] = out  # cycles
            out.extend(self.to_host(v) for v in value)
        elif isinstance(value, dict):
            out = {}
            self.memo[key] = out
            out.update((k, self.to_host(v)) for k, v in value.items())
        elif self.object_modules and _in_modules(value, self.object_modules):
            out = _copy.copy(value)
            self.memo[key] = out
            for attr, v in list(vars(out).items()):
                setattr(out, attr, self.to_host(v))
        else:
            return value
        self.memo[key] = out
        self.keep.append(value)
        return out

    def _copy_to_host(self, device: Any) -> np.ndarray:
        if device.flags.c_contiguous or device.flags.f_contiguous:
            buffer = _pool.take(device.nbytes)
            self.buffers.append(buffer)
            host = _host_view(buffer, device)
            copier = self.copier()
            if copier is None:
                device.get(out=host)
            else:  # pinned: an asynchronous copy on the current stream, waited for once
                if device.nbytes:
                    copier.to_host(host, device)
                self.pending = copier
            self.staged.add(id(host))
        else:
            host = device.get()
        self.pairs.append((device, host))
        self.host_of[id(host)] = device
        self.nbytes += int(device.nbytes)
        if is_recording():
            record(
                "to_host", f"PyccelKernel {self.name!r}: {_describe(device)}", int(device.nbytes)
            )
        return host

    def copier(self) -> _AsyncCopier | None:
        """The asynchronous copier of this call (see :func:`_async_copier`), made once."""
        if self._copier is _UNSET:
            self._copier = _async_copier()
        return self._copier

    def wait(self) -> None:
        """Waits for the asynchronous copies to the host (before the host kernel reads them)."""
        if self.pending is not None:
            self.pending.synchronize()
            self.pending = None

    def copy_back(self, hosts: set[int] | None) -> None:
        cupy = _cupy()
        for device, host in self.pairs:
            if hosts is not None and id(host) not in hosts:
                continue
            if id(host) in self.staged:
                copier = self.copier()
                if copier is None:
                    device.set(host)
                elif device.nbytes:  # waited for in release(), before the buffer is lent again
                    copier.to_device(device, host)
            else:  # a strided view: CuPy can only set through a contiguous copy
                device[...] = cupy.asarray(host)
            self.nbytes += int(device.nbytes)
            if is_recording():
                record(
                    "to_device",
                    f"PyccelKernel {self.name!r}: {_describe(device)}",
                    int(device.nbytes),
                )

    def release(self) -> None:
        if self.buffers:
            cupy = _cupy()
            with contextlib.suppress(Exception):  # stand-ins have nothing to wait for
                cupy.cuda.get_current_stream().synchronize()
            _pool.give_back(self.buffers)
            self.buffers = []


class _AsyncCopier:
    """``cudaMemcpyAsync`` between device arrays and pinned host buffers on CuPy's current
    stream (one stream synchronisation per direction instead of one blocking copy per array)."""

    def __init__(self, cupy: Any) -> None:
        runtime = cupy.cuda.runtime
        self._memcpy = runtime.memcpyAsync
        # cudaMemcpyKind's values (fixed by CUDA), should a CuPy version not export the names
        self._d2h = getattr(runtime, "memcpyDeviceToHost", 2)
        self._h2d = getattr(runtime, "memcpyHostToDevice", 1)
        self._stream = cupy.cuda.get_current_stream()

    def to_host(self, host: np.ndarray, device: Any) -> None:
        self._memcpy(host.ctypes.data, device.data.ptr, device.nbytes, self._d2h, self._stream.ptr)

    def to_device(self, device: Any, host: np.ndarray) -> None:
        self._memcpy(device.data.ptr, host.ctypes.data, device.nbytes, self._h2d, self._stream.ptr)

    def synchronize(self) -> None:
        self._stream.synchronize()


def _async_copier() -> _AsyncCopier | None:
    """An asynchronous copier when the pool lends pinned memory and CuPy has
    ``memcpyAsync``; ``None`` for the blocking ``get``/``set`` path."""
    if not _pool.pinned:
        return None
    cupy = _cupy()
    if cupy is None or not hasattr(getattr(cupy.cuda, "runtime", None), "memcpyAsync"):
        return None
    return _AsyncCopier(cupy)


def _reachable(
    value: Any, is_array: Callable[[Any], bool], modules: tuple[str, ...], out: set[int]
) -> None:
    seen: set[int] = set()
    stack = [value]
    while stack:
        v = stack.pop()
        if id(v) in seen:
            continue
        seen.add(id(v))
        if is_array(v):
            out.add(id(v))
            base = getattr(v, "base", None)  # a view of a staged array writes into it
            while base is not None:
                out.add(id(base))
                base = getattr(base, "base", None)
        elif isinstance(v, (tuple, list)):
            stack.extend(v)
        elif isinstance(v, dict):
            stack.extend(v.values())
        elif modules and _in_modules(v, modules):
            stack.extend(vars(v).values())


def _is_ndarray(value: Any) -> bool:
    return isinstance(value, np.ndarray)


# -- outputs declarations ------------------------------------------------------------------------
def _check_outputs(name: str, outputs: Any) -> tuple[int | str, ...] | None:
    if outputs is None:
        return None
    if isinstance(outputs, (int, str)) and not isinstance(outputs, bool):
        raise KernelOutputsError(
            f"PyccelKernel {name!r}: outputs must be a sequence of argument indices or names, "
            f"got {outputs!r}; did you mean outputs=({outputs!r},)?"
        )
    try:
        entries = tuple(outputs)
    except TypeError:
        raise KernelOutputsError(
            f"PyccelKernel {name!r}: outputs must be a sequence of argument indices or names, "
            f"got {type(outputs).__name__}"
        ) from None
    for entry in entries:
        if isinstance(entry, bool) or not isinstance(entry, (int, str)):
            raise KernelOutputsError(
                f"PyccelKernel {name!r}: each outputs entry must be an int (argument index) or "
                f"a str (parameter name), got {entry!r} ({type(entry).__name__})"
            )
    return entries


def outputs_from_annotations(function: Callable[..., Any]) -> tuple[str, ...] | None:
    """The parameters of ``function`` that a call may write: every parameter except those annotated
    ``Final[...]``, ``const ...`` or a scalar type (``int``, ``float``, ``bool``, ``complex``,
    ``str``); an unannotated parameter may be written. ``None`` when ``function`` has no signature
    or no annotated parameter."""
    target = getattr(function, "python", None) or getattr(function, "py_func", None) or function
    try:
        sig = inspect.signature(target)
    except (TypeError, ValueError):
        return None
    params = list(sig.parameters.values())
    if not any(p.annotation is not inspect.Parameter.empty for p in params):
        return None
    written = []
    for p in params:
        if p.annotation is inspect.Parameter.empty or not _read_only(p.annotation):
            written.append(p.name)
    return tuple(written)


def _read_only(annotation: Any) -> bool:
    if isinstance(annotation, str):
        text = annotation.strip().strip("'\"").strip()
        if text.startswith(("Final[", "typing.Final[", "Final", "const ", "const[")):
            return True
        return text in _SCALAR_ANNOTATIONS
    if annotation in (int, float, bool, complex, str):
        return True
    origin = typing.get_origin(annotation)
    return origin is typing.Final or annotation is typing.Final


# -- the wrapper -------------------------------------------------------------------------------
class PyccelKernel:
    """A host kernel that can be called with device (CuPy) arrays.

    ``PyccelKernel(kernel, use_cupy=None, object_modules=(), is_array=None, outputs=None,
    parameters=None)``. With ``use_cupy=None`` a call converts when the backend is CuPy or a
    device array is found in the arguments (inside tuples, lists, dicts and objects whose type
    lives in one of ``object_modules``). A converting call copies each device array to the host
    once (an array passed twice stays one array), runs ``kernel``, copies back in place the
    arrays reachable from ``outputs`` (every converted array when ``outputs`` is None; see
    :func:`outputs_from_annotations` and ``outputs="annotations"``) and moves returned arrays,
    tuples, lists and dicts of arrays to the device. If the kernel raises, nothing is copied
    back.
    """

    def __init__(
        self,
        kernel: Callable[..., Any],
        use_cupy: bool | None = None,
        object_modules: Sequence[str] = (),
        is_array: Callable[[Any], bool] | None = None,
        outputs: Any = None,
        parameters: Sequence[str] | Callable[[], Sequence[str] | None] | None = None,
    ) -> None:
        if not callable(kernel):
            raise InvalidArgumentTypeError(
                f"PyccelKernel needs a callable host kernel, got {kernel!r}"
            )
        self._kernel = kernel
        self._name = str(getattr(kernel, "name", None) or getattr(kernel, "__name__", "kernel"))
        self._use_cupy = use_cupy
        if isinstance(object_modules, str):
            object_modules = (object_modules,)
        self._object_modules = tuple(object_modules)
        self._is_array = is_array or _is_ndarray
        self._parameters = parameters
        if isinstance(outputs, str) and outputs == "annotations":
            outputs = outputs_from_annotations(kernel)
        self._outputs = _check_outputs(self._name, outputs)
        self.last_call_nbytes = 0

    # -- properties ---------------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self._name

    @property
    def kernel(self) -> Callable[..., Any]:
        return self._kernel

    @property
    def use_cupy(self) -> bool | None:
        return self._use_cupy

    @property
    def object_modules(self) -> tuple[str, ...]:
        return self._object_modules

    @property
    def is_array(self) -> Callable[[Any], bool]:
        return self._is_array

    @property
    def outputs(self) -> tuple[int | str, ...] | None:
        return self._outputs

    @property
    def parameters(self) -> tuple[str, ...] | None:
        """The kernel's parameter names: ``parameters=`` if given, else its Python signature."""
        given = self._parameters
        if callable(given):
            given = given()
        if given is not None:
            return tuple(given)
        return _signature_names(self._kernel)

    def __repr__(self) -> str:
        return (
            f"PyccelKernel(kernel={self._name!r}, use_cupy={self._use_cupy!r}, "
            f"outputs={self._outputs!r})"
        )

    # -- calling ------------------------------------------------------------------------------
    def converts(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
        """Whether a call with these arguments copies them to the host."""
        if self._use_cupy is not None:
            return self._use_cupy
        if _cupy() is None:
            return False
        if _backend.get_backend() == "cupy":
            return True
        seen: set[int] = set()
        return _contains_device(args, self._object_modules, seen) or _contains_device(
            kwargs, self._object_modules, seen
        )

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if _capture.open_captures:
            _capture.refuse(
                f"host kernel {self._name!r} (PyccelKernel)",
                "a graph replays device work only; port it to CUDA or call it outside the "
                "captured step",
            )
        if not self.converts(args, kwargs):
            self.last_call_nbytes = 0
            return self._kernel(*args, **kwargs)
        return self.call_converted(args, kwargs)

    @recorded_by_caller()
    def call_converted(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """One converting call (what ``__call__`` does on the device side)."""
        conv = _Conversion(self._name, self._object_modules)
        try:
            host_args = conv.to_host(args)
            host_kwargs = conv.to_host(kwargs)
            conv.wait()
            if conv.pairs and is_recording():
                record("kernel_conversion", f"PyccelKernel {self._name!r}")
            selected = self._selected_hosts(args, kwargs, host_args, host_kwargs)
            result = self._kernel(*host_args, **host_kwargs)
            conv.copy_back(selected)
            moved = self._to_device(result, conv, selected)
        finally:
            conv.release()
            self.last_call_nbytes = conv.nbytes
        return moved

    def _selected_hosts(
        self,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        host_args: tuple[Any, ...],
        host_kwargs: dict[str, Any],
    ) -> set[int] | None:
        if self._outputs is None:
            return None
        selected: set[int] = set()
        names = None
        for entry in self._outputs:
            if isinstance(entry, int):
                index = entry + len(args) if entry < 0 else entry
                if 0 <= index < len(args):
                    value = host_args[index]
                else:
                    names = names if names is not None else self.parameters
                    key = (
                        names[entry]
                        if names is not None and -len(names) <= entry < len(names)
                        else None
                    )
                    if key is None or key not in kwargs:
                        hint = (
                            ""
                            if names is not None
                            else "; the parameter names are unknown, so an index cannot find "
                            "a keyword argument: declare this output by name or pass "
                            "parameters="
                        )
                        raise KernelOutputIndexError(
                            f"PyccelKernel {self._name!r}: output {entry} names no argument of "
                            f"this call ({len(args)} positional argument(s), keywords "
                            f"{sorted(kwargs)}){hint}"
                        )
                    value = host_kwargs[key]
            else:
                if entry in kwargs:
                    value = host_kwargs[entry]
                else:
                    names = names if names is not None else self.parameters
                    if names is None or entry not in names:
                        raise KernelOutputKeyError(
                            f"PyccelKernel {self._name!r}: output {entry!r}: no argument of "
                            "that name was passed"
                            + (
                                ""
                                if names is not None
                                else " and the parameter names are unknown (declare it by "
                                "index or pass parameters=)"
                            )
                        )
                    index = names.index(entry)
                    if index >= len(args):
                        raise KernelOutputKeyError(
                            f"PyccelKernel {self._name!r}: output {entry!r}: no argument of "
                            f"that name was passed (it is parameter {index}, the call passed "
                            f"{len(args)} positional argument(s))"
                        )
                    value = host_args[index]
            _reachable(value, self._is_array, self._object_modules, selected)
        return selected

    def _to_device(self, result: Any, conv: _Conversion, selected: set[int] | None) -> Any:
        if isinstance(result, np.ndarray):
            device = conv.host_of.get(id(result))
            if device is not None:  # the kernel returned one of its (staged) inputs
                if selected is not None and id(result) not in selected:
                    conv.copy_back({id(result)})
                return device
            cupy = _cupy()
            out = cupy.asarray(result)
            conv.nbytes += int(out.nbytes)
            record(
                "to_device",
                f"PyccelKernel {self._name!r}: returned {_describe(out)}",
                int(out.nbytes),
            )
            return out
        if isinstance(result, tuple) and not hasattr(result, "_fields"):
            return tuple(self._to_device(r, conv, selected) for r in result)
        if isinstance(result, list):
            return [self._to_device(r, conv, selected) for r in result]
        if isinstance(result, dict):
            return {k: self._to_device(v, conv, selected) for k, v in result.items()}
        return result


# -- argument helpers for dispatch="arrays" -------------------------------------------------------
def _fits(value: Any, dtype: np.dtype | None, on_device: bool, strided: bool) -> bool:
    if dtype is not None and value.dtype != dtype:
        return False
    if on_device:
        return bool(value.flags.c_contiguous)
    if value.flags.c_contiguous:
        return True
    if not strided:
        return False
    # C-ordered with gaps: strides decrease and each is a multiple of the item size
    strides = [s for s, n in zip(value.strides, value.shape, strict=True) if n > 1]
    return all(s > 0 and s % value.itemsize == 0 for s in strides) and strides == sorted(
        strides, reverse=True
    )


def _normalise_unit_strides(a: np.ndarray) -> np.ndarray:
    """Length-1 axes get the C stride, so Pyccel's C-order check accepts the array."""
    if a.ndim == 0 or a.flags.c_contiguous or all(n != 1 for n in a.shape):
        return a
    strides = list(a.strides)
    for axis in range(a.ndim - 1, -1, -1):
        if a.shape[axis] == 1:
            inner = strides[axis + 1] * a.shape[axis + 1] if axis + 1 < a.ndim else a.itemsize
            strides[axis] = inner
    return np.lib.stride_tricks.as_strided(a, a.shape, strides, writeable=a.flags.writeable)


@recorded_by_caller()
def as_kernel_array(value: Any, like: Any, dtype: Any = None, *, strided: bool = False) -> Any:
    """``value`` on ``like``'s side (host or device) in a layout a kernel accepts: ``value``
    itself when it fits, else one counted copy (device: C-contiguous; host: C-contiguous, or
    C-ordered with gaps when ``strided=True``)."""
    want = None if dtype is None else np.dtype(dtype)
    on_device = _is_device(like)
    if on_device:
        cupy = _cupy()
        if isinstance(value, cupy.ndarray) and _fits(value, want, True, strided):
            return value
        out = cupy.ascontiguousarray(cupy.asarray(value, dtype=want))
        kind = "device_copy" if isinstance(value, cupy.ndarray) else "to_device"
        record(kind, f"as_kernel_array: {_describe(out)}", int(out.nbytes))
        return out
    if _is_device(value):
        host = value.get()
        record("to_host", f"as_kernel_array: {_describe(value)}", int(value.nbytes))
        value = host
    if isinstance(value, np.ndarray) and _fits(value, want, False, strided):
        return _normalise_unit_strides(value)
    return np.ascontiguousarray(np.asarray(value, dtype=want))


def _shares_memory(a: Any, b: Any) -> bool:
    if a is b:
        return True
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        return bool(np.shares_memory(a, b))
    cupy = _cupy()
    if cupy is not None and isinstance(a, cupy.ndarray) and isinstance(b, cupy.ndarray):
        return bool(cupy.shares_memory(a, b))
    return False


@recorded_by_caller()
def _write_back(out: Any, buffer: Any) -> None:
    if _shares_memory(out, buffer):
        return
    if _is_device(out) and not _is_device(buffer):
        if out.flags.c_contiguous:
            out.set(np.ascontiguousarray(buffer, dtype=out.dtype))
        else:
            out[...] = _cupy().asarray(buffer)
        record("to_device", f"kernel_output: {_describe(out)}", int(out.nbytes))
    elif not _is_device(out) and _is_device(buffer):
        out[...] = buffer.get()
        record("to_host", f"kernel_output: {_describe(out)}", int(out.nbytes))
    else:
        out[...] = buffer


@contextlib.contextmanager
def kernel_output(
    out: Any, like: Any, dtype: Any = None, *, strided: bool = False
) -> Iterator[Any]:
    """Yields a buffer a kernel on ``like``'s side can write, then copies it into ``out`` when
    the block exits cleanly (nothing to copy when the buffer is ``out`` itself)."""
    buffer = as_kernel_array(out, like, dtype, strided=strided)
    yield buffer
    _write_back(out, buffer)


@contextlib.contextmanager
def kernel_outputs(
    *outs: Any, like: Any, dtype: Any = None, strided: bool = False
) -> Iterator[tuple[Any, ...]]:
    """:func:`kernel_output` for several arrays at once; yields a tuple of buffers."""
    buffers = tuple(as_kernel_array(o, like, dtype, strided=strided) for o in outs)
    yield buffers
    for out, buffer in zip(outs, buffers, strict=True):
        _write_back(out, buffer)
