"""`_core.pyi` is hand-written: it must name what the compiled module `cunumpy._core` has, no
more and no less, with the same parameter names."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

from cunumpy import _core

STUB = Path(_core.__file__).with_name("_core.pyi")
if not STUB.exists():  # an editable install keeps the stub in the source tree
    STUB = Path(__file__).parents[2] / "python" / "cunumpy" / "_core.pyi"


def _stub() -> tuple[dict[str, ast.AST], dict[str, dict[str, ast.AST]]]:
    tree = ast.parse(STUB.read_text())
    names: dict[str, ast.AST] = {}
    classes: dict[str, dict[str, ast.AST]] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names[node.name] = node
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names[node.target.id] = node
        if isinstance(node, ast.ClassDef):
            classes[node.name] = {
                n.name: n
                for n in node.body
                if isinstance(n, (ast.FunctionDef, ast.AnnAssign)) and hasattr(n, "name")
            }
            classes[node.name].update(
                {
                    n.target.id: n
                    for n in node.body
                    if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)
                }
            )
    return names, classes


def _module_names() -> set[str]:
    return {n for n in vars(_core) if not n.startswith("__")} | {"__version__"}


def test_the_stub_names_every_name_of_the_module_and_no_other() -> None:
    stub, _ = _stub()
    module = _module_names()
    assert sorted(module - set(stub)) == [], "in _core but not in _core.pyi"
    assert sorted(set(stub) - module) == [], "in _core.pyi but not in _core"


def _own_attributes(cls: type) -> set[str]:
    return {n for n in vars(cls) if not (n.startswith("__") and n.endswith("__"))}


@pytest.mark.parametrize("name", sorted(_stub()[1]))
def test_each_class_has_the_stub_methods(name: str) -> None:
    cls = getattr(_core, name)
    _, classes = _stub()
    stub_methods = {m for m in classes[name] if not (m.startswith("__") and m.endswith("__"))}
    assert sorted(stub_methods - _own_attributes(cls)) == [], f"{name}: in the stub only"
    assert sorted(_own_attributes(cls) - stub_methods) == [], f"{name}: in the module only"


def _parameters(node: ast.FunctionDef) -> list[str]:
    a = node.args
    names = [p.arg for p in a.posonlyargs + a.args]
    if a.vararg:
        names.append("*" + a.vararg.arg)
    names += [p.arg for p in a.kwonlyargs]
    if a.kwarg:
        names.append("**" + a.kwarg.arg)
    return [n for n in names if n not in ("self", "cls")]


def _runtime_parameters(obj: object) -> list[str] | None:
    try:
        sig = inspect.signature(obj)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None  # no text signature to compare
    out = []
    for p in sig.parameters.values():
        if p.name in ("self", "cls", "$self", "$cls"):
            continue
        prefix = {p.VAR_POSITIONAL: "*", p.VAR_KEYWORD: "**"}.get(p.kind, "")
        out.append(prefix + p.name)
    return out


def test_functions_take_the_stub_parameter_names() -> None:
    stub, _ = _stub()
    compared = 0
    for name, node in stub.items():
        if not isinstance(node, ast.FunctionDef):
            continue
        runtime = _runtime_parameters(getattr(_core, name))
        if runtime is None:
            continue
        compared += 1
        assert _parameters(node) == runtime, name
    assert compared > 10  # the module's functions carry text signatures
