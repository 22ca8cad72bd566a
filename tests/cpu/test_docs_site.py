"""The documentation site's generated parts (scripts/docs_api.py) and the facts the guides must
agree on. `make docs` builds the whole site in strict mode; these run in the quick suite."""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

import docs_api  # noqa: E402

import cunumpy  # noqa: E402


def test_every_public_name_has_a_docstring():
    assert docs_api.check_docstrings(docs_api.public_modules()) == []


def test_public_modules_are_discovered_not_listed():
    names = [m.__name__ for m in docs_api.public_modules()]
    assert names[0] == "cunumpy"
    on_disk = sorted(
        p.stem if p.is_file() else p.name
        for p in (ROOT / "python/cunumpy").iterdir()
        if not p.name.startswith("_") and (p.suffix == ".py" or (p / "__init__.py").is_file())
    )
    assert names[1:] == [f"cunumpy.{n}" for n in on_disk]


def test_a_name_without_a_docstring_is_reported():
    module = types.ModuleType("fake_public", "A module.")

    def documented():
        """Has one."""

    def bare():
        pass

    class Bare:
        pass

    module.documented, module.bare, module.Bare, module.LIMIT = documented, bare, Bare, 3
    module.__all__ = ["documented", "bare", "Bare", "LIMIT"]
    missing = docs_api.check_docstrings([module])
    assert missing == ["fake_public.bare", "fake_public.Bare", "fake_public.LIMIT"]


def test_the_api_page_lists_every_name():
    page = docs_api.api_page(cunumpy.profiling)
    for name in cunumpy.profiling.__all__:  # classes and functions by mkdocstrings, values live
        assert f"::: cunumpy.profiling.{name}\n" in page or f"## `{name}`\n" in page
    assert "KINDS = ('to_host'" in page and "Event kinds, in report order." in page
    # a name the static reader cannot see is written from the live object, with its docstring
    lazy = docs_api.api_page(cunumpy.kernel_testing, static=lambda path: False)
    assert "## `requires_cupy`" in lazy and "skips a test without CuPy" in lazy
    assert (
        "## `emulate_cuda_kernel`\n" in lazy
        and "emulate_cuda_kernel(kernel: Any, *args: Any" in lazy
    )
    top = docs_api.api_page(cunumpy)
    assert "[`cunumpy.kernels`](cunumpy.kernels.md)" in top
    assert "::: cunumpy.to_numpy\n" in top and "::: cunumpy.kernels\n" not in top


def test_the_navigation_leaves_no_page_out():
    nav = docs_api.summary(["cunumpy"])
    linked = set(re.findall(r"\]\(([^)]+)\)", nav))
    pages = {p.relative_to(ROOT / "docs").as_posix() for p in (ROOT / "docs").rglob("*.md")}
    assert pages <= linked


def test_the_guides_name_every_shipped_header():
    headers = sorted(p.name for p in (ROOT / "python/cunumpy/include/cunumpy").glob("*.cuh"))
    for guide in ("docs/writing-cuda-kernels.md", "docs/testing-without-a-gpu.md"):
        text = (ROOT / guide).read_text()
        assert [h for h in headers if h not in text] == [], guide


def test_readme_links_are_absolute_and_point_at_files():
    text = (ROOT / "README.md").read_text()
    links = re.findall(r"\]\(([^)]+)\)", text)
    assert links and all(link.startswith("https://") for link in links)
    prefix = "https://github.com/max-models/cunumpy/blob/main/"
    for link in links:
        if link.startswith(prefix):
            assert (ROOT / link[len(prefix) :].split("#")[0]).is_file(), link


# C macros and the Rust tests' own child-process variables, not settings
NOT_SETTINGS = {
    "CUNUMPY_BOUNDS_CHECK",
    "CUNUMPY_CACHE_TEST_CHILD_DIR",
    "CUNUMPY_CACHE_TEST_CHILD_TAG",
    "CUNUMPY_PORT_LOCAL_CAP",  # a #define in the generated CUDA
    "CUNUMPY_PORT_HELPER",  # a #define in the generated CUDA
    "CUNUMPY_PORT_CAP_TRAP_ONLY",  # a #define in the generated CUDA
}


def test_every_environment_variable_is_on_its_page():
    page = (ROOT / "docs/environment-variables.md").read_text()
    sources = [*(ROOT / "python/cunumpy").rglob("*.py"), *(ROOT / "crates").rglob("*.rs")]
    used = set()
    for path in sources:
        used |= set(re.findall(r"\bCUNUMPY_[A-Z0-9_]*[A-Z0-9]\b", path.read_text()))
    macros = {name for name in used if name.startswith("CUNUMPY_GRID_STRIDE")}
    missing = sorted(n for n in used - NOT_SETTINGS - macros if f"`{n}`" not in page)
    assert missing == []
    assert "`CXX`" in page and "`MAYBEMPI`" in page
