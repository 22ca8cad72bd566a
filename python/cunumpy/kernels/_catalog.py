"""``KernelCatalog``: all kernels of a package, found by folder convention, with a progress
bar for compiling them all."""

from __future__ import annotations

import importlib
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

from ..exceptions import (
    DuplicateKernelError,
    InvalidArgumentTypeError,
    KernelPackageError,
    KernelSignatureMismatchError,
)
from ._cuda_kernel import CudaKernel, compile_kernels
from ._dispatch import Kernel

__all__ = ["KernelCatalog"]


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
            raise InvalidArgumentTypeError(f"expected a Kernel, got {type(kernel).__name__}")
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
            raise KernelPackageError(f"{pkg.__name__} is not a package")
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

    @property
    def with_metal(self) -> list[str]:
        """Names of the kernels that have a Metal version."""
        return [n for n, k in self._kernels.items() if k.has_metal]

    def summary(self, max_missing: int = 10) -> str:
        """``CUDA kernels: 1 of 3 (missing: b, c)``; at most ``max_missing`` names, then
        ``...``. When some kernel has a Metal version, ``; Metal kernels: 1 of 3 (missing:
        a, c)`` follows."""
        text = f"CUDA kernels: {len(self.with_cuda)} of {len(self)}"
        text += _missing(self.without_cuda, max_missing)
        metal = self.with_metal
        if metal:
            text += f"; Metal kernels: {len(metal)} of {len(self)}"
            text += _missing([n for n in self._kernels if n not in metal], max_missing)
        return text

    def __str__(self) -> str:
        return self.summary()

    def __repr__(self) -> str:
        return f"KernelCatalog({len(self)} kernels, {len(self.without_cuda)} without CUDA)"

    def parity_cases(self) -> list[tuple[str, Kernel]]:
        """``(name, kernel)`` for every kernel with a CUDA or a Metal version."""
        return [(n, k) for n, k in self._kernels.items() if k.has_cuda or k.has_metal]

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


def _missing(names: list[str], limit: int) -> str:
    if not names:
        return ""
    shown = names[:limit] + (["..."] if len(names) > limit else [])
    return f" (missing: {', '.join(shown)})"


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
