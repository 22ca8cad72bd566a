"""Runs CuPy's own fusion test suite against cunumpy's ``fuse`` and reports pass counts.

    python scripts/cupy_fusion_suite.py PATH [--mode numpy|emulated|both] [--failures FILE]
                                            [-k EXPR] [--skip-slow] [--jobs N]
                                            [--sample N]

PATH is ``tests/cupy_tests/core_tests/fusion_tests`` of a CuPy checkout (``make
cupy-fusion-suite CUPY_FUSION_TESTS=PATH``). Without it (or when it does not exist) the script
says so and exits 0: the suite is not part of this repository and nothing of it is copied here.

The tests are copied into a temporary directory (as the package
``cupy_tests.core_tests.fusion_tests`` they import themselves as) and run by pytest with this
file as a plugin, which installs a ``cupy`` module before collection:

- ``--mode numpy``: ``cupy`` is NumPy (``cupy.ndarray`` is ``numpy.ndarray``), so both halves of
  each test, the NumPy one and the "CuPy" one, run ``fuse`` on NumPy arrays (the CPU executor);
- ``--mode emulated``: ``cupy`` is cunumpy's fake CuPy (``CUNUMPY_FAKE_CUPY=1``), so the CuPy
  half runs the generated CUDA C in the CPU emulator;
- on a machine with CuPy, ``--mode cupy`` uses the real one.

In every mode ``cupy.fuse`` is ``cunumpy.kernels.fuse``, and ``cupy.testing`` holds this file's
own versions of the helpers the suite uses (random arrays, dtype loops, NumPy-versus-CuPy
comparisons), written from their documented behaviour.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import functools
import importlib.metadata
import inspect
import itertools
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import types
from pathlib import Path
from typing import Any

import numpy as np

_MODE_ENV = "CUNUMPY_CUPY_SUITE_MODE"
# "i/n": this pytest process runs every n-th collected test, starting at the i-th (--jobs)
_SHARD_ENV = "CUNUMPY_CUPY_SUITE_SHARD"
# "n": keep every n-th collected test of each file (--sample), before the shards are cut
_SAMPLE_ENV = "CUNUMPY_CUPY_SUITE_SAMPLE"

# ---- cupy.testing, written here ------------------------------------------------------------

_FLOATS = [np.float16, np.float32, np.float64]
_NO_F16_FLOATS = [np.float32, np.float64]
_COMPLEX = [np.complex64, np.complex128]
_SIGNED = [np.int8, np.int16, np.int32, np.int64]
_UNSIGNED = [np.uint8, np.uint16, np.uint32, np.uint64]
_INTS = _SIGNED + _UNSIGNED


def _dtype_list(
    *,
    no_float16: bool = False,
    no_bool: bool = False,
    no_complex: bool = False,
    floats: bool = True,
    ints: bool = True,
) -> list[Any]:
    out: list[Any] = []
    if not no_bool and ints:
        out.append(np.bool_)
    if floats:
        out += _NO_F16_FLOATS if no_float16 else _FLOATS
        if not no_complex:
            out += _COMPLEX
    if ints:
        out += _INTS
    return out


def _without_params(impl: Any, names: tuple[str, ...], wrapper: Any) -> Any:
    """``wrapper`` made to look like ``impl`` without the parameters ``names`` (so that pytest
    does not look for fixtures of those names)."""
    functools.update_wrapper(wrapper, impl)
    sig = inspect.signature(impl)
    wrapper.__signature__ = sig.replace(
        parameters=[p for n, p in sig.parameters.items() if n not in names]
    )
    return wrapper


def _wraps_partial_xp(impl: Any, name: str) -> Any:
    def deco(wrapper: Any) -> Any:
        return _without_params(impl, (name,), wrapper)

    return deco


class _SkipDtype(Exception):
    pass


def _loop(combos: list[dict[str, Any]], names: tuple[str, ...]) -> Any:
    import pytest

    def deco(impl: Any) -> Any:
        def test(*args: Any, **kw: Any) -> Any:
            skipped = 0
            for combo in combos:
                try:
                    impl(*args, **kw, **combo)
                except pytest.skip.Exception:
                    skipped += 1
                except Exception as exc:
                    exc.add_note(f"with {combo}")
                    raise
            if skipped == len(combos):
                pytest.skip("every dtype skipped")

        return _without_params(impl, names, test)

    return deco


def for_dtypes(dtypes: Any, name: str = "dtype") -> Any:
    return _loop([{name: d} for d in dtypes], (name,))


def for_all_dtypes(
    name: str = "dtype", no_float16: bool = False, no_bool: bool = False, no_complex: bool = False
) -> Any:
    return for_dtypes(
        _dtype_list(no_float16=no_float16, no_bool=no_bool, no_complex=no_complex), name
    )


def for_float_dtypes(name: str = "dtype", no_float16: bool = False) -> Any:
    return for_dtypes(_NO_F16_FLOATS if no_float16 else _FLOATS, name)


def for_int_dtypes(name: str = "dtype", no_bool: bool = False) -> Any:
    return for_dtypes(_INTS if no_bool else [np.bool_, *_INTS], name)


def for_signed_dtypes(name: str = "dtype") -> Any:
    return for_dtypes(_SIGNED, name)


def for_unsigned_dtypes(name: str = "dtype") -> Any:
    return for_dtypes(_UNSIGNED, name)


def for_complex_dtypes(name: str = "dtype") -> Any:
    return for_dtypes(_COMPLEX, name)


def for_dtypes_combination(types_: Any, names: Any = ("dtype",), full: Any = None) -> Any:
    names = tuple(names)
    types_ = list(types_)
    if full is None:
        full = os.environ.get("CUPY_TEST_FULL_COMBINATION", "0") not in ("", "0")
    if full:
        product = itertools.product(types_, repeat=len(names))
        combos = [dict(zip(names, c, strict=True)) for c in product]
    else:
        # each dtype at least once in every position, paired with a shuffled partner (a fixed
        # seed, so that two runs test the same pairs)
        rng = random.Random(f"{names}")
        columns = []
        for _ in names:
            shuffled = types_[:]
            rng.shuffle(shuffled)
            columns.append(types_ + shuffled)
        seen: list[tuple[Any, ...]] = []
        for row in zip(*columns, strict=True):
            if row not in seen:
                seen.append(row)
        combos = [dict(zip(names, row, strict=True)) for row in seen]
    return _loop(combos, names)


def for_all_dtypes_combination(
    names: Any = ("dtyes",),
    no_float16: bool = False,
    no_bool: bool = False,
    full: Any = None,
    no_complex: bool = False,
) -> Any:
    return for_dtypes_combination(
        _dtype_list(no_float16=no_float16, no_bool=no_bool, no_complex=no_complex), names, full
    )


def for_int_dtypes_combination(names: Any = ("dtype",), no_bool: bool = False, full: Any = None):
    return for_dtypes_combination(_INTS if no_bool else [np.bool_, *_INTS], names, full)


def for_float_dtypes_combination(names: Any = ("dtype",), no_float16: bool = False, full=None):
    return for_dtypes_combination(_NO_F16_FLOATS if no_float16 else _FLOATS, names, full)


def _cupy() -> Any:
    return sys.modules["cupy"]


def _host(x: Any) -> Any:
    """A NumPy view of ``x`` (CuPy arrays copied back; tuples and lists element by element)."""
    if isinstance(x, (tuple, list)):
        return type(x)(_host(v) for v in x)
    if isinstance(x, np.ndarray) or isinstance(x, np.generic):
        return x
    if hasattr(x, "get") and hasattr(x, "dtype"):
        return x.get()
    return x


def shaped_random(
    shape: Any,
    xp: Any = None,
    dtype: Any = np.float32,
    scale: Any = 10,
    seed: int = 0,
    order: str = "C",
) -> Any:
    """Random values in [0, scale) (bool: 0 or 1; complex: both parts) of ``shape``."""
    xp = _cupy() if xp is None else xp
    rng = np.random.RandomState(seed)
    dtype = np.dtype(dtype)
    if isinstance(shape, int):
        shape = (shape,)
    if dtype == np.bool_:
        a = rng.randint(2, size=shape).astype(dtype)
    elif dtype.kind == "c":
        a = (rng.rand(*shape) * scale + 1j * rng.rand(*shape) * scale).astype(dtype)
    else:
        a = (rng.rand(*shape) * scale).astype(dtype)
    return xp.asarray(np.asarray(a, order=order))


def shaped_arange(shape: Any, xp: Any = None, dtype: Any = np.float32, order: str = "C") -> Any:
    """1, 2, 3, ... in ``shape`` (bool: alternating; complex: equal real and imaginary)."""
    xp = _cupy() if xp is None else xp
    dtype = np.dtype(dtype)
    if isinstance(shape, int):
        shape = (shape,)
    a = np.arange(1, int(np.prod(shape)) + 1)
    if dtype == np.bool_:
        a = a % 2 == 0
    elif dtype.kind == "c":
        a = a + a * 1j
    return xp.asarray(np.asarray(a.astype(dtype).reshape(shape), order=order))


def assert_allclose(
    actual: Any,
    desired: Any,
    rtol: float = 1e-7,
    atol: float = 0,
    err_msg: str = "",
    verbose: bool = True,
) -> None:
    np.testing.assert_allclose(
        _host(actual), _host(desired), rtol=rtol, atol=atol, err_msg=err_msg, verbose=verbose
    )


def assert_array_equal(actual: Any, desired: Any, err_msg: str = "", verbose=True, **_: Any):
    np.testing.assert_array_equal(_host(actual), _host(desired), err_msg=err_msg, verbose=verbose)


def assert_array_list_equal(xs: Any, ys: Any, err_msg: str = "", verbose: bool = True) -> None:
    assert len(xs) == len(ys), f"{len(xs)} arrays and {len(ys)} arrays"
    for x, y in zip(xs, ys, strict=True):
        assert_array_equal(x, y, err_msg, verbose)


def _both(name: str, accept_error: Any, impl: Any, args: Any, kw: Any) -> Any:
    results = []
    for xp in (np, _cupy()):
        try:
            results.append((impl(*args, **{**kw, name: xp}), None))
        except Exception as exc:  # compared below
            results.append((None, exc))
    (r_np, e_np), (r_cp, e_cp) = results
    if e_np is None and e_cp is None:
        return r_np, r_cp
    if e_np is not None and e_cp is not None:
        if accept_error is True or (
            accept_error and isinstance(e_cp, accept_error) and isinstance(e_np, accept_error)
        ):
            return None
        raise e_cp
    raise e_cp if e_cp is not None else e_np


def _comparing(check: Any, name: str, type_check: bool, accept_error: Any) -> Any:
    def deco(impl: Any) -> Any:
        def test(*args: Any, **kw: Any) -> None:
            pair = _both(name, accept_error, impl, args, kw)
            if pair is None:
                return
            r_np, r_cp = pair
            r_np_list = list(r_np) if isinstance(r_np, (tuple, list)) else [r_np]
            r_cp_list = list(r_cp) if isinstance(r_cp, (tuple, list)) else [r_cp]
            assert len(r_np_list) == len(r_cp_list)
            for e, a in zip(r_np_list, r_cp_list, strict=True):
                a = _host(a)
                if type_check:
                    assert np.asarray(a).dtype == np.asarray(e).dtype, (
                        f"dtype {np.asarray(a).dtype} != NumPy's {np.asarray(e).dtype}"
                    )
                check(a, e)

        return _without_params(impl, (name,), test)

    return deco


def numpy_cupy_allclose(
    rtol: float = 1e-7,
    atol: float = 0,
    err_msg: str = "",
    verbose: bool = True,
    name: str = "xp",
    type_check: bool = True,
    accept_error: Any = False,
    **_: Any,
) -> Any:
    return _comparing(
        lambda a, e: np.testing.assert_allclose(a, e, rtol=rtol, atol=atol, err_msg=err_msg),
        name,
        type_check,
        accept_error,
    )


def numpy_cupy_array_equal(
    err_msg: str = "",
    verbose: bool = True,
    name: str = "xp",
    type_check: bool = True,
    accept_error: Any = False,
    **_: Any,
) -> Any:
    return _comparing(
        lambda a, e: np.testing.assert_array_equal(a, e, err_msg=err_msg),
        name,
        type_check,
        accept_error,
    )


def with_requires(*requirements: str) -> Any:
    import pytest
    from packaging.requirements import Requirement

    ok = True
    for r in requirements:
        req = Requirement(r)
        try:
            version = importlib.metadata.version(req.name)
        except importlib.metadata.PackageNotFoundError:
            ok = False
            continue
        ok = ok and req.specifier.contains(version, prereleases=True)
    return pytest.mark.skipif(not ok, reason=f"requires {requirements}")


def multi_gpu(n: int) -> Any:
    import pytest

    return pytest.mark.skip(reason=f"needs {n} GPUs")


def _testing_module(base: Any) -> types.ModuleType:
    mod = types.ModuleType("cupy.testing", "cunumpy's stand-in for cupy.testing")
    if base is not None:
        mod.__dict__.update({k: v for k, v in vars(base).items() if not k.startswith("__")})
    import pytest

    for f in (
        for_dtypes,
        for_all_dtypes,
        for_float_dtypes,
        for_int_dtypes,
        for_signed_dtypes,
        for_unsigned_dtypes,
        for_complex_dtypes,
        for_dtypes_combination,
        for_all_dtypes_combination,
        for_int_dtypes_combination,
        for_float_dtypes_combination,
        shaped_random,
        shaped_arange,
        assert_allclose,
        assert_array_equal,
        assert_array_list_equal,
        numpy_cupy_allclose,
        numpy_cupy_array_equal,
        with_requires,
        multi_gpu,
    ):
        setattr(mod, f.__name__, f)
    mod.slow = pytest.mark.slow
    loops = types.ModuleType("cupy.testing._loops")
    loops._wraps_partial_xp = _wraps_partial_xp  # type: ignore[attr-defined]
    loops._wraps_partial = lambda impl, *names: (  # type: ignore[attr-defined]
        lambda w: _without_params(impl, names, w)
    )
    mod._loops = loops  # type: ignore[attr-defined]
    return mod


# ---- the cupy module ---------------------------------------------------------------------


def _numpy_cupy() -> types.ModuleType:
    """``cupy`` as NumPy: the CuPy half of each test runs on NumPy arrays."""
    mod = types.ModuleType("cupy", "NumPy standing in for CuPy (cunumpy's fusion-suite harness)")

    def __getattr__(name: str) -> Any:  # noqa: N807
        return getattr(np, name)

    mod.__getattr__ = __getattr__  # type: ignore[attr-defined]
    mod.asnumpy = np.asarray  # type: ignore[attr-defined]
    mod.get_array_module = lambda *a: np  # type: ignore[attr-defined]
    return mod


class _TraceImpl:  # what the suite's mocks wrap; cunumpy's fuse never calls it
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass


def _install(mode: str) -> None:
    import cunumpy.kernels as ck

    if mode == "emulated":
        from cunumpy._fake_cupy import install
        from cunumpy._fake_cupy._functions import follow_cupy_on_host_arrays

        cupy = install()
        # the suite's NumPy halves call `cupy.sum(numpy_array)` for their reference values,
        # which CuPy runs as NumPy's method and the fake refuses unless told to do as CuPy
        follow_cupy_on_host_arrays(True)
        # (the fake CuPy has no `cupy.exceptions`; the suite imports AxisError from it, and
        # fuse's FusionAxisError is NumPy's AxisError)
        if not hasattr(cupy, "exceptions"):
            cupy.exceptions = np.exceptions
        submodules = {"cupy.exceptions": cupy.exceptions}
    elif mode == "cupy":
        import importlib

        cupy = importlib.import_module("cupy")  # the real one
        submodules = {}
    else:
        cupy = _numpy_cupy()
        submodules = {"cupy": cupy, "cupy.exceptions": np.exceptions}
    testing = _testing_module(getattr(cupy, "testing", None) if mode != "numpy" else None)
    cupy.testing = testing
    cupy.fuse = ck.fuse
    core = types.ModuleType("cupy._core")
    trace = types.ModuleType("cupy._core._fusion_trace")
    trace.TraceImpl = _TraceImpl  # type: ignore[attr-defined]
    kernel = types.ModuleType("cupy._core._fusion_kernel")
    kernel.FusedKernel = _TraceImpl  # type: ignore[attr-defined]
    fusion = types.ModuleType("cupy._core.fusion")
    fusion.Fusion = lambda f, name: ck.fuse(f, kernel_name=name)  # type: ignore[attr-defined]
    core._fusion_trace = trace  # type: ignore[attr-defined]
    core._fusion_kernel = kernel  # type: ignore[attr-defined]
    core.fusion = fusion  # type: ignore[attr-defined]
    if mode != "cupy":
        cupy._core = core
    cuda = getattr(cupy, "cuda", None)
    if cuda is None or mode == "numpy":
        cuda = types.ModuleType("cupy.cuda")
        cupy.cuda = cuda
    if mode != "cupy":
        # an H200 for the suite's capability checks (the grid-synchronised tests then run)
        runtime = getattr(cuda, "runtime", None) or types.ModuleType("cupy.cuda.runtime")
        runtime.is_hip = False
        runtime.cudaDevAttrCooperativeLaunch = 95
        runtime.deviceGetAttribute = lambda attr, dev: 1
        cuda.runtime = runtime
        device = getattr(cuda, "device", None) or types.ModuleType("cupy.cuda.device")
        device.get_compute_capability = lambda: "90"
        cuda.device = device
        if not hasattr(cuda, "Device"):

            class Device:
                def __init__(self, i: int = 0) -> None:
                    self.id = i

                def use(self) -> None:
                    pass

                def __enter__(self) -> Device:
                    return self

                def __exit__(self, *a: Any) -> None:
                    pass

            cuda.Device = Device
        submodules.update(
            {
                "cupy.cuda": cuda,
                "cupy.cuda.runtime": runtime,
                "cupy.cuda.device": device,
                "cupy._core": core,
            }
        )
    submodules.update(
        {
            "cupy.testing": testing,
            "cupy.testing._loops": testing._loops,
            "cupy._core._fusion_trace": trace,
            "cupy._core._fusion_kernel": kernel,
            "cupy._core.fusion": fusion,
        }
    )
    sys.modules.update(submodules)


def pytest_configure(config: Any) -> None:
    """pytest plugin entry: installs ``cupy`` for the mode in ``$CUNUMPY_CUPY_SUITE_MODE``."""
    mode = os.environ.get(_MODE_ENV)
    if mode:
        _install(mode)
        config.addinivalue_line("markers", "slow: slow tests")
        config.addinivalue_line("markers", "thread_unsafe: unsafe with threads")


def pytest_collection_modifyitems(config: Any, items: list) -> None:
    """pytest plugin entry: keeps this process's shard of the tests (``$CUNUMPY_CUPY_SUITE_SHARD``
    = "i/n"), round robin over the collected order so that each shard gets every dtype loop;
    with ``$CUNUMPY_CUPY_SUITE_SAMPLE`` = n, first every n-th test (a systematic sample)."""
    sample = int(os.environ.get(_SAMPLE_ENV) or 1)
    keep = [item for k, item in enumerate(items) if k % sample == 0]
    shard = os.environ.get(_SHARD_ENV)
    if shard:
        index, count = (int(v) for v in shard.split("/"))
        keep = [item for k, item in enumerate(keep) if k % count == index]
    if len(keep) == len(items):
        return
    config.hook.pytest_deselected(items=[item for item in items if item not in keep])
    items[:] = keep


# ---- the driver --------------------------------------------------------------------------


def _stage(suite: Path, root: Path) -> Path:
    pkg = root / "cupy_tests" / "core_tests" / "fusion_tests"
    pkg.parent.mkdir(parents=True)
    for d in (root / "cupy_tests", root / "cupy_tests" / "core_tests"):
        (d / "__init__.py").write_text("")
    shutil.copytree(suite, pkg, ignore=shutil.ignore_patterns("__pycache__"))
    (root / "conftest.py").write_text("")
    (root / "pytest.ini").write_text("[pytest]\n")
    return pkg


_OUTCOME = re.compile(r"^(\S+::\S+) (PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)", re.M)


def _run(
    mode: str, pkg: Path, root: Path, extra: list[str], jobs: int = 1, sample: int = 1
) -> dict[str, Any]:
    env = dict(os.environ)
    env[_MODE_ENV] = mode
    env[_SAMPLE_ENV] = str(sample)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(Path(__file__).resolve().parent), str(root), env.get("PYTHONPATH", "")]
    )
    env.pop("CUNUMPY_FAKE_CUPY", None)
    # wide enough that pytest's summary keeps each failure's message on its line
    env["COLUMNS"] = "400"
    if mode == "emulated":
        env["CUNUMPY_FAKE_CUPY"] = "1"
    report = root / f"report-{mode}.txt"
    # one pytest process per test file (and per shard of it with --jobs), each one's counts
    # printed as it ends, so that a run cut short by a time limit (the GPU machine's) still
    # says how far it got
    outcomes: dict[str, str] = {}
    logs = []

    def one(test_file: Path, shard: int) -> tuple[str, str]:
        cmd = [
            sys.executable,
            "-m",
            "pytest",
            str(test_file),
            "-p",
            "cupy_fusion_suite",
            "-rA",
            "-q",
            "--tb=line",
            "-p",
            "no:cacheprovider",
            "-o",
            "addopts=",
            *extra,
        ]
        run_env = dict(env, **{_SHARD_ENV: f"{shard}/{jobs}"}) if jobs > 1 else env
        proc = subprocess.run(cmd, cwd=root, env=run_env, capture_output=True, text=True)
        return test_file.name, proc.stdout + proc.stderr

    work = [(f, k) for f in sorted(pkg.glob("test_*.py")) for k in range(jobs)]
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        for name, text in pool.map(lambda w: one(*w), work):
            logs.append(text)
            found = {
                m.group(2): m.group(1) + m.group(3)
                for m in re.finditer(
                    r"^(PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS) (\S+)(.*)$", text, re.M
                )
            }
            outcomes.update(found)
            per_file: dict[str, int] = {}
            for v in found.values():
                per_file[v.split()[0]] = per_file.get(v.split()[0], 0) + 1
            print(f"{mode} {name}: {per_file}", flush=True)
    report.write_text("\n".join(logs))
    counts: dict[str, int] = {}
    for v in outcomes.values():
        k = v.split()[0]
        counts[k] = counts.get(k, 0) + 1
    ran = counts.get("PASSED", 0) + counts.get("FAILED", 0) + counts.get("ERROR", 0)
    return {
        "mode": mode,
        "counts": counts,
        "passed": counts.get("PASSED", 0),
        "ran": ran,
        "pass_rate": round(counts.get("PASSED", 0) / ran, 4) if ran else None,
        "failures": {k: v for k, v in outcomes.items() if v.startswith(("FAILED", "ERROR"))},
        "log": str(report),
        "summary": f"{len(logs)} pytest processes",
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("path", nargs="?", help="CuPy's tests/cupy_tests/core_tests/fusion_tests")
    p.add_argument("--mode", choices=["numpy", "emulated", "cupy", "both"], default="both")
    p.add_argument("--failures", help="write each failing test and its message to this JSON")
    p.add_argument("--skip-slow", action="store_true", help="leave out tests marked slow")
    p.add_argument("--keep", action="store_true", help="keep the staging directory")
    p.add_argument("--log", help="copy every pytest process's output into this file")
    p.add_argument("-k", help="pytest -k expression")
    p.add_argument(
        "--sample",
        type=int,
        default=1,
        help="run every n-th test of each file only (a systematic sample, for the slow modes)",
    )
    p.add_argument(
        "--jobs", type=int, default=1, help="pytest processes at once (each a shard of a file)"
    )
    args = p.parse_args(argv)
    path = args.path or os.environ.get("CUPY_FUSION_TESTS")
    if not path or not Path(path).is_dir():
        print(
            "cupy-fusion-suite: skipped (give the path to CuPy's "
            "tests/cupy_tests/core_tests/fusion_tests, e.g. CUPY_FUSION_TESTS=...)"
        )
        return 0
    extra = []
    if args.k:
        extra += ["-k", args.k]
    if args.skip_slow:
        extra += ["-m", "not slow"]
    modes = ["numpy", "emulated"] if args.mode == "both" else [args.mode]
    root = Path(tempfile.mkdtemp(prefix="cupy-fusion-suite-"))
    try:
        pkg = _stage(Path(path), root)
        results = [_run(m, pkg, root, extra, max(1, args.jobs), max(1, args.sample)) for m in modes]
        for r in results:
            print(
                json.dumps(
                    {k: r[k] for k in ("mode", "passed", "ran", "pass_rate", "counts", "summary")}
                )
            )
        if args.log:
            Path(args.log).write_text("\n".join(Path(r["log"]).read_text() for r in results))
        if args.failures:
            Path(args.failures).write_text(
                json.dumps({r["mode"]: r["failures"] for r in results}, indent=1)
            )
    finally:
        if args.keep:
            print(f"staging directory: {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
