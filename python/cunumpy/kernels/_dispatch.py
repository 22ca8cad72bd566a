"""``Kernel``: a host kernel and its optional CUDA version, called the same way (dispatch by
backend and argument). Folders of kernels are found by ``_discovery.py``, packages of them
gathered by ``_catalog.py``."""

from __future__ import annotations

import importlib
import os
import sys
import threading
import warnings
from collections.abc import Callable, Mapping, Sequence
from types import ModuleType
from typing import Any

import numpy as np

from .. import _backend, _capture, _core
from .._ledger import record
from ..exceptions import (
    InvalidArgumentError,
    InvalidArgumentTypeError,
    KernelImplementationError,
    KernelSignatureMismatchError,
    LaunchShapeError,
    MissingCudaKernelError,
)
from . import _profile
from ._cuda_kernel import CudaKernel
from ._discovery import kernel_from_folder
from ._host_impl import (
    CompiledHostKernel,
    HostImplementations,
    get_device_kernel_implementation,
)
from ._kernel_args import _contains_device, _signature_names, _stub_parameters
from ._metal_kernel import MetalKernel
from ._pyccel_kernel import PyccelKernel
from ._vectorcall import use_vectorcall

__all__ = ["Kernel"]

#: The backend state, read directly on the call path (what ``_backend.get_backend()`` returns,
#: without the function call).
_BACKEND_STATE = _backend._state
_HOST_TYPES = (np.ndarray, float, int, bool, np.float64, np.int64, np.bool_, str, type(None))
_MISSING = object()


def _is_device_arg(value: Any, cupy: Any) -> bool:
    if isinstance(value, _HOST_TYPES):
        return False
    if isinstance(value, cupy.ndarray):
        return True
    if callable(getattr(type(value), "__cuda_args__", None)):
        return True
    if isinstance(value, (tuple, list, dict)):
        return _contains_device(value, (), set())
    return False


@use_vectorcall
class Kernel(_core.KernelDispatcher):
    """A host kernel plus, optionally, its CUDA version, called with the same arguments.

    ``Kernel(host_kernel, cuda_kernel=None, *, name=None, missing_cuda="raise",
    cuda_path=None, host_options=None, dispatch="backend", test_args=None)``

    ``host_kernel`` is a :class:`PyccelKernel` or any callable (wrapped in one with
    ``**host_options``). A call ``kernel(*args, n_threads=None, grid=None, block=None,
    shared_mem=0, stream=None, **kernel_keywords)`` runs the CUDA kernel on the device side and
    the host kernel on the host side; the side is the backend (``dispatch="backend"``) or where
    the arguments live (``dispatch="arrays"``: a device array anywhere in the arguments, or an
    object with ``__cuda_args__``). On the device side without a CUDA version,
    ``missing_cuda="raise"`` raises ``NotImplementedError`` naming the expected ``.cu`` file and
    ``"fallback"`` runs the host kernel through :class:`PyccelKernel` (host copies), warns once
    and records a ``fallback`` event, and ``"generate"`` translates the host kernel's Python
    source into a CUDA version on the first device-side call (:func:`generate_cuda`; a kernel
    it refuses raises its :class:`~cunumpy.exceptions.CudaPortError`, naming the line and the
    construct), kept for later calls and shown by :attr:`generated_cuda`. Keyword arguments
    are matched to parameter names.

    ``metal_kernel`` (keyword only) is an optional :class:`MetalKernel` version whose input and
    output names are host-kernel parameter names; with the device kernel implementation
    ``"metal"`` (``set_device_kernel_implementation("metal")`` or
    ``CUNUMPY_DEVICE_KERNEL_IMPLEMENTATION=metal``) a call on the host side runs it instead of
    the host kernel, with ``n_threads`` as its grid (``metal_path`` names its source file).
    """

    def __init__(
        self,
        host_kernel: Any,
        cuda_kernel: CudaKernel | None = None,
        *,
        name: str | None = None,
        missing_cuda: str = "raise",
        cuda_path: str | os.PathLike[str] | None = None,
        host_options: Mapping[str, Any] | None = None,
        dispatch: str = "backend",
        test_args: str | ModuleType | None = None,
        metal_kernel: MetalKernel | None = None,
        metal_path: str | os.PathLike[str] | None = None,
    ) -> None:
        if metal_kernel is not None and not isinstance(metal_kernel, MetalKernel):
            raise InvalidArgumentTypeError(
                f"metal_kernel must be a MetalKernel or None, got {type(metal_kernel).__name__}"
            )
        if dispatch not in ("backend", "arrays"):
            raise InvalidArgumentError(f"dispatch must be 'backend' or 'arrays', got {dispatch!r}")
        if missing_cuda not in ("raise", "fallback", "generate"):
            raise InvalidArgumentError(
                f"missing_cuda must be 'raise', 'fallback' or 'generate', got {missing_cuda!r}"
            )
        if cuda_kernel is not None and not isinstance(cuda_kernel, CudaKernel):
            raise InvalidArgumentTypeError(
                f"cuda_kernel must be a CudaKernel or None, got {type(cuda_kernel).__name__}"
            )
        if isinstance(host_kernel, PyccelKernel):
            if host_options:
                raise InvalidArgumentError(
                    "host_options are for wrapping a plain callable in a PyccelKernel; "
                    "the host kernel already is one (pass the options to it)"
                )
            self._host = host_kernel
            self._own_parameters = host_kernel._parameters is None
            if self._own_parameters:
                host_kernel._parameters = self.host_parameters
        elif callable(host_kernel):
            options = dict(host_options or {})
            options.setdefault("parameters", self.host_parameters)
            self._own_parameters = options["parameters"] == self.host_parameters
            self._host = PyccelKernel(host_kernel, **options)
        else:
            raise InvalidArgumentTypeError(
                f"host_kernel must be callable, got {type(host_kernel).__name__}"
            )
        self._name = name or (cuda_kernel.name if cuda_kernel is not None else self._host.name)
        self._cuda = cuda_kernel
        self._metal = metal_kernel
        self._metal_path = str(metal_path) if metal_path is not None else None
        self._missing_cuda = missing_cuda
        self._generated: Any = None
        self._cuda_path = str(cuda_path) if cuda_path is not None else None
        self._dispatch = dispatch
        self._by_backend = dispatch == "backend"
        self._test_args_ref = test_args
        self._warned = False
        self._warn_lock = threading.Lock()
        self._names: tuple[str, ...] | None | object = _MISSING
        if self._by_backend and cuda_kernel is not None:
            # calls on the CuPy backend with at most n_threads= launch from Rust directly
            self._enable_fast_path(cuda_kernel, _BACKEND_STATE)

    # -- properties ---------------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self._name

    @property
    def host_kernel(self) -> PyccelKernel:
        return self._host

    @property
    def cuda_kernel(self) -> CudaKernel | None:
        return self._cuda

    @property
    def has_cuda(self) -> bool:
        return self._cuda is not None

    @property
    def metal_kernel(self) -> MetalKernel | None:
        """The Metal version, or ``None``."""
        return self._metal

    @property
    def has_metal(self) -> bool:
        """Whether the kernel has a Metal version."""
        return self._metal is not None

    @property
    def metal_path(self) -> str | None:
        """The Metal version's source file (``<name>_metal.metal`` in a kernel folder)."""
        return self._metal_path

    @property
    def missing_cuda(self) -> str:
        return self._missing_cuda

    @property
    def generated_cuda(self) -> Any:
        """The :class:`~cunumpy.kernels.GeneratedCuda` source of a CUDA version generated by
        ``missing_cuda="generate"`` (``None`` before the first device-side call, or when the
        CUDA version was written by hand)."""
        return self._generated

    def _translate(self) -> Any:
        """The host kernel's Python source translated (:func:`generate_cuda`)."""
        from ._generate import generate_cuda

        kernel = self._host.kernel
        if isinstance(kernel, HostImplementations):
            kernel = kernel.python
        return generate_cuda(kernel)

    def _keep_generated(self, src: Any, cuda: CudaKernel) -> None:
        """Keeps ``cuda`` (built from ``src``) as the CUDA version, for the fast path too (which
        is set once: the reason :meth:`tune` must come first)."""
        self._cuda = cuda
        self._generated = src
        if self._by_backend:
            self._enable_fast_path(cuda, _BACKEND_STATE)

    def _generate(self) -> CudaKernel:
        """The CUDA version translated from the host kernel (``missing_cuda="generate"``)."""
        with self._warn_lock:
            if self._cuda is None:
                src = self._translate()
                self._keep_generated(src, src.cuda_kernel())
        return self._cuda

    def tune(self, *args: Any, repeats: int = 5, **launch: Any) -> CudaKernel:
        """Generates the CUDA version (``missing_cuda="generate"``) as the fastest of its
        candidate builds on ``args`` and keeps it for every later call: see
        :meth:`GeneratedCuda.tuned_kernel` (``args`` positional, as the kernel takes them; the
        arrays it writes are put back, so they end as they began; ``launch``: a call's launch
        keywords, e.g. ``n_threads=``). Call it once, before the kernel's first device-side
        call, on data of the size you run; :attr:`generated_cuda` ``.tuning`` says which build
        was chosen. Returns that ``CudaKernel``."""
        with self._warn_lock:
            if self._cuda is not None:
                how = (
                    "is already generated and in use: call tune() before its first device-side call"
                    if self._generated is not None
                    else "was written by hand (tune() chooses among builds of a generated one)"
                )
                raise InvalidArgumentError(f"kernel {self._name!r}: its CUDA version {how}")
            if self._missing_cuda != "generate":
                raise InvalidArgumentError(
                    f"kernel {self._name!r}: tune() builds a generated CUDA version; expected "
                    f"missing_cuda='generate', got missing_cuda={self._missing_cuda!r}"
                )
            src = self._translate()
            cuda = src.tuned_kernel(*args, repeats=repeats, launch=launch or None)
            self._keep_generated(src, cuda)
        return cuda

    @property
    def cuda_path(self) -> str | None:
        return self._cuda_path

    @property
    def dispatch(self) -> str:
        return self._dispatch

    @property
    def implementations(self) -> tuple[str, ...]:
        """The host implementations (``("host",)`` for a plain host kernel), plus ``"cuda"``
        and ``"metal"`` when the kernel has those versions."""
        kernel = self._host.kernel
        host = kernel.names if isinstance(kernel, HostImplementations) else ("host",)
        device = ("cuda",) if self._cuda is not None else ()
        if self._metal is not None:
            device = (*device, "metal")
        return (*host, *device)

    @property
    def test_args_module(self) -> str | None:
        ref = self._test_args_ref
        return ref.__name__ if isinstance(ref, ModuleType) else ref

    @property
    def test_args(self) -> ModuleType | None:
        """The ``<name>_test_args`` module (imported on first use), or ``None``."""
        ref = self._test_args_ref
        if isinstance(ref, str):
            ref = self._test_args_ref = importlib.import_module(ref)
        return ref

    def __repr__(self) -> str:
        metal = ", metal=True" if self._metal is not None else ""
        return (
            f"Kernel(name={self._name!r}, cuda={self._cuda is not None}{metal}, "
            f"missing_cuda={self._missing_cuda!r})"
        )

    # -- parameters ---------------------------------------------------------------------------
    def host_parameters(self) -> tuple[str, ...] | None:
        """The host kernel's parameter names: its Python signature, else the stub that Pyccel
        writes next to a compiled module; ``None`` when neither exists."""
        kernel = self._host.kernel
        if not self._own_parameters:
            return self._host.parameters
        names = _signature_names(kernel)
        if names is None and isinstance(kernel, CompiledHostKernel):
            names = _signature_names(kernel.python)
        if names is None:
            names = _stub_parameters(kernel)
        if names is None and isinstance(kernel, HostImplementations):
            # its "python" implementation may be the Pyccel-compiled module's builtin (a
            # package compiled in place): the stub next to that module names the parameters
            try:
                names = _stub_parameters(kernel.python)
            except LookupError:
                names = None
        return names

    def _parameter_names(self) -> tuple[str, ...] | None:
        if self._names is _MISSING:
            names = self.host_parameters()
            if names is None and self._cuda is not None and self._cuda.signature is not None:
                names = tuple(p.name for p in self._cuda.signature)
            self._names = names
        return self._names  # type: ignore[return-value]

    def _bind(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
        names = self._parameter_names()
        if names is None:
            raise InvalidArgumentTypeError(
                f"kernel {self._name!r}: keyword arguments {sorted(kwargs)} cannot be matched: "
                "the parameter names are unknown (pass them positionally)"
            )
        for key in kwargs:
            if key not in names:
                raise InvalidArgumentTypeError(
                    f"kernel {self._name!r} got an unexpected keyword argument {key!r} "
                    f"(parameters: {', '.join(names)})"
                )
            if names.index(key) < len(args):
                raise InvalidArgumentTypeError(
                    f"kernel {self._name!r} got multiple values for argument {key!r}"
                )
        bound = list(args)
        remaining = dict(kwargs)
        for name in names[len(args) :]:
            if not remaining:
                break
            if name not in remaining:
                raise InvalidArgumentTypeError(
                    f"kernel {self._name!r}: missing argument {name!r} before the keyword "
                    f"argument(s) {sorted(remaining)}"
                )
            bound.append(remaining.pop(name))
        return tuple(bound)

    # -- calling ------------------------------------------------------------------------------
    def _device_side(self, args: tuple[Any, ...]) -> bool:
        if self._dispatch == "backend":
            return _BACKEND_STATE["backend"] == "cupy"
        cupy = sys.modules.get("cupy")
        if cupy is None:
            return False
        device_array = cupy.ndarray
        for a in args:
            if type(a) is device_array or _is_device_arg(a, cupy):
                return True
        return False

    def _call_slow(
        self,
        *args: Any,
        n_threads: Any = None,
        grid: Any = None,
        block: Any = None,
        shared_mem: int = 0,
        stream: Any = None,
        **kwargs: Any,
    ) -> Any:
        # Every call the Rust fast path (_core.KernelDispatcher.__call__) does not take: the
        # host path, fallbacks, keywords other than n_threads, profiles.
        if kwargs:
            args = self._bind(args, kwargs)
        if _BACKEND_STATE["backend"] == "cupy" if self._by_backend else self._device_side(args):
            cuda = self._cuda
            if cuda is None:
                if self._missing_cuda != "generate":
                    return self._fallback(args)
                cuda = self._generate()
            if n_threads is None and grid is None and cuda._n_threads_from is None:
                raise LaunchShapeError(
                    f"{self._name}: n_threads is required to launch the CUDA kernel (or grid=; "
                    "its CudaKernel has n_threads_from=None)"
                )
            if _profile.active:
                launch = {
                    "n_threads": n_threads,
                    "grid": grid,
                    "block": block,
                    "shared_mem": shared_mem,
                    "stream": stream,
                }
                return _profile.timed_call(self._name, "cuda", cuda, args, launch)
            if grid is None and block is None and stream is None and not shared_mem:
                if n_threads is None:
                    return cuda(*args)
                return cuda(*args, n_threads=n_threads)
            return cuda(
                *args,
                n_threads=n_threads,
                grid=grid,
                block=block,
                shared_mem=shared_mem,
                stream=stream,
            )
        if self._metal is not None and get_device_kernel_implementation() == "metal":
            if _profile.active:
                return _profile.timed_call(
                    self._name, "metal", self._call_metal, (args, n_threads), {}
                )
            return self._call_metal(args, n_threads)
        host: Callable[..., Any] = self._host
        if self._dispatch == "arrays" and self._host.use_cupy is not True:
            host = self._host.kernel  # host data: no conversion to look for
        if _capture.open_captures:
            _capture.refuse(
                f"kernel {self._name!r} on host data (its host version)",
                "a graph replays device work only; pass device arrays or call it outside the "
                "captured step",
            )
        if _profile.active:
            return _profile.timed_call(self._name, "host", host, args, {})
        return host(*args)

    def _call_metal(self, args: tuple[Any, ...], n_threads: Any) -> Any:
        """The Metal version with the host call's arguments: its inputs and outputs are the
        arguments of the host parameters of those names."""
        metal = self._metal
        assert metal is not None
        names = self._parameter_names()
        if names is None:
            raise KernelImplementationError(
                f"kernel {self._name!r}: its Metal version cannot be called, the host "
                "kernel's parameter names are unknown"
            )
        by_name = dict(zip(names, args, strict=False))
        missing = [n for n in (*metal.inputs, *metal.outputs) if n not in by_name]
        if missing:
            raise KernelImplementationError(
                f"kernel {self._name!r}: the Metal version's names {missing} are not "
                f"arguments of this call (host parameters: {', '.join(names)})"
            )
        outs = tuple(by_name[n] for n in metal.outputs)
        metal(*(by_name[n] for n in metal.inputs), out=outs, n_threads=n_threads)
        return None

    def _missing(self) -> None:
        if get_device_kernel_implementation() == "cuda":
            raise KernelImplementationError(
                f"kernel {self._name!r} has no 'cuda' implementation (explicitly selected by "
                "set_device_kernel_implementation('cuda') or "
                "CUNUMPY_DEVICE_KERNEL_IMPLEMENTATION), so it cannot fall back to the host"
            )
        if self._missing_cuda == "raise":
            expected = self._cuda_path or f"{self._name}_cuda.cu"
            raise MissingCudaKernelError(
                f"No CUDA version of kernel {self._name!r} (expected {expected})."
            )

    def _fallback(self, args: tuple[Any, ...]) -> Any:
        self._missing()
        if _capture.open_captures:
            _capture.refuse(
                f"kernel {self._name!r} (no CUDA version: its host fallback)",
                "a graph replays device work only; write its CUDA version or call it outside "
                "the captured step",
            )
        if not self._warned:
            with self._warn_lock:
                if not self._warned:
                    self._warned = True
                    warnings.warn(
                        f"kernel {self._name!r} has no CUDA version; running its host version "
                        "with copies to the host and back (missing_cuda='fallback')",
                        RuntimeWarning,
                        stacklevel=3,
                    )
        record("fallback", f"kernel {self._name!r}: no CUDA version, ran the host kernel")
        if _profile.active:
            return _profile.timed_call(
                self._name, "fallback", self._host.call_converted, (args, {}), {}
            )
        return self._host.call_converted(args, {})

    def get_kernel(self) -> Callable[..., Any]:
        """The callable the active backend runs (the CudaKernel, or the host PyccelKernel);
        raises as a call would when the device side has no CUDA version. Call it at setup to
        fail early."""
        if _backend.get_backend() == "cupy":
            if self._cuda is not None:
                return self._cuda
            if self._missing_cuda == "generate":
                return self._generate()
            self._missing()
        return self._host

    def selected(self, device: bool = False) -> str:
        """The implementation a host call runs now (``"host"`` for a plain host kernel, else
        the chosen one of pyccel, numba, numpy, python, or ``"metal"`` when the device
        implementation ``"metal"`` is chosen and the kernel has a Metal version); with
        ``device=True`` ``"cuda"`` or ``"host"`` (the fallback)."""
        if not device and self._metal is not None and get_device_kernel_implementation() == "metal":
            return "metal"
        if device:
            return "cuda" if self._cuda is not None else "host"
        kernel = self._host.kernel
        if isinstance(kernel, HostImplementations):
            return kernel.selected()
        return "host"

    def compile(self) -> bool:
        """Compiles the CUDA version now; returns whether there was one."""
        if self._cuda is None:
            return False
        self._cuda.compile()
        return True

    def check_signature(self) -> None:
        """Raises ``ValueError`` when a host implementation and the CUDA kernel take differently
        named parameters; a side without a readable signature is skipped."""
        if self._cuda is None or self._cuda.signature is None:
            return
        cuda_names = tuple(p.name for p in self._cuda.signature)
        sides: list[tuple[str, tuple[str, ...] | None]] = [("host kernel", self.host_parameters())]
        kernel = self._host.kernel
        if isinstance(kernel, HostImplementations):
            for impl in ("numba", "numpy"):
                if impl in kernel.names and kernel.available(impl):
                    sides.append((f"{impl} implementation", _signature_names(kernel.get(impl))))
        for side, names in sides:
            if names is not None and tuple(names) != cuda_names:
                raise KernelSignatureMismatchError(
                    f"kernel {self._name!r}: the {side} takes ({', '.join(names)}), "
                    f"the CUDA kernel ({', '.join(cuda_names)})"
                )

    # -- construction from a folder ------------------------------------------------------------
    @classmethod
    def from_folder(
        cls,
        package: str | ModuleType,
        *,
        host_suffix: str = "_kernels",
        cuda_suffix: str = "_cuda.cu",
        test_args_suffix: str = "_test_args",
        check_name_length: bool = True,
        missing_cuda: str = "raise",
        host_options: Mapping[str, Any] | None = None,
        outputs: Any = None,
        include_dirs: Sequence[str | os.PathLike[str]] | None = None,
        dispatch: str = "backend",
        compile_host: Callable[[ModuleType], Any] | str | None = None,
        extra_implementations: Mapping[str, Callable[[], Callable[..., Any]]] | None = None,
        metal_suffix: str = "_metal.metal",
        **cuda_options: Any,
    ) -> Kernel:
        """The kernel of folder ``package`` (an importable package ``.../<name>/``):
        ``<name><host_suffix>.py`` defines the host function ``<name>`` (the ``python``
        implementation, and the ``pyccel`` one through ``compile_host``, for example a
        :class:`PyccelCache` or ``"pyccel"``); optional ``<name>_numba.py`` and
        ``<name>_numpy.py`` give ``numba`` and ``numpy``; optional ``<name><cuda_suffix>`` gives
        the CUDA kernel ``<name>``; optional ``<name><metal_suffix>`` the Metal version (see
        the guide "Metal kernels on Apple silicon"); optional ``<name><test_args_suffix>.py``
        the parity test arguments. Nothing is compiled here."""
        return kernel_from_folder(
            cls,
            package,
            host_suffix=host_suffix,
            cuda_suffix=cuda_suffix,
            test_args_suffix=test_args_suffix,
            check_name_length=check_name_length,
            missing_cuda=missing_cuda,
            host_options=host_options,
            outputs=outputs,
            include_dirs=include_dirs,
            dispatch=dispatch,
            compile_host=compile_host,
            extra_implementations=extra_implementations,
            metal_suffix=metal_suffix,
            **cuda_options,
        )
