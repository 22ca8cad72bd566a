"""Every error cunumpy raises is a class of ``cunumpy.exceptions`` that also subclasses the
built-in it replaces (issue 21, item 9), and the errors page lists every class.

The source checks read the package and the binding as text, so a plain ``raise ValueError`` or a
``PyValueError::new_err`` added later fails here, naming the file and the line.
"""

from __future__ import annotations

import ast
import builtins
import pickle
import re
from pathlib import Path

import pytest

from cunumpy import exceptions

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "python" / "cunumpy"
BINDING = ROOT / "crates" / "cunumpy-py" / "src"

BUILTIN_EXCEPTIONS = {
    name
    for name, value in vars(builtins).items()
    if isinstance(value, type) and issubclass(value, BaseException)
}

# The fake CuPy imitates CuPy, which raises built-in errors; `kernels/_fusion.py` keeps one
# built-in TypeError (owned by the fusion work); `arguments.py` re-raises an AttributeError for
# a struct field its object lacks and `kernel_testing/_markers.py` one for its module's
# `__getattr__` (the attribute protocol); the counts make a new one fail.
# An AttributeError raised by a `__getattr__` is the attribute protocol, and SystemExit is no
# error.
ALLOWED_PYTHON = {"kernels/_fusion.py": 1, "arguments.py": 1, "kernel_testing/_markers.py": 1}
# `errors::raise` falls back to RuntimeError when cunumpy.exceptions cannot be imported, and
# `errors::warn` reports a message with a NUL byte; the fused-call and host-loop paths are the
# fusion work's.
ALLOWED_BINDING = {"errors.rs": 2, "fused_call.rs": 5, "fusion.rs": 2, "host_loops.rs": 1}


def _builtin_raises(path: Path) -> list[str]:
    found = []
    tree = ast.parse(path.read_text(), str(path))
    protocol = {
        id(n)
        for f in ast.walk(tree)
        if isinstance(f, ast.FunctionDef) and f.name == "__getattr__"
        for n in ast.walk(f)
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.Raise) and node.exc is not None:
            target = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            if not (isinstance(target, ast.Name) and target.id in BUILTIN_EXCEPTIONS):
                continue
            if target.id == "SystemExit" or (
                target.id == "AttributeError" and id(node) in protocol
            ):
                continue
            found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}: raise {target.id}")
    return found


def test_the_package_raises_no_builtin_exception():
    offending = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).as_posix()
        if relative.startswith("_fake_cupy/"):
            continue
        found = _builtin_raises(path)
        if len(found) > ALLOWED_PYTHON.get(relative, 0):
            offending.extend(found)
    assert not offending, "raise a cunumpy.exceptions class instead:\n" + "\n".join(offending)


def test_the_binding_raises_no_builtin_exception():
    pattern = re.compile(r"\bPy[A-Z]\w*(Error|Exception)::new_err")
    offending = []
    for path in sorted(BINDING.glob("*.rs")):
        lines = [
            f"{path.name}:{i}: {line.strip()}"
            for i, line in enumerate(path.read_text().splitlines(), 1)
            if pattern.search(line)
        ]
        if len(lines) > ALLOWED_BINDING.get(path.name, 0):
            offending.extend(lines)
    assert not offending, "use errors::raise with a cunumpy.exceptions class:\n" + "\n".join(
        offending
    )


CLASSES = [getattr(exceptions, name) for name in exceptions.__all__]
ERRORS = [c for c in CLASSES if issubclass(c, BaseException) and not issubclass(c, Warning)]


@pytest.mark.parametrize("cls", ERRORS, ids=lambda c: c.__name__)
def test_every_error_is_a_cunumpy_error_and_a_builtin_one(cls):
    assert issubclass(cls, exceptions.CunumpyError)
    bases = (exceptions.CunumpyError, exceptions.FusionError, exceptions.GraphError)
    if cls in (*bases, exceptions.CudaConstantError):
        return  # the bases: every concrete subclass adds the built-in
    builtin_bases = [
        b
        for b in cls.__mro__
        if b.__module__ == "builtins" and b not in (Exception, BaseException, object)
    ]
    assert builtin_bases, f"{cls.__name__} subclasses no built-in exception but Exception"
    error = cls("kernel 'k': argument 0 (int n): expected int, got str")
    assert str(error) == "kernel 'k': argument 0 (int n): expected int, got str"
    assert error.full_message == str(error)


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_the_errors_page_lists_every_class(cls):
    page = (ROOT / "docs" / "errors.md").read_text()
    assert re.search(rf"^\| `{cls.__name__}` \|", page, re.M), f"{cls.__name__} is not on the page"


def test_a_long_message_is_cut_and_kept_whole():
    text = "kernel 'k': " + "template<" * 2000 + "double" + ">" * 2000
    error = exceptions.CudaSignatureError(text)
    shown = str(error)
    assert len(shown) < 2 * exceptions.MESSAGE_LIMIT < len(text)
    assert shown.startswith("kernel 'k': template<") and shown.endswith(">>>")
    assert "characters cut" in shown and "full_message" in shown
    assert error.full_message == text
    again = pickle.loads(pickle.dumps(error))
    assert type(again) is exceptions.CudaSignatureError and again.full_message == text
    short = exceptions.KernelOutputKeyError("no output 'x'")
    assert str(short) == "no output 'x'" and short.full_message == "no output 'x'"
