"""What the documentation site generates, as functions (``docs_gen.py`` writes the pages
during `make docs`; ``tests/cpu/test_docs_site.py`` checks them):

- ``api/<module>.md``: one page per public module of ``cunumpy`` (every module or package
  whose name does not start with ``_``), listing every name of its ``__all__``; the build fails
  when a public name has no docstring, so a new name is documented or the build says so;
- ``migrating.md`` and ``changelog.md``: MIGRATING.md and CHANGELOG.md of the repository;
- ``SUMMARY.md``: the navigation. The guides named in ``GUIDES`` come first in that order, any
  other page of ``docs/`` (a guide added later) is appended, so no page is left out.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"

# The reading order of the user guide; pages of docs/ not listed here follow them.
GUIDES = [
    "backends-and-transfers.md",
    "writing-cuda-kernels.md",
    "pairing-host-and-cuda-kernels.md",
    "kernel-arguments-and-structs.md",
    "accumulation-kernels.md",
    "metal-kernels.md",
    "random-numbers.md",
    "particle-algorithms.md",
    "streams-and-staging.md",
    "cuda-graphs.md",
    "mpi.md",
    "scipy-and-solvers.md",
    "testing-kernels.md",
    "testing-without-a-gpu.md",
    "kernel-fusion.md",
    "profiles-and-traces.md",
    "command-line.md",
    "errors.md",
    "particle-pusher.md",
]
# Pages placed elsewhere in the navigation than the user guide.
NOT_GUIDES = {"index.md", "environment-variables.md"}


class MissingDocstringError(Exception):
    """A public name without a docstring (the build stops on it)."""


def public_modules() -> list[ModuleType]:
    """``cunumpy`` and every public submodule (discovered, not listed by hand)."""
    import cunumpy

    modules = [cunumpy]
    for info in sorted(pkgutil.iter_modules(cunumpy.__path__), key=lambda i: i.name):
        if not info.name.startswith("_"):
            modules.append(importlib.import_module(f"cunumpy.{info.name}"))
    return modules


def public_names(module: ModuleType) -> list[str]:
    """The module's ``__all__``; a public module without one is an error."""
    names = getattr(module, "__all__", None)
    if names is None:
        raise MissingDocstringError(f"{module.__name__} is public but has no __all__")
    return list(names)


_ROLE = re.compile(r":(?:py:)?(?:func|class|meth|attr|data|mod|exc|obj|const):`~?([^`]+)`")


def plain_roles(text: str) -> str:
    """reST roles (``:func:`name```) as inline code, as the griffe extension does."""
    return _ROLE.sub(r"`\1`", text)


def is_code(obj: object) -> bool:
    """Modules, classes and functions carry their own docstring; other values cannot."""
    return (
        inspect.ismodule(obj)
        or inspect.isclass(obj)
        or inspect.isroutine(obj)
        or (callable(obj) and type(obj).__doc__ is not getattr(obj, "__doc__", None))
    )


def has_docstring(obj: object) -> bool:
    """Whether ``obj`` documents itself (its own ``__doc__``, not its type's)."""
    doc = getattr(obj, "__doc__", None)
    if not (doc and doc.strip()):
        return False
    return inspect.isclass(obj) or doc is not type(obj).__doc__


def _package_sources() -> list[Path]:
    import cunumpy

    return sorted(Path(cunumpy.__file__).parent.rglob("*.py"))


def value_doc(module: ModuleType, name: str) -> str | None:
    """The documentation of a value (a constant, a marker): the module's
    ``__attribute_docs__[name]``, else the ``#:`` comment lines right above its assignment (or
    a string right below it) in the package's source."""
    given = getattr(module, "__attribute_docs__", {}).get(name)
    if given:
        return given
    kind = type(getattr(module, name, None))
    if kind.__module__.startswith("cunumpy.") and kind.__doc__:
        return inspect.getdoc(kind)  # an instance of a documented cunumpy class
    sources = _package_sources() if module.__name__.startswith("cunumpy") else []
    for path in sources:
        lines = path.read_text().splitlines()
        for i, line in enumerate(lines):
            if not line.startswith((f"{name} =", f"{name}: ")):
                continue
            comment = []
            j = i - 1
            while j >= 0 and lines[j].strip().startswith("#:"):
                comment.insert(0, lines[j].strip()[2:].strip())
                j -= 1
            if comment:
                return " ".join(comment)
            after = lines[i + 1].strip() if i + 1 < len(lines) else ""
            if after.startswith(('"""', "'''")):
                return after.strip("\"'")
    return None


def check_docstrings(modules: list[ModuleType]) -> list[str]:
    """Every public name without documentation, as ``module.name``."""
    missing = []
    for module in modules:
        if not has_docstring(module):
            missing.append(module.__name__)
        for name in public_names(module):
            obj = getattr(module, name)
            if inspect.ismodule(obj):
                continue  # has its own page and its own check
            ok = has_docstring(obj) if is_code(obj) else value_doc(module, name) is not None
            if not ok:
                missing.append(f"{module.__name__}.{name}")
    return missing


def runtime_entry(module: ModuleType, name: str) -> str:
    """Markdown for a name that the static reader cannot document (a value, a name built on
    first access, a function of the compiled core): from the live object."""
    obj = getattr(module, name)
    lines = [f"## `{name}`", "", f"`{module.__name__}.{name}`", ""]
    if not is_code(obj):
        doc = plain_roles(value_doc(module, name) or "")
        lines += ["```python", f"{name} = {obj!r}", "```", "", doc, ""]
        return "\n".join(lines)
    try:
        signature = f"{name}{inspect.signature(obj, eval_str=True)}"
    except (NameError, TypeError, ValueError):  # an annotation that does not evaluate here
        try:
            signature = f"{name}{inspect.signature(obj)}"
        except (TypeError, ValueError):
            signature = f"{name}(...)"
    kind = "class " if inspect.isclass(obj) else ""
    lines += ["```python", f"{kind}{signature}", "```", "", plain_roles(inspect.getdoc(obj) or "")]
    lines.append("")
    if inspect.isclass(obj):
        for attr, member in sorted(vars(obj).items()):
            if attr.startswith("_") or not (callable(member) or isinstance(member, property)):
                continue
            doc = plain_roles((inspect.getdoc(member) or "").split("\n\n")[0])
            lines += [f"- `{attr}`: {doc}"]
        lines.append("")
    return "\n".join(lines)


def api_page(module: ModuleType, static: Callable[[str], bool] = lambda path: True) -> str:
    """The page of one module: its docstring, links to public submodules, then every name;
    ``static(path)`` says whether mkdocstrings can render a name from the source (else it is
    written from the live object)."""
    names = public_names(module)
    submodules = [n for n in names if inspect.ismodule(getattr(module, n))]
    members = [n for n in names if n not in submodules]
    lines = [f"# `{module.__name__}`", "", plain_roles(inspect.getdoc(module) or ""), ""]
    if submodules:
        lines += ["Public submodules:", ""]
        lines += [f"- [`{module.__name__}.{n}`]({module.__name__}.{n}.md)" for n in submodules]
        lines.append("")
    for name in members:
        path = f"{module.__name__}.{name}"
        if is_code(getattr(module, name)) and static(path):
            lines += [f"::: {path}", "    options:", "      heading_level: 2", ""]
        else:
            lines += [runtime_entry(module, name), ""]
    return "\n".join(lines)


def summary(api_pages: list[str]) -> str:
    """The navigation in literate-nav's Markdown."""
    pages = sorted(p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md"))
    extra = [p for p in pages if "/" not in p and p not in GUIDES and p not in NOT_GUIDES]
    internals = [p for p in pages if p.startswith("internals/") and p != "internals/index.md"]
    lines = ["- [Home](index.md)", "- User guide"]
    for page in [g for g in GUIDES if g in pages] + extra:
        lines.append(f"    - [{title(DOCS / page)}]({page})")
    lines += [
        "- [Environment variables](environment-variables.md)",
        "- [Migrating from 0.7](migrating.md)",
        "- [API reference](api/index.md)",
    ]
    lines += [f"    - [`{name}`](api/{name}.md)" for name in api_pages]
    lines.append("- [Internals](internals/index.md)")
    lines += [f"    - [{title(DOCS / p)}]({p})" for p in internals]
    lines.append("- [Changelog](changelog.md)")
    return "\n".join(lines) + "\n"


def title(path: Path) -> str:
    """The first heading of a page."""
    for line in path.read_text().splitlines():
        if line.startswith("# "):
            return line[2:].strip().replace("`", "")
    return path.stem
