"""``Kernel`` (a host kernel and its optional CUDA version, called the same way) and
``KernelCatalog`` (all kernels of a package, found by folder convention)."""

from __future__ import annotations

import ast
import importlib
import os
import sys
import threading
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from .. import _backend, _core
from .._ledger import record
from ..exceptions import (
    DuplicateKernelError,
    KernelFolderError,
    KernelImplementationError,
    KernelSignatureMismatchError,
    LaunchShapeError,
    MissingCudaKernelError,
)
from . import _profile
from ._cuda_kernel import CudaKernel, compile_kernels
from ._host_impl import (
    CompiledHostKernel,
    HostImplementations,
    get_device_kernel_implementation,
)
from ._pyccel_kernel import (
    PyccelKernel,
    _contains_device,
    _signature_names,
    outputs_from_annotations,
)
from ._vectorcall import use_vectorcall

__all__ = ["Kernel", "KernelCatalog", "FORTRAN_NAME_LIMIT"]

#: Fortran's limit on identifier length; Pyccel names the C binding ``bind_c_<name><suffix>``.
FORTRAN_NAME_LIMIT = 63

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
    and records a ``fallback`` event. Keyword arguments are matched to parameter names.
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
    ) -> None:
        if dispatch not in ("backend", "arrays"):
            raise ValueError(f"dispatch must be 'backend' or 'arrays', got {dispatch!r}")
        if missing_cuda not in ("raise", "fallback"):
            raise ValueError(f"missing_cuda must be 'raise' or 'fallback', got {missing_cuda!r}")
        if cuda_kernel is not None and not isinstance(cuda_kernel, CudaKernel):
            raise TypeError(
                f"cuda_kernel must be a CudaKernel or None, got {type(cuda_kernel).__name__}"
            )
        if isinstance(host_kernel, PyccelKernel):
            if host_options:
                raise ValueError(
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
            raise TypeError(f"host_kernel must be callable, got {type(host_kernel).__name__}")
        self._name = name or (cuda_kernel.name if cuda_kernel is not None else self._host.name)
        self._cuda = cuda_kernel
        self._missing_cuda = missing_cuda
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
    def missing_cuda(self) -> str:
        return self._missing_cuda

    @property
    def cuda_path(self) -> str | None:
        return self._cuda_path

    @property
    def dispatch(self) -> str:
        return self._dispatch

    @property
    def implementations(self) -> tuple[str, ...]:
        """The host implementations (``("host",)`` for a plain host kernel), plus ``"cuda"``."""
        kernel = self._host.kernel
        host = kernel.names if isinstance(kernel, HostImplementations) else ("host",)
        return (*host, "cuda") if self._cuda is not None else host

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
        return (
            f"Kernel(name={self._name!r}, cuda={self._cuda is not None}, "
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
            raise TypeError(
                f"kernel {self._name!r}: keyword arguments {sorted(kwargs)} cannot be matched: "
                "the parameter names are unknown (pass them positionally)"
            )
        for key in kwargs:
            if key not in names:
                raise TypeError(
                    f"kernel {self._name!r} got an unexpected keyword argument {key!r} "
                    f"(parameters: {', '.join(names)})"
                )
            if names.index(key) < len(args):
                raise TypeError(f"kernel {self._name!r} got multiple values for argument {key!r}")
        bound = list(args)
        remaining = dict(kwargs)
        for name in names[len(args) :]:
            if not remaining:
                break
            if name not in remaining:
                raise TypeError(
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
                return self._fallback(args)
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
        host: Callable[..., Any] = self._host
        if self._dispatch == "arrays" and self._host.use_cupy is not True:
            host = self._host.kernel  # host data: no conversion to look for
        if _profile.active:
            return _profile.timed_call(self._name, "host", host, args, {})
        return host(*args)

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
            self._missing()
        return self._host

    def selected(self, device: bool = False) -> str:
        """The implementation a host call runs now (``"host"`` for a plain host kernel, else
        the chosen one of pyccel, numba, numpy, python); with ``device=True`` ``"cuda"`` or
        ``"host"`` (the fallback)."""
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
        **cuda_options: Any,
    ) -> Kernel:
        """The kernel of folder ``package`` (an importable package ``.../<name>/``):
        ``<name><host_suffix>.py`` defines the host function ``<name>`` (the ``python``
        implementation, and the ``pyccel`` one through ``compile_host``, for example a
        :class:`PyccelCache` or ``"pyccel"``); optional ``<name>_numba.py`` and
        ``<name>_numpy.py`` give ``numba`` and ``numpy``; optional ``<name><cuda_suffix>`` gives
        the CUDA kernel ``<name>``; optional ``<name><test_args_suffix>.py`` the parity test
        arguments. Nothing is compiled here."""
        pkg = importlib.import_module(package) if isinstance(package, str) else package
        if not hasattr(pkg, "__path__"):
            raise ModuleNotFoundError(f"{pkg.__name__} is not a package (kernel folder)")
        folder = Path(next(iter(pkg.__path__)))
        name = pkg.__name__.rsplit(".", 1)[-1]
        host_file = folder / f"{name}{host_suffix}.py"
        if not host_file.is_file():
            raise KernelFolderError(
                f"kernel folder {folder} has no host kernel {name}{host_suffix}.py"
            )
        if check_name_length and len(f"bind_c_{name}{host_suffix}") > FORTRAN_NAME_LIMIT:
            warnings.warn(
                f"kernel name {name!r}: bind_c_{name}{host_suffix} is longer than Fortran's "
                f"{FORTRAN_NAME_LIMIT} characters; Pyccel's Fortran build may fail",
                UserWarning,
                stacklevel=2,
            )
        host_module = importlib.import_module(f"{pkg.__name__}.{name}{host_suffix}")
        python = getattr(host_module, name, None)
        if python is None:
            raise KernelFolderError(
                f"kernel folder {folder}: {host_file.name} defines no function {name!r}"
            )
        loaders: dict[str, Callable[[], Callable[..., Any]]] = {"python": lambda: python}
        if compile_host is not None:
            compiler = _compiler(compile_host)
            loaders["pyccel"] = lambda: _compiled(host_module, name, compiler)
        for impl in ("numba", "numpy"):
            if (folder / f"{name}_{impl}.py").is_file():
                loaders[impl] = _module_loader(f"{pkg.__name__}.{name}_{impl}", name)
        loaders.update(extra_implementations or {})
        implementations = HostImplementations(name, loaders)

        options = dict(host_options or {})
        if outputs is not None and "outputs" not in options:
            if isinstance(outputs, str):
                if outputs != "annotations":
                    raise ValueError(
                        f"kernel {name!r}: outputs must be names, indices or 'annotations', "
                        f"got {outputs!r}"
                    )
                options["outputs"] = outputs_from_annotations(python)
            else:
                options["outputs"] = tuple(outputs)

        cuda_file = folder / f"{name}{cuda_suffix}"
        cuda = None
        if cuda_file.is_file():
            dirs = include_dirs if include_dirs is not None else (_source_root(pkg),)
            cuda = CudaKernel.from_file(
                cuda_file, name, suffix=cuda_suffix, include_dirs=tuple(dirs), **cuda_options
            )
        test_args = None
        if (folder / f"{name}{test_args_suffix}.py").is_file():
            test_args = f"{pkg.__name__}.{name}{test_args_suffix}"
        return cls(
            implementations,
            cuda,
            name=name,
            missing_cuda=missing_cuda,
            cuda_path=cuda_file,
            host_options=options,
            dispatch=dispatch,
            test_args=test_args,
        )


def _compiler(compile_host: Callable[[ModuleType], Any] | str) -> Callable[[ModuleType], Any]:
    if compile_host == "pyccel":
        from ._pyccel_cache import PyccelCache

        return PyccelCache("cunumpy")
    if not callable(compile_host):
        raise TypeError(
            f"compile_host must be a callable (module -> compiled module) or 'pyccel', "
            f"got {compile_host!r}"
        )
    return compile_host


def _compiled(module: ModuleType, name: str, compiler: Callable[[ModuleType], Any]) -> Any:
    chk = CompiledHostKernel(module, name, compiler)
    compiled = chk.build()
    if compiled is None:
        raise chk.error if chk.error is not None else RuntimeError(f"{name}: compile failed")
    return compiled


def _module_loader(module_name: str, name: str) -> Callable[[], Callable[..., Any]]:
    def load() -> Callable[..., Any]:
        return getattr(importlib.import_module(module_name), name)

    return load


def _source_root(pkg: ModuleType) -> str:
    top = sys.modules[pkg.__name__.split(".", 1)[0]]
    return str(Path(next(iter(top.__path__))).parent)


def _stub_parameters(kernel: Any) -> tuple[str, ...] | None:
    """Parameter names from a ``.pyi`` stub next to a compiled module (Pyccel writes one)."""
    module = sys.modules.get(getattr(kernel, "__module__", None) or "")
    file = getattr(module, "__file__", None)
    name = getattr(kernel, "__name__", None)
    if file is None or name is None:
        return None
    folder, stem = Path(file).parent, Path(file).name.split(".", 1)[0]
    for stub in (folder / "__pyccel__" / f"{stem}.pyi", folder / f"{stem}.pyi"):
        if stub.is_file():
            for node in ast.walk(ast.parse(stub.read_text())):
                if isinstance(node, ast.FunctionDef) and node.name == name:
                    return tuple(a.arg for a in (*node.args.posonlyargs, *node.args.args))
    return None


class KernelCatalog(Mapping[str, Kernel]):
    """The kernels of a code base by name (a read-only mapping), usually from
    :meth:`from_package`. ``summary()`` says how many have a CUDA version."""

    def __init__(self, kernels: Iterable[Kernel] | Mapping[str, Kernel] | None = None) -> None:
        self._kernels: dict[str, Kernel] = {}
        if isinstance(kernels, Mapping):
            for name, kernel in kernels.items():
                self.register(kernel, name)
        else:
            for kernel in kernels or ():
                self.register(kernel)

    def register(self, kernel: Kernel, name: str | None = None) -> Kernel:
        """Adds ``kernel`` (under ``name``, default its own); a name can be registered once."""
        if not isinstance(kernel, Kernel):
            raise TypeError(f"expected a Kernel, got {type(kernel).__name__}")
        key = name or kernel.name
        if key in self._kernels:
            raise DuplicateKernelError(f"a kernel named {key!r} is already registered")
        self._kernels[key] = kernel
        return kernel

    @classmethod
    def from_package(
        cls,
        package: str | ModuleType,
        *,
        host_suffix: str = "_kernels",
        host_options: Mapping[str, Any] | Callable[[str], Mapping[str, Any] | None] | None = None,
        outputs: Any = None,
        host_fallback: Mapping[str, Callable[..., Any]]
        | Callable[[str], Callable[..., Any] | None]
        | None = None,
        **options: Any,
    ) -> KernelCatalog:
        """Every kernel folder of ``package``: its subfolders ``<name>/`` (sorted) that hold
        ``<name><host_suffix>.py``, each loaded with :meth:`Kernel.from_folder` and the same
        options. ``host_options`` and ``outputs`` may be functions of the kernel name;
        ``host_fallback`` (a mapping or a function of the name) gives a ``numpy``
        implementation."""
        pkg = importlib.import_module(package) if isinstance(package, str) else package
        if not hasattr(pkg, "__path__"):
            raise ModuleNotFoundError(f"{pkg.__name__} is not a package")
        root = Path(next(iter(pkg.__path__)))
        catalog = cls()
        base_extra = dict(options.pop("extra_implementations", None) or {})
        for folder in sorted(p for p in root.iterdir() if p.is_dir()):
            name = folder.name
            if not (folder / f"{name}{host_suffix}.py").is_file():
                continue
            extra = dict(base_extra)
            fallback = (
                host_fallback.get(name)
                if isinstance(host_fallback, Mapping)
                else host_fallback(name)
                if callable(host_fallback)
                else None
            )
            if fallback is not None:
                extra["numpy"] = _constant(fallback)
            catalog.register(
                Kernel.from_folder(
                    f"{pkg.__name__}.{name}",
                    host_suffix=host_suffix,
                    host_options=host_options(name) if callable(host_options) else host_options,
                    outputs=outputs(name) if callable(outputs) else outputs,
                    extra_implementations=extra,
                    **options,
                )
            )
        return catalog

    # -- Mapping -------------------------------------------------------------------------------
    def __getitem__(self, name: str) -> Kernel:
        return self._kernels[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._kernels)

    def __len__(self) -> int:
        return len(self._kernels)

    def __getattr__(self, name: str) -> Kernel:
        kernels = self.__dict__.get("_kernels", {})
        if name in kernels:
            return kernels[name]
        raise AttributeError(f"KernelCatalog has no kernel or attribute {name!r}")

    # -- questions ------------------------------------------------------------------------------
    @property
    def with_cuda(self) -> list[str]:
        """Names of the kernels that have a CUDA version."""
        return [n for n, k in self._kernels.items() if k.has_cuda]

    @property
    def without_cuda(self) -> list[str]:
        """Names of the kernels still without a CUDA version."""
        return [n for n, k in self._kernels.items() if not k.has_cuda]

    def summary(self, max_missing: int = 10) -> str:
        """``CUDA kernels: 1 of 3 (missing: b, c)``; at most ``max_missing`` names, then
        ``...``."""
        text = f"CUDA kernels: {len(self.with_cuda)} of {len(self)}"
        missing = self.without_cuda
        if missing:
            shown = missing[:max_missing] + (["..."] if len(missing) > max_missing else [])
            text += f" (missing: {', '.join(shown)})"
        return text

    def __str__(self) -> str:
        return self.summary()

    def __repr__(self) -> str:
        return f"KernelCatalog({len(self)} kernels, {len(self.without_cuda)} without CUDA)"

    def parity_cases(self) -> list[tuple[str, Kernel]]:
        """``(name, kernel)`` for every kernel with a CUDA version."""
        return [(n, k) for n, k in self._kernels.items() if k.has_cuda]

    def check_signatures(self) -> None:
        """Checks every kernel; one ``ValueError`` lists all parameter mismatches."""
        problems = []
        for kernel in self._kernels.values():
            try:
                kernel.check_signature()
            except KernelSignatureMismatchError as exc:
                problems.append(str(exc))
        if problems:
            raise KernelSignatureMismatchError(
                "host and CUDA kernels take different parameters:\n  " + "\n  ".join(problems)
            )

    def compile_all(self, jobs: int | None = None, *, progress: bool | None = None) -> list[str]:
        """Compiles every CUDA kernel, ``jobs`` at a time (default: one per CPU; compiles run in
        Rust without the GIL), and returns their names. Every kernel is tried; one
        ``CudaCompileError`` lists all failures. A progress bar is drawn on stderr when it is a
        terminal (``progress`` forces it on or off)."""
        kernels = {n: k.cuda_kernel for n, k in self._kernels.items() if k.cuda_kernel is not None}
        if progress is None:
            progress = bool(kernels) and sys.stderr.isatty()
        if not progress:
            return compile_kernels(kernels, jobs=jobs)  # type: ignore[arg-type]
        bar = _ProgressBar(len(kernels))
        ticking = {n: _Ticking(k, bar) for n, k in kernels.items()}
        try:
            return compile_kernels(ticking, jobs=jobs)  # type: ignore[arg-type]
        finally:
            bar.close()


def _constant(fn: Callable[..., Any]) -> Callable[[], Callable[..., Any]]:
    return lambda: fn


class _ProgressBar:
    def __init__(self, total: int, stream: Any = None) -> None:
        self.total = total
        self.done = 0
        self.stream = stream or sys.stderr
        self._lock = threading.Lock()
        self._draw()

    def _draw(self) -> None:
        width = 30
        filled = width * self.done // max(self.total, 1)
        self.stream.write(
            f"\rcompiling CUDA kernels [{'#' * filled}{'.' * (width - filled)}] "
            f"{self.done}/{self.total}"
        )
        self.stream.flush()

    def tick(self) -> None:
        with self._lock:
            self.done += 1
            self._draw()

    def close(self) -> None:
        self.stream.write("\n")
        self.stream.flush()


class _Ticking:
    """A CUDA kernel whose ``compile()`` advances a progress bar, whether it succeeds or not."""

    def __init__(self, kernel: CudaKernel, bar: _ProgressBar) -> None:
        self.kernel = kernel
        self.bar = bar

    def compile(self) -> CudaKernel:
        try:
            return self.kernel.compile()
        finally:
            self.bar.tick()
