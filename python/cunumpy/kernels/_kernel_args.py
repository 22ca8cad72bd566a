"""What a kernel call's arguments hold and what a kernel's parameters are called: shared by
host kernels (`_pyccel_kernel.py`) and host/CUDA pairs (`_dispatch.py`)."""

from __future__ import annotations

import ast
import inspect
import sys
from pathlib import Path
from typing import Any


def _cupy() -> Any:
    return sys.modules.get("cupy")


def _is_device(value: Any) -> bool:
    cupy = _cupy()
    return cupy is not None and isinstance(value, cupy.ndarray)


def _in_modules(value: Any, modules: tuple[str, ...]) -> bool:
    module = type(value).__module__ or ""
    return any(module == m or module.startswith(m + ".") for m in modules) and hasattr(
        value, "__dict__"
    )


def _contains_device(value: Any, modules: tuple[str, ...], seen: set[int], depth: int = 0) -> bool:
    if _is_device(value):
        return True
    if depth > 16 or id(value) in seen:
        return False
    if isinstance(value, (tuple, list)):
        seen.add(id(value))
        return any(_contains_device(v, modules, seen, depth + 1) for v in value)
    if isinstance(value, dict):
        seen.add(id(value))
        return any(_contains_device(v, modules, seen, depth + 1) for v in value.values())
    if modules and _in_modules(value, modules):
        seen.add(id(value))
        return any(_contains_device(v, modules, seen, depth + 1) for v in vars(value).values())
    return False


def _signature_names(fn: Any) -> tuple[str, ...] | None:
    target = getattr(fn, "python", None) or getattr(fn, "py_func", None) or fn
    try:
        sig = inspect.signature(target)
    except (TypeError, ValueError):
        return None
    return tuple(
        p.name
        for p in sig.parameters.values()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    )


def _stub_parameters(kernel: Any) -> tuple[str, ...] | None:
    """Parameter names of a compiled module's function: from the ``.pyi`` stub Pyccel writes
    next to it, else from the Python source it was compiled from (a package compiled in
    place keeps ``<module>.py`` beside the extension)."""
    module = sys.modules.get(getattr(kernel, "__module__", None) or "")
    file = getattr(module, "__file__", None)
    name = getattr(kernel, "__name__", None)
    if file is None or name is None:
        return None
    folder, stem = Path(file).parent, Path(file).name.split(".", 1)[0]
    sources = (folder / "__pyccel__" / f"{stem}.pyi", folder / f"{stem}.pyi", folder / f"{stem}.py")
    for stub in sources:
        if stub.is_file():
            try:
                tree = ast.parse(stub.read_text())
            except (SyntaxError, ValueError, OSError):  # not readable Python: look no further
                continue
            for node in ast.walk(tree):
                if isinstance(node, ast.FunctionDef) and node.name == name:
                    return tuple(a.arg for a in (*node.args.posonlyargs, *node.args.args))
    return None
