"""Prints the public surface of the installed ``cunumpy`` as JSON: for every public name of the
public modules, its kind and, for callables, the names and kinds of its parameters; for classes,
the same for their public members. No code, docstrings or default values are recorded.

Used to keep ``tests/cpu/data/public_api_0.7.1.json`` (run with cunumpy 0.7.1 installed):

    /path/to/venv-0.7.1/bin/python scripts/dump_public_api.py \
        > tests/cpu/data/public_api_0.7.1.json

and by ``tests/cpu/test_public_api.py`` (which imports :func:`describe`) on the project itself.
"""

from __future__ import annotations

import importlib
import inspect
import json
import sys
import types
from typing import Any

#: The public modules of cunumpy 0.7 (``cunumpy.xp`` is the backend module, not ``xp.xp``).
MODULES = (
    "cunumpy",
    "cunumpy.xp",
    "cunumpy.kernels",
    "cunumpy.arguments",
    "cunumpy.cuda",
    "cunumpy.memory",
    "cunumpy.profiling",
    "cunumpy.rng",
    "cunumpy.algorithms",
    "cunumpy.mpi",
    "cunumpy.petsc",
    "cunumpy.optimize",
    "cunumpy.integrate",
    "cunumpy.kernel_testing",
)

_OBJECT_MEMBERS = set(dir(object)) | {"__dict__", "__weakref__", "__module__", "__annotations__"}
_DUNDERS_KEPT = {
    "__call__",
    "__init__",
    "__enter__",
    "__exit__",
    "__getitem__",
    "__len__",
    "__iter__",
}


def parameters(obj: Any) -> list[list[str]] | None:
    """``[[name, kind], ...]`` of a callable, or None when Python cannot tell."""
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return None
    return [[p.name, p.kind.name] for p in sig.parameters.values()]


def _module_names(module: types.ModuleType) -> list[str]:
    names = getattr(module, "__all__", None)
    if names is not None:
        return sorted(set(names) - {"__version__"})
    # a module without __all__ (cunumpy.xp): what it defines or re-exports from cunumpy
    out = []
    for name, value in vars(module).items():
        if name.startswith("_") or isinstance(value, types.ModuleType):
            continue
        origin = getattr(value, "__module__", None)
        if callable(value) and not (origin or "").startswith("cunumpy"):
            continue
        own_instance = type(value).__module__.startswith("cunumpy")
        constant = name.isupper() and isinstance(value, str | int | float | tuple)
        if callable(value) or own_instance or (constant and not isinstance(value, bool)):
            out.append(name)
    return sorted(out)


def _class_members(cls: type, prefix: str, records: list[dict[str, Any]]) -> None:
    seen: set[str] = set()
    for klass in cls.__mro__:
        if klass is object or klass.__module__ == "builtins":
            continue
        for name, raw in vars(klass).items():
            if name in seen:
                continue
            if name.startswith("_") and name not in _DUNDERS_KEPT:
                continue
            if name in _OBJECT_MEMBERS and name not in _DUNDERS_KEPT:
                continue
            seen.add(name)
            qual = f"{prefix}.{name}"
            if isinstance(raw, property):
                records.append({"name": qual, "kind": "property", "params": None})
            elif isinstance(raw, classmethod):
                records.append(
                    {
                        "name": qual,
                        "kind": "classmethod",
                        "params": parameters(raw.__func__)[1:]
                        if parameters(raw.__func__)
                        else None,
                    }
                )
            elif isinstance(raw, staticmethod):
                records.append(
                    {"name": qual, "kind": "staticmethod", "params": parameters(raw.__func__)}
                )
            elif callable(raw):
                params = parameters(raw)
                if params and params[0][0] in ("self", "cls"):
                    params = params[1:]
                records.append({"name": qual, "kind": "method", "params": params})
            else:
                records.append({"name": qual, "kind": "attribute", "params": None})
    # NamedTuple fields and dataclass fields are attributes too
    for name in getattr(cls, "_fields", ()) or ():
        if name not in seen:
            records.append({"name": f"{prefix}.{name}", "kind": "attribute", "params": None})


def describe(value: Any, qual: str, records: list[dict[str, Any]]) -> None:
    """Appends the record of ``value`` (and of its members, for a class)."""
    if isinstance(value, types.ModuleType):
        records.append({"name": qual, "kind": "module", "params": None})
    elif isinstance(value, type):
        records.append({"name": qual, "kind": "class", "params": parameters(value)})
        _class_members(value, qual, records)
    elif isinstance(value, types.FunctionType | types.BuiltinFunctionType):
        records.append({"name": qual, "kind": "function", "params": parameters(value)})
    elif callable(value):
        records.append({"name": qual, "kind": "callable", "params": parameters(value)})
    else:
        records.append({"name": qual, "kind": "value", "params": None})


def _has(module: types.ModuleType, name: str) -> bool:
    try:
        getattr(module, name)
    except Exception:  # AttributeError, or an error of a lazily built name
        return False
    return True


def dump(
    modules: tuple[str, ...] = MODULES, *, also: dict[str, set[str]] | None = None
) -> list[dict[str, Any]]:
    """The records of ``modules``: their public names (``__all__``), plus the names in
    ``also[module]`` that the module has (reached through its ``__getattr__``)."""
    records: list[dict[str, Any]] = []
    for modname in modules:
        if any(r["name"] == modname for r in records):
            records = [r for r in records if r["name"] != modname]
        try:
            module = importlib.import_module(modname)
        except ImportError:
            records.append({"name": modname, "kind": "missing", "params": None})
            continue
        records.append({"name": modname, "kind": "module", "params": None})
        names = set(_module_names(module))
        names |= {n for n in (also or {}).get(modname, ()) if _has(module, n)}
        for name in sorted(names):
            qual = f"{modname}.{name}"
            if isinstance(getattr(module, name, None), types.ModuleType):
                records.append({"name": qual, "kind": "module", "params": None})
                continue
            describe(getattr(module, name), qual, records)
    return records


if __name__ == "__main__":
    import cunumpy

    json.dump(
        {"cunumpy": cunumpy.__version__, "python": sys.version.split()[0], "names": dump()},
        sys.stdout,
        indent=1,
    )
    sys.stdout.write("\n")
