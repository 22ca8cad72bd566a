"""``PyccelCache``: compile a host kernel module with Pyccel once, into a shared disk cache."""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import uuid
from pathlib import Path
from types import ModuleType

from .. import _config
from ..exceptions import InvalidArgumentError, PyccelCompileError

__all__ = ["PyccelCache"]

_LAYOUT = "cunumpy-pyccel-1"  # bump when the cache folder layout changes
_loaded: dict[str, ModuleType] = {}
_load_lock = threading.Lock()
_cli: dict[str, list[str]] = {}


def _pyccel_version() -> str:
    try:
        from importlib.metadata import version

        return version("pyccel")
    except Exception as exc:
        raise PyccelCompileError(f"Pyccel is not installed: {exc}") from exc


def _pyccel_command() -> list[str]:
    """The Pyccel CLI: ``pyccel FILE`` (2.0) or ``pyccel compile FILE`` (later versions)."""
    if "cmd" not in _cli:
        script = Path(sys.executable).with_name("pyccel")
        exe = str(script) if script.exists() else shutil.which("pyccel")
        if exe is None:
            raise PyccelCompileError(
                "the pyccel command was not found next to this Python or on PATH"
            )
        usage = subprocess.run(
            [exe, "--help"], capture_output=True, text=True, timeout=120, check=False
        ).stdout
        first = usage.split("\n\n", 1)[0]
        _cli["cmd"] = [exe, "compile"] if re.search(r"\bcompile\b", first) else [exe]
    return list(_cli["cmd"])


class PyccelCache:
    """A ``compile_host`` callable: ``cache(module)`` returns the Pyccel-compiled version of a
    host kernel module, compiling it with ``pyccel --language <language>`` in a subprocess on a
    cache miss.

    The build key is a SHA-256 of the module source, the language, the OpenMP flag, the Pyccel
    version, the Python version and the platform. The cache lives in ``<PREFIX>_KERNEL_CACHE``
    (``PREFIX`` is ``env_prefix``, default ``name`` upper-cased), else ``~/.cache/<name>/kernels``,
    else ``<tmp>/<name>-kernels``. A build happens in a private folder that is published with
    one atomic rename, so processes (MPI ranks) racing on a cold cache are safe. Modules the
    kernel module imports are not part of the key. ``<PREFIX>_OPENMP=0`` builds without
    OpenMP; otherwise modules with ``#$ omp`` directives are built with ``--openmp``.
    """

    def __init__(self, name: str, *, env_prefix: str | None = None, language: str = "c") -> None:
        if language not in ("c", "fortran"):
            raise InvalidArgumentError(
                f"PyccelCache language must be 'c' or 'fortran', got {language!r}"
            )
        self.name = name
        self.env_prefix = (env_prefix or name).upper().replace("-", "_")
        self.language = language

    # -- where ----------------------------------------------------------------------------------
    @property
    def cache_env(self) -> str:
        """The variable that moves the cache folder: ``<PREFIX>_KERNEL_CACHE``."""
        return f"{self.env_prefix}_KERNEL_CACHE"

    @property
    def openmp_env(self) -> str:
        """The variable that turns OpenMP off (``0``): ``<PREFIX>_OPENMP``."""
        return f"{self.env_prefix}_OPENMP"

    def cache_root(self) -> Path:
        """Where builds go: ``$<PREFIX>_KERNEL_CACHE``, else ``~/.cache/<name>/kernels``."""
        configured = _config.pyccel_kernel_cache(self.env_prefix)
        return Path(configured) if configured else Path.home() / ".cache" / self.name / "kernels"

    def fallback_root(self) -> Path:
        """Where builds go when :meth:`cache_root` is not writable: ``<tmp>/<name>-kernels``."""
        return Path(tempfile.gettempdir()) / f"{self.name}-kernels"

    @property
    def directory(self) -> Path:
        """The cache folder in use (created on first use): :meth:`cache_root`, else
        :meth:`fallback_root` (not when ``<PREFIX>_KERNEL_CACHE`` is set)."""
        configured = _config.pyccel_kernel_cache(self.env_prefix)
        candidates = (
            [self.cache_root()] if configured else [self.cache_root(), self.fallback_root()]
        )
        for folder in candidates:
            try:
                folder.mkdir(parents=True, exist_ok=True)
            except OSError:
                continue
            if os.access(folder, os.W_OK):
                return folder
        raise PyccelCompileError(f"no writable kernel cache folder among {candidates}")

    def openmp_enabled(self) -> bool:
        """Whether modules with OpenMP directives are built with ``--openmp``
        (``<PREFIX>_OPENMP=0`` turns it off)."""
        return _config.pyccel_openmp(self.env_prefix)

    def _openmp(self, source: str) -> bool:
        if not self.openmp_enabled():
            return "omp_get_" in source or "omp_set_" in source  # calls the OpenMP runtime
        return "#$ omp" in source

    def key(self, source: str, language: str | None = None) -> str:
        """The build key of a module source (20 hex digits)."""
        parts = [
            source,
            language or self.language,
            _LAYOUT,
            str(self._openmp(source)),
            _pyccel_version(),
            sys.version,
            platform.platform(),
            platform.machine(),
        ]
        return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:20]

    def build_key(self, module: ModuleType, language: str | None = None) -> str:
        """The build key of ``module`` (20 hex digits, the suffix of its build folder): it
        changes with the module's source, the language, the OpenMP setting, the Pyccel and
        Python versions and the platform (not with modules it imports)."""
        return self.key(_source_path(module).read_text(), language)

    # -- compile -------------------------------------------------------------------------------
    def __call__(self, module: ModuleType | str | os.PathLike[str]) -> ModuleType:
        return self.compile(module)

    def compile(
        self, module: ModuleType | str | os.PathLike[str], *, language: str | None = None
    ) -> ModuleType:
        """The compiled form of ``module`` (a module or the path of its ``.py`` file), built
        on first use; ``language`` overrides the instance's for this build. Raises
        :class:`~cunumpy.exceptions.PyccelCompileError` with Pyccel's output on failure."""
        language = language or self.language
        if language not in ("c", "fortran"):
            raise InvalidArgumentError(
                f"PyccelCache language must be 'c' or 'fortran', got {language!r}"
            )
        path = _source_path(module)
        source = path.read_text()
        stem = path.stem
        folder = self.directory / f"{stem}-{self.key(source, language)}"
        built = self._find(folder, stem)
        if built is None:
            self._build(source, stem, folder, language)
            built = self._find(folder, stem)
            if built is None:
                raise PyccelCompileError(
                    f"Pyccel reported success for {path} but no extension module was found in "
                    f"{folder}"
                )
        return _load(built, stem)

    @staticmethod
    def _find(folder: Path, stem: str) -> Path | None:
        if not folder.is_dir():
            return None
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            candidate = folder / f"{stem}{suffix}"
            if candidate.exists():
                return candidate
        return None

    def _build(self, source: str, stem: str, folder: Path, language: str) -> None:
        work = folder.parent / f".{folder.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}"
        work.mkdir(parents=True)
        try:
            src = work / f"{stem}.py"
            src.write_text(source)
            command = [
                *_pyccel_command(),
                str(src),
                "--language",
                language,
                "--output",
                str(work),
            ]
            if self._openmp(source):
                command.append("--openmp")
            done = subprocess.run(
                command, cwd=work, capture_output=True, text=True, timeout=900, check=False
            )
            if done.returncode != 0:
                raise PyccelCompileError(
                    f"pyccel could not compile {stem}.py (exit {done.returncode}):\n"
                    f"$ {' '.join(command)}\n{done.stdout[-2000:]}{done.stderr[-2000:]}"
                )
            try:
                os.rename(work, folder)  # atomic publish; fails if another process won
            except OSError:
                if self._find(folder, stem) is None:
                    raise
        finally:
            if work.exists():
                shutil.rmtree(work, ignore_errors=True)

    def __repr__(self) -> str:
        return f"PyccelCache({self.name!r}, language={self.language!r})"


def _source_path(module: ModuleType | str | os.PathLike[str]) -> Path:
    path = Path(module.__file__) if isinstance(module, ModuleType) else Path(module)
    if path.suffix != ".py":
        raise PyccelCompileError(f"PyccelCache needs a Python source file, got {path}")
    return path


def _load(path: Path, stem: str) -> ModuleType:
    key = str(path)
    with _load_lock:
        module = _loaded.get(key)
        if module is None:
            loader = importlib.machinery.ExtensionFileLoader(stem, key)
            spec = importlib.util.spec_from_file_location(stem, key, loader=loader)
            if spec is None:
                raise PyccelCompileError(f"cannot load the compiled module {path}")
            module = importlib.util.module_from_spec(spec)
            loader.exec_module(module)
            _loaded[key] = module
        return module
