"""``MetalKernel``: a Metal Shading Language kernel body run on the GPU of an Apple silicon Mac
through MLX, or on the emulated Metal device (``CUNUMPY_FAKE_METAL=1``) on any machine.

Every call is checked before a launch, on every platform (``cunumpy_core::metal`` in Rust):
counts, the dtypes MLX's Metal kernels take, output layouts, the float64 policy, the grid and
the threadgroup. The copies are those of the MLX path, also on the emulated device: one
host-to-device copy per input, one device-to-host copy per output, each recorded by
``count_transfers``; a float64 cast (``float64="cast"``) is recorded as a conversion.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .. import _config, _core
from .._ledger import record
from ..exceptions import (
    InvalidArgumentTypeError,
    InvalidStateError,
    KernelArgumentOverflowError,
    KernelArgumentTypeError,
    KernelArgumentValueError,
    KernelFolderError,
    LaunchShapeError,
    MetalUnavailableError,
)

__all__ = ["MetalKernel", "emulate_metal_kernel", "metal_available", "metal_kernel_from_file"]

_INT32 = (-(2**31), 2**31 - 1)


def _mlx() -> Any:
    """``mlx.core``, or ``None`` when MLX is not installed."""
    try:
        import mlx.core as mx
    except ImportError:
        return None
    return mx


def metal_available() -> bool:
    """Whether a :class:`~cunumpy.kernels.MetalKernel` can run here.

    True with ``CUNUMPY_FAKE_METAL=1`` (calls then run on the emulated Metal device, the CPU
    emulator), else when MLX is installed and reports a Metal GPU (an Apple silicon Mac).
    False otherwise, also without MLX.

    Examples
    --------
    >>> isinstance(xp.kernels.metal_available(), bool)
    True
    """
    if _config.fake_metal():
        return True
    mx = _mlx()
    if mx is None:
        return False
    try:
        return bool(mx.metal.is_available())
    except Exception:  # an MLX build without the metal module
        return False


def _triple(value: Any, what: str, kernel: str) -> list[int]:
    """1 to 3 integers as a list (checked in Rust for range and count)."""
    values = [value] if isinstance(value, (int, np.integer)) else value
    try:
        out = [int(v) for v in values]
    except (TypeError, ValueError):
        raise LaunchShapeError(
            f"MetalKernel {kernel!r}: {what} must be 1 to 3 positive integers, got {value!r}"
        ) from None
    if any(isinstance(v, (bool, np.bool_)) for v in values) or not 1 <= len(out) <= 3:
        raise LaunchShapeError(
            f"MetalKernel {kernel!r}: {what} must be 1 to 3 positive integers, got {value!r}"
        )
    if any(v <= 0 for v in out):
        raise LaunchShapeError(
            f"MetalKernel {kernel!r}: {what} must be 1 to 3 positive integers, got {value!r}"
        )
    return out


class MetalKernel:
    """A Metal Shading Language kernel for the GPU of Apple silicon, run with MLX.

    Takes NumPy arrays: each call copies the inputs to the device and the results back into
    the output arrays passed (``count_transfers`` records one host-to-device copy per input
    and one device-to-host copy per output). Every call is checked before any launch, on
    every platform. With ``CUNUMPY_FAKE_METAL=1`` calls run on the emulated Metal device, the
    CPU emulator, with the same checks and copies; see the guide "Metal kernels on Apple silicon".

    Parameters
    ----------
    source : str
        The body of the kernel function, as MLX's ``mx.fast.metal_kernel`` takes it: the
        signature is generated. Each input and output name is a pointer to the array's flat,
        row-major elements (a 0-d input is a ``const constant T&``); ``<input>_shape``,
        ``<input>_strides`` and ``<input>_ndim`` describe an input; the thread attributes
        (``thread_position_in_grid``, ``thread_index_in_simdgroup``, ...) are available.
    inputs : sequence of str
        Names of the inputs, in call order (a single string is one name).
    outputs : sequence of str
        Names of the outputs, in the order of ``out``.
    name : str, optional
        The kernel's name (in messages and the compiled function's name).
    header : str, optional
        Source placed before the kernel function: helper functions, constants.
    threadgroup : int or sequence of int, optional
        Threads per threadgroup, 1 to 3 integers (at most 1024 threads in all).
    float64 : {"error", "cast"}, optional
        The Apple GPU has no float64. ``"error"`` (default) raises
        :class:`~cunumpy.exceptions.KernelArgumentTypeError` for a float64 input or output;
        ``"cast"`` computes float64 data in float32, recording each cast.
    atomic_outputs : bool, optional
        Declare the outputs as ``device atomic<T>*`` (for ``atomic_fetch_add_explicit``).
    init_value : float, optional
        The value the outputs start from on the device. Without it they start undefined
        (the emulated device fills them with all-ones bytes, a NaN for floats): write every
        element.

    Raises
    ------
    KernelArgumentValueError
        If ``float64`` is unknown, there is no output, a name is not a C identifier, or a name
        repeats.
    LaunchShapeError
        If ``threadgroup`` is not 1 to 3 positive integers.

    Examples
    --------
    >>> scale = xp.kernels.MetalKernel(
    ...     "uint i = thread_position_in_grid.x; y[i] = a[0] * x[i];",
    ...     inputs=["x", "a"],
    ...     outputs=["y"],
    ... )
    >>> scale
    MetalKernel('cunumpy_kernel', inputs=('x', 'a'), outputs=('y',))
    """

    def __init__(
        self,
        source: str,
        inputs: Sequence[str],
        outputs: Sequence[str],
        *,
        name: str = "cunumpy_kernel",
        header: str = "",
        threadgroup: int | Sequence[int] = 256,
        float64: str = "error",
        atomic_outputs: bool = False,
        init_value: float | None = None,
    ) -> None:
        if float64 not in ("error", "cast"):
            raise KernelArgumentValueError(
                f"MetalKernel {name!r}: float64 must be 'error' or 'cast', got {float64!r}"
            )
        self.source = str(source)
        self.name = str(name)
        self.header = str(header)
        self.inputs: tuple[str, ...] = (inputs,) if isinstance(inputs, str) else tuple(inputs)
        self.outputs: tuple[str, ...] = (outputs,) if isinstance(outputs, str) else tuple(outputs)
        _core._metal_check_names(self.name, list(self.inputs), list(self.outputs))
        self.threadgroup: tuple[int, ...] = tuple(_triple(threadgroup, "threadgroup", self.name))
        self.float64 = float64
        self.atomic_outputs = bool(atomic_outputs)
        if init_value is not None and not isinstance(init_value, (int, float, np.number)):
            raise KernelArgumentTypeError(
                f"MetalKernel {self.name!r}: init_value must be a number or None, "
                f"got {type(init_value).__name__}"
            )
        self.init_value = init_value
        self._mlx_kernel: Any = None

    def __repr__(self) -> str:
        return f"MetalKernel({self.name!r}, inputs={self.inputs!r}, outputs={self.outputs!r})"

    # ------------------------------------------------------------------ checks
    def _as_input(self, value: Any, index: int) -> np.ndarray:
        name = self.inputs[index] if index < len(self.inputs) else f"#{index}"
        if isinstance(value, np.ndarray):
            return value
        if isinstance(value, (bool, np.bool_)) or (
            isinstance(value, int) and not isinstance(value, np.generic)
        ):
            v = int(value)
            if not _INT32[0] <= v <= _INT32[1]:
                raise KernelArgumentOverflowError(
                    f"MetalKernel {self.name!r}: input {name!r} is the int {v}, which does not "
                    "fit int32 (Python ints are passed as one-element int32 arrays)"
                )
            return np.array([v], dtype=np.int32)
        if isinstance(value, float) and not isinstance(value, np.generic):
            return np.array([value], dtype=np.float32)
        if isinstance(value, np.generic):
            return np.asarray(value)
        raise KernelArgumentTypeError(
            f"MetalKernel {self.name!r}: input {name!r} must be a NumPy array or a Python "
            f"int, bool or float; got {type(value).__module__}.{type(value).__name__}"
        )

    def _outputs(self, out: Any) -> tuple[np.ndarray, ...]:
        outs = (out,) if isinstance(out, np.ndarray) else out
        if not isinstance(outs, (tuple, list)):
            raise KernelArgumentTypeError(
                f"MetalKernel {self.name!r}: out must be a NumPy array or a sequence of them "
                f"(one per output {self.outputs}), got {type(out).__name__}"
            )
        for i, o in enumerate(outs):
            if not isinstance(o, np.ndarray):
                label = self.outputs[i] if i < len(self.outputs) else f"#{i}"
                raise KernelArgumentTypeError(
                    f"MetalKernel {self.name!r}: output {label!r} must be a NumPy array, "
                    f"got {type(o).__module__}.{type(o).__name__}"
                )
        return tuple(outs)

    def _template(self, template: Mapping[str, Any] | None) -> list[tuple[str, str, str]]:
        if template is None:
            return []
        if not isinstance(template, Mapping):
            raise KernelArgumentTypeError(
                f"MetalKernel {self.name!r}: template must be a mapping of names to int, bool "
                f"or dtype values, got {type(template).__name__}"
            )
        out = []
        for key, value in template.items():
            if not isinstance(key, str) or not key.isidentifier():
                raise KernelArgumentValueError(
                    f"MetalKernel {self.name!r}: template names must be identifiers, got {key!r}"
                )
            if isinstance(value, (bool, np.bool_)):
                out.append((key, "bool", "true" if value else "false"))
            elif isinstance(value, (int, np.integer)):
                out.append((key, "int", str(int(value))))
            else:
                msl = None
                try:
                    msl = _core._metal_msl_type(str(np.dtype(value)))
                except TypeError:
                    pass
                if msl is None:
                    raise KernelArgumentTypeError(
                        f"MetalKernel {self.name!r}: template {key!r} must be an int, a bool or "
                        f"a dtype Metal has (float32, int32, ...), got {value!r}"
                    )
                out.append((key, "type", msl))
        return out

    def _plan(self, args: tuple[Any, ...], out: Any, n_threads: Any) -> Any:
        arrays = [self._as_input(a, i) for i, a in enumerate(args)]
        outs = self._outputs(out)
        n = None if n_threads is None else _triple(n_threads, "n_threads", self.name)
        ins_plan, outs_plan, grid, tg = _core._metal_plan(
            self.name,
            list(self.inputs),
            list(self.outputs),
            self.float64,
            list(self.threadgroup),
            arrays,
            list(outs),
            n,
        )
        return arrays, outs, ins_plan, outs_plan, tuple(grid), tuple(tg)

    # ------------------------------------------------------------------ calls
    def __call__(
        self,
        *args: Any,
        out: Any,
        n_threads: int | Sequence[int] | None = None,
        template: Mapping[str, Any] | None = None,
    ) -> Any:
        """Launch the kernel; blocks until the results are in ``out``.

        Parameters
        ----------
        *args : numpy.ndarray or scalar
            The inputs, in the order of ``inputs``. Python ints and bools become one-element
            int32 arrays and floats one-element float32 arrays (read them as ``a[0]``).
        out : numpy.ndarray or sequence of numpy.ndarray
            The output arrays, in the order of ``outputs``: C-contiguous and writeable; their
            shapes and dtypes define the outputs, and they are filled in place.
        n_threads : int or sequence of int, optional
            The grid in threads (1 to 3 dimensions), not in threadgroups; by default the first
            axis of the first output.
        template : mapping, optional
            Compile-time constants by name: an int, a bool or a dtype (``{"T": np.float32}``).

        Returns
        -------
        numpy.ndarray or tuple of numpy.ndarray
            ``out`` (a tuple when there are several outputs).

        Raises
        ------
        KernelArgumentTypeError
            A wrong count, dtype or layout of an argument (before any launch).
        LaunchShapeError
            A wrong ``n_threads`` or threadgroup (before any launch).
        ImportError
            Neither MLX nor the emulated Metal device is available.
        RuntimeError
            MLX reports no Metal GPU.
        """
        arrays, outs, ins_plan, outs_plan, grid, tg = self._plan(args, out, n_threads)
        targs = self._template(template)
        if _config.fake_metal():
            self._run_emulated(arrays, outs, ins_plan, outs_plan, grid, tg, targs, True, None)
        else:
            self._run_mlx(arrays, outs, ins_plan, outs_plan, grid, tg, targs)
        return outs[0] if len(outs) == 1 else outs

    def _device_inputs(self, arrays: list[np.ndarray], plan: list[Any]) -> list[np.ndarray]:
        """The inputs as the device receives them: float64 cast to float32 (recorded), any
        layout made row-contiguous (the copy to the device does that)."""
        out = []
        for a, name, (_, cast, _packed) in zip(arrays, self.inputs, plan, strict=True):
            if cast:
                record(
                    "kernel_conversion",
                    f"MetalKernel {self.name!r}: input {name!r} cast float64 -> float32",
                    int(a.nbytes),
                )
                a = a.astype(np.float32)
            out.append(np.ascontiguousarray(a))
        return out

    def _device_output(self, o: np.ndarray, cast: bool) -> np.ndarray:
        buf = np.empty(o.shape, dtype=np.float32 if cast else o.dtype)
        if self.init_value is not None:
            buf.fill(self.init_value)
        else:
            buf.view(np.uint8).fill(0xFF)  # undefined on the GPU: all-ones bytes here
        return buf

    def _copy_back(
        self, results: Sequence[np.ndarray], outs: tuple[np.ndarray, ...], plan: Any
    ) -> None:
        for r, o, name, (_, cast, _) in zip(results, outs, self.outputs, plan, strict=True):
            record(
                "to_host",
                f"MetalKernel {self.name!r}: output {name!r} {r.dtype}{list(r.shape)}",
                int(r.nbytes),
            )
            if cast:
                record(
                    "kernel_conversion",
                    f"MetalKernel {self.name!r}: output {name!r} cast float32 -> float64",
                    int(o.nbytes),
                )
            np.copyto(o, r.reshape(o.shape), casting="unsafe" if cast else "no")

    def _record_inputs(self, device_inputs: list[np.ndarray]) -> None:
        for a, name in zip(device_inputs, self.inputs, strict=True):
            record(
                "to_device",
                f"MetalKernel {self.name!r}: input {name!r} {a.dtype}{list(a.shape)}",
                int(a.nbytes),
            )

    def _mlx_call(
        self,
        mx: Any,
        inputs: list[np.ndarray],
        shapes: list[tuple[int, ...]],
        dtypes: list[Any],
        grid: tuple[int, int, int],
        tg: tuple[int, int, int],
        targs: list[tuple[str, str, str]],
    ) -> list[Any]:
        """MLX's kernel (built once) called on the inputs, copied into MLX arrays; returns
        MLX's (lazy) outputs. Written against MLX's documented ``mx.fast.metal_kernel``."""
        if self._mlx_kernel is None:
            self._mlx_kernel = mx.fast.metal_kernel(
                name=self.name,
                input_names=list(self.inputs),
                output_names=list(self.outputs),
                source=self.source,
                header=self.header,
                ensure_row_contiguous=True,
                atomic_outputs=self.atomic_outputs,
            )
        return list(
            self._mlx_kernel(
                inputs=[to_mlx(a) for a in inputs],
                template=[(k, _mlx_template_value(mx, kind, text)) for k, kind, text in targs],
                grid=grid,
                threadgroup=tg,
                output_shapes=[tuple(s) for s in shapes],
                output_dtypes=[mlx_dtype(d) for d in dtypes],
                init_value=None if self.init_value is None else float(self.init_value),
            )
        )

    def _run_emulated(
        self,
        arrays: list[np.ndarray],
        outs: tuple[np.ndarray, ...],
        ins_plan: Any,
        outs_plan: Any,
        grid: tuple[int, int, int],
        tg: tuple[int, int, int],
        targs: list[tuple[str, str, str]],
        bounds: bool,
        shuffle_seed: int | None,
    ) -> None:
        dev_in = self._device_inputs(arrays, ins_plan)
        self._record_inputs(dev_in)
        dev_out = [self._device_output(o, p[1]) for o, p in zip(outs, outs_plan, strict=True)]
        record("launch", f"MetalKernel {self.name!r} (emulated Metal device)")
        _core._metal_emulate(
            self.name,
            self.source,
            self.header,
            list(self.inputs),
            list(self.outputs),
            [(a, p[0]) for a, p in zip(dev_in, ins_plan, strict=True)],
            [(b, p[0]) for b, p in zip(dev_out, outs_plan, strict=True)],
            self.atomic_outputs,
            targs,
            grid,
            tg,
            bounds,
            shuffle_seed,
        )
        self._copy_back(dev_out, outs, outs_plan)

    def _run_mlx(
        self,
        arrays: list[np.ndarray],
        outs: tuple[np.ndarray, ...],
        ins_plan: Any,
        outs_plan: Any,
        grid: tuple[int, int, int],
        tg: tuple[int, int, int],
        targs: list[tuple[str, str, str]],
    ) -> None:
        mx = _mlx()
        if mx is None:
            raise MetalUnavailableError(
                f"MetalKernel {self.name!r} needs MLX on an Apple silicon Mac "
                "(pip install 'cunumpy[metal]'), or CUNUMPY_FAKE_METAL=1 for the emulated "
                "Metal device"
            )
        if not metal_available():
            raise InvalidStateError(
                f"MetalKernel {self.name!r} needs a Metal GPU, but MLX reports none "
                "(set CUNUMPY_FAKE_METAL=1 to run on the emulated Metal device)"
            )
        if math.prod(grid) == 0:
            return
        dev_in = self._device_inputs(arrays, ins_plan)
        self._record_inputs(dev_in)
        dtypes = [np.float32 if p[1] else o.dtype for o, p in zip(outs, outs_plan, strict=True)]
        record("launch", f"MetalKernel {self.name!r}")
        results = self._mlx_call(mx, dev_in, [o.shape for o in outs], dtypes, grid, tg, targs)
        mx.eval(*results)
        self._copy_back([from_mlx(r) for r in results], outs, outs_plan)


def mlx_dtype(dtype: Any) -> Any:
    """MLX's dtype for a NumPy dtype (``np.float32`` -> ``mx.float32``)."""
    mx = _mlx()
    if mx is None:
        raise MetalUnavailableError("MLX is not installed")
    name = np.dtype(dtype).name
    return mx.bool_ if name == "bool" else getattr(mx, name)


def to_mlx(array: np.ndarray) -> Any:
    """A NumPy array copied into an MLX array of the same dtype and shape (the host-to-device
    copy of a call)."""
    mx = _mlx()
    if mx is None:
        raise MetalUnavailableError("MLX is not installed")
    return mx.array(np.ascontiguousarray(array), dtype=mlx_dtype(array.dtype))


def from_mlx(array: Any) -> np.ndarray:
    """An MLX array copied into a NumPy array (the device-to-host copy of a call)."""
    return np.array(array, copy=True)


def _mlx_template_value(mx: Any, kind: str, text: str) -> Any:
    if kind == "bool":
        return text == "true"
    if kind == "int":
        return int(text)
    names = {v: k for k, v in _MSL_NAMES.items()}
    return mlx_dtype(names[text])


_MSL_NAMES = {
    name: msl
    for name in (
        "bool",
        "int8",
        "uint8",
        "int16",
        "uint16",
        "int32",
        "uint32",
        "int64",
        "uint64",
        "float16",
        "float32",
        "complex64",
    )
    if (msl := _core._metal_msl_type(name)) is not None
}


def emulate_metal_kernel(
    kernel: MetalKernel,
    *args: Any,
    out: Any,
    n_threads: int | Sequence[int] | None = None,
    template: Mapping[str, Any] | None = None,
    shuffle_seed: int | None = None,
    bounds: bool = True,
) -> Any:
    """Runs one call of ``kernel`` on the emulated Metal device, whatever
    ``CUNUMPY_FAKE_METAL`` says: the same checks and copies as a call, with the emulator's
    options. ``shuffle_seed`` runs the threads of each threadgroup in a seeded random order,
    switching at barriers, SIMD-group functions and accesses to inputs and outputs, so that a
    kernel with a race gives seed-dependent results; ``bounds`` (on by default) checks every
    access to an input or output against its array. Returns ``out`` like a call."""
    if not isinstance(kernel, MetalKernel):
        raise InvalidArgumentTypeError(
            f"expected a cunumpy.kernels.MetalKernel, got {type(kernel).__name__}"
        )
    arrays, outs, ins_plan, outs_plan, grid, tg = kernel._plan(args, out, n_threads)
    targs = kernel._template(template)
    kernel._run_emulated(
        arrays, outs, ins_plan, outs_plan, grid, tg, targs, bool(bounds), shuffle_seed
    )
    return outs[0] if len(outs) == 1 else outs


_FILE_KEYS = ("inputs", "outputs", "threadgroup", "atomic_outputs", "init_value", "float64")


def metal_kernel_from_file(path: str | os.PathLike[str], name: str) -> MetalKernel:
    """The :class:`MetalKernel` of a kernel folder's ``<name>_metal.metal`` file.

    The file starts with ``//! key: value`` lines: ``inputs`` and ``outputs`` (comma-separated
    names, required; they are host-kernel parameter names), and optionally ``threadgroup``
    (1 to 3 integers), ``atomic_outputs`` (true/false), ``init_value`` (a number) and
    ``float64`` (error/cast). The rest is the kernel body; a line ``//! body`` splits it into
    a header (before) and the body (after).
    """
    text = Path(path).read_text(encoding="utf-8")
    settings: dict[str, str] = {}
    lines = text.splitlines(keepends=True)
    i = 0
    while i < len(lines) and (lines[i].startswith("//!") or not lines[i].strip()):
        line = lines[i][3:].strip() if lines[i].startswith("//!") else ""
        if line == "body":
            break
        if line:
            key, sep, value = line.partition(":")
            if not sep or key.strip() not in _FILE_KEYS:
                raise KernelFolderError(
                    f"{path}: line {i + 1}: expected '//! key: value' with a key of "
                    f"{', '.join(_FILE_KEYS)}, got {lines[i].rstrip()!r}"
                )
            settings[key.strip()] = value.strip()
        i += 1
    rest = "".join(lines[i:])
    header, body = "", rest
    marker = next((j for j in range(i, len(lines)) if lines[j].strip() == "//! body"), None)
    if marker is not None:
        header, body = "".join(lines[i:marker]), "".join(lines[marker + 1 :])
    for key in ("inputs", "outputs"):
        if key not in settings:
            raise KernelFolderError(f"{path}: no '//! {key}: ...' line")

    def names(v: str) -> list[str]:
        return [n.strip() for n in v.split(",") if n.strip()]

    options: dict[str, Any] = {}
    if "threadgroup" in settings:
        try:
            options["threadgroup"] = [int(t) for t in names(settings["threadgroup"])]
        except ValueError:
            raise KernelFolderError(
                f"{path}: threadgroup must be 1 to 3 integers, got {settings['threadgroup']!r}"
            ) from None
    if "atomic_outputs" in settings:
        flag = settings["atomic_outputs"].lower()
        if flag not in _config.TRUE | _config.FALSE:
            raise KernelFolderError(f"{path}: atomic_outputs must be true or false, got {flag!r}")
        options["atomic_outputs"] = flag in _config.TRUE
    if "init_value" in settings:
        try:
            options["init_value"] = float(settings["init_value"])
        except ValueError:
            raise KernelFolderError(
                f"{path}: init_value must be a number, got {settings['init_value']!r}"
            ) from None
    if "float64" in settings:
        options["float64"] = settings["float64"]
    return MetalKernel(
        body,
        names(settings["inputs"]),
        names(settings["outputs"]),
        name=name,
        header=header,
        **options,
    )
