"""Writes the generated pages of the documentation site: run by mkdocs-gen-files during
`make docs` (mkdocs.yml); nothing it writes is committed. What it writes is described in
``docs_api.py``."""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from docs_api import (  # noqa: E402
    ROOT,
    MissingDocstringError,
    api_page,
    check_docstrings,
    public_modules,
    summary,
)


def static_reader() -> Callable[[str], bool]:
    """Whether griffe (mkdocstrings' reader) finds a name in the source, with a docstring: the
    names it cannot (built on first access, documented only in the compiled core) are written
    from the live objects instead."""
    import griffe

    loader = griffe.GriffeLoader(search_paths=[str(ROOT / "python")])
    loader.load("cunumpy")
    loader.resolve_aliases(external=False)

    def found(path: str) -> bool:
        try:
            obj = loader.modules_collection.get_member(path)
            if obj.is_alias:
                obj = obj.final_target
        except Exception:  # griffe's KeyError, AliasResolutionError, CyclicAliasError
            return False
        return bool(obj.docstring and obj.docstring.value.strip())

    return found


def main() -> None:
    import mkdocs_gen_files

    modules = public_modules()
    static = static_reader()
    missing = check_docstrings(modules)
    if missing:
        raise MissingDocstringError(
            "public names without a docstring (document them or make them private):\n  "
            + "\n  ".join(missing)
        )
    index = [
        "# API reference",
        "",
        "Every public name of cunumpy, generated from its docstring. `import cunumpy as xp`",
        "also forwards every name of the active backend (NumPy or CuPy), which is documented",
        "by those projects.",
        "",
    ]
    for module in modules:
        with mkdocs_gen_files.open(f"api/{module.__name__}.md", "w") as f:
            f.write(api_page(module, static))
        first = (inspect.getdoc(module) or "").splitlines()[0]
        index.append(f"- [`{module.__name__}`]({module.__name__}.md): {first}")
    with mkdocs_gen_files.open("api/index.md", "w") as f:
        f.write("\n".join(index) + "\n")
    for source, target in (("MIGRATING.md", "migrating.md"), ("CHANGELOG.md", "changelog.md")):
        with mkdocs_gen_files.open(target, "w") as f:
            f.write((ROOT / source).read_text())
    with mkdocs_gen_files.open("SUMMARY.md", "w") as f:
        f.write(summary([m.__name__ for m in modules]))


main()
