"""Kernel, KernelCatalog, host implementations, PyccelKernel and the kernel profile on the
NumPy backend, with the test kernel package tests/kernel_pkg (real Numba, real Pyccel)."""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import cunumpy as xp
from cunumpy.exceptions import (
    DuplicateKernelError,
    KernelFolderError,
    KernelImplementationError,
    KernelOutputsError,
    KernelSignatureMismatchError,
)
from cunumpy.kernels import (
    CompiledHostKernel,
    CudaKernel,
    HostImplementations,
    Kernel,
    KernelCatalog,
    PyccelCache,
    PyccelKernel,
    as_kernel_array,
    outputs_from_annotations,
    use_host_kernel_implementation,
)

TESTS = Path(__file__).resolve().parents[1]
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))

SCALE_CU = """
extern "C" __global__ void scale(double* x, double a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = a * x[i];
}
"""


@pytest.fixture
def catalog():
    return KernelCatalog.from_package("kernel_pkg", missing_cuda="fallback", outputs="annotations")


def test_catalog_finds_the_folders_and_summarises(catalog):
    assert list(catalog) == ["axpy", "scale", "shift", "square_sum"]
    assert catalog.with_cuda == ["axpy", "scale"]
    assert catalog.without_cuda == ["shift", "square_sum"]
    assert catalog.summary() == "CUDA kernels: 2 of 4 (missing: shift, square_sum)"
    assert str(catalog) == catalog.summary()
    assert repr(catalog) == "KernelCatalog(4 kernels, 2 without CUDA)"
    assert [name for name, _ in catalog.parity_cases()] == ["axpy", "scale"]
    assert catalog["scale"].cuda_path.endswith("scale/scale_cuda.cu")
    assert catalog.scale is catalog["scale"]


def test_summary_truncates_and_empty_catalog():
    host = Kernel(lambda x: None, name="k")
    cat = KernelCatalog()
    assert cat.summary() == "CUDA kernels: 0 of 0"
    cat.register(Kernel(lambda x: None, CudaKernel(SCALE_CU, "scale")))
    for i in range(12):
        cat.register(host, f"k{i}")
    assert cat.summary() == (
        "CUDA kernels: 1 of 13 (missing: k0, k1, k2, k3, k4, k5, k6, k7, k8, k9, ...)"
    )
    assert cat.summary(max_missing=2) == "CUDA kernels: 1 of 13 (missing: k0, k1, ...)"
    with pytest.raises(KeyError, match="a kernel named 'k0' is already registered"):
        cat.register(host, "k0")
    with pytest.raises(DuplicateKernelError):
        cat.register(host, "k1")
    with pytest.raises(TypeError, match="expected a Kernel, got function"):
        cat.register(lambda: None)


def test_host_path_matches_numpy(catalog):
    x = np.linspace(0.0, 1.0, 16)
    expected = 3.0 * x
    catalog["scale"](x, 3.0, 16, n_threads=16)  # launch keywords are ignored on the host
    np.testing.assert_array_equal(x, expected)
    y = np.ones(16)
    catalog["axpy"](2.0, x, y, 16)
    np.testing.assert_allclose(y, 1.0 + 2.0 * x)
    out = np.zeros(1)
    catalog["square_sum"](x, out, 16)
    np.testing.assert_allclose(out[0], np.dot(x, x))


def test_keyword_arguments_bind_to_parameter_names(catalog):
    x, y = np.arange(4.0), np.zeros(4)
    catalog["axpy"](2.0, x, n=4, y=y)
    np.testing.assert_array_equal(y, 2.0 * x)
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'z' \(parameters: a, x"):
        catalog["axpy"](2.0, x, y, z=4)
    with pytest.raises(TypeError, match="multiple values for argument 'x'"):
        catalog["axpy"](2.0, x, y, 4, x=x)
    with pytest.raises(TypeError, match="missing argument 'y' before"):
        catalog["axpy"](2.0, x, n=4)


def test_implementations_and_selection(catalog):
    scale = catalog["scale"]
    assert scale.implementations == ("numba", "python", "cuda")
    assert scale.selected() == "numba"  # real Numba, preferred over Python
    assert scale.selected(device=True) == "cuda"
    assert catalog["shift"].selected(device=True) == "host"
    assert catalog["square_sum"].selected() == "numpy"
    with use_host_kernel_implementation("python"):
        assert scale.selected() == "python"
        x = np.ones(3)
        scale(x, 2.0, 3)
        np.testing.assert_array_equal(x, 2.0)
    with use_host_kernel_implementation("numba"):
        with pytest.raises(LookupError, match="kernel 'shift' has no 'numba' implementation"):
            catalog["shift"](np.ones(2), 2)
    assert Kernel(np.add).selected() == "host"


def test_host_implementations_errors_and_reset():
    calls = []

    def broken():
        calls.append(1)
        raise ImportError("no such compiler")

    impls = HostImplementations("k", {"python": lambda: len, "numba": broken})
    with pytest.warns(RuntimeWarning, match="running the Python version"):
        assert impls.selected() == "python"
    assert impls.selected() == "python" and calls == [1]  # the failure is remembered
    with pytest.raises(KernelImplementationError, match="failed to load: ImportError") as info:
        impls.get("numba")
    assert isinstance(info.value.__cause__, ImportError)
    impls.reset()
    with pytest.warns(RuntimeWarning):
        impls.selected()
    assert calls == [1, 1]
    with pytest.raises(ValueError, match="'python' implementation is required"):
        HostImplementations("k", {"numba": broken})
    with pytest.raises(ValueError, match="unknown host implementation"):
        HostImplementations("k", {"python": len, "fortran": len})
    with pytest.raises(ValueError, match="must be one of"):
        xp.kernels.set_host_kernel_implementation("PYCCEL")


def test_environment_variable_is_validated_at_import():
    code = "import cunumpy.kernels as k; print(k.get_host_kernel_implementation())"
    ok = subprocess.run(
        [sys.executable, "-c", code],
        env={"CUNUMPY_HOST_KERNEL_IMPLEMENTATION": " Numba ", "PATH": ""},
        capture_output=True,
        text=True,
    )
    assert ok.stdout.strip() == "numba", ok.stderr
    bad = subprocess.run(
        [sys.executable, "-c", code],
        env={"CUNUMPY_HOST_KERNEL_IMPLEMENTATION": "fortran", "PATH": ""},
        capture_output=True,
        text=True,
    )
    assert bad.returncode != 0 and "CUNUMPY_HOST_KERNEL_IMPLEMENTATION" in bad.stderr


def test_compiled_host_kernel_falls_back_once():
    import kernel_pkg.shift.shift_kernels as module

    def failing(mod):
        raise RuntimeError("compiler exploded")

    chk = CompiledHostKernel(module, "shift", failing)
    assert repr(chk) == "CompiledHostKernel('shift', not built)"
    x = np.zeros(3)
    with pytest.warns(RuntimeWarning, match="could not be compiled"):
        chk(x, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        chk(x, 3)
    np.testing.assert_array_equal(x, 2.0)
    assert repr(chk) == "CompiledHostKernel('shift', failed)"
    assert "compiler exploded" in str(chk.error)


def test_pyccel_compiles_for_real_and_caches(tmp_path, monkeypatch):
    pytest.importorskip("pyccel")
    monkeypatch.setenv("CNTEST_KERNEL_CACHE", str(tmp_path))
    cache = PyccelCache("cntest")
    kernel = Kernel.from_folder(
        "kernel_pkg.axpy", compile_host=cache, outputs="annotations", missing_cuda="fallback"
    )
    assert kernel.implementations == ("pyccel", "python", "cuda")
    assert kernel.selected() == "pyccel"
    compiled = kernel.host_kernel.kernel.get("pyccel")
    assert compiled is not kernel.host_kernel.kernel.python
    x, y = np.linspace(0, 1, 7), np.ones(7)
    kernel(0.5, x, y, 7)
    np.testing.assert_allclose(y, 1.0 + 0.5 * x, rtol=0, atol=0)
    builds = [p for p in tmp_path.iterdir() if p.is_dir()]
    assert len(builds) == 1 and builds[0].name.startswith("axpy_kernels-")
    import kernel_pkg.axpy.axpy_kernels as module

    assert cache(module) is cache(module)  # loaded once, no second build
    assert [p for p in tmp_path.iterdir() if p.is_dir()] == builds
    kernel.check_signature()


def test_pyccel_compile_error_is_reported(tmp_path, monkeypatch):
    pytest.importorskip("pyccel")
    monkeypatch.setenv("CNTEST_KERNEL_CACHE", str(tmp_path / "cache"))
    bad = tmp_path / "bad_kernels.py"
    bad.write_text("def bad(x: 'float[:]'):\n    x[0] = undefined_name\n")
    with pytest.raises(xp.exceptions.PyccelCompileError, match="could not compile bad_kernels"):
        PyccelCache("cntest")(bad)
    assert not [p for p in (tmp_path / "cache").iterdir() if p.is_dir()]  # nothing published


def test_check_signature_names_both_sides():
    def scale(x, factor, n):
        pass

    kernel = Kernel(scale, CudaKernel(SCALE_CU, "scale"))
    with pytest.raises(ValueError) as info:
        kernel.check_signature()
    assert str(info.value) == (
        "kernel 'scale': the host kernel takes (x, factor, n), the CUDA kernel (x, a, n)"
    )
    cat = KernelCatalog([kernel])
    with pytest.raises(KernelSignatureMismatchError, match="^host and CUDA kernels take diff"):
        cat.check_signatures()


def test_compile_all_reports_every_failure_without_a_gpu(catalog):
    if xp.cupy_available():
        pytest.skip("a GPU is present")
    with pytest.raises(RuntimeError) as info:
        catalog.compile_all(jobs=2)
    assert "2 of 2 kernel(s) failed" in str(info.value)
    assert "'axpy'" in str(info.value) and "'scale'" in str(info.value)


def test_kernel_construction_errors():
    with pytest.raises(ValueError, match="dispatch must be"):
        Kernel(len, dispatch="gpu")
    with pytest.raises(ValueError, match="missing_cuda must be"):
        Kernel(len, missing_cuda="ignore")
    with pytest.raises(TypeError, match="cuda_kernel must be a CudaKernel"):
        Kernel(len, len)
    with pytest.raises(ValueError, match="host_options are for wrapping a plain callable"):
        Kernel(PyccelKernel(len), host_options={"outputs": ()})
    with pytest.raises(ModuleNotFoundError, match="is not a package"):
        Kernel.from_folder("kernel_pkg.shift.shift_kernels")
    with pytest.raises(KernelFolderError, match="has no host kernel shift_cpu.py"):
        Kernel.from_folder("kernel_pkg.shift", host_suffix="_cpu")
    with pytest.raises(ValueError, match="outputs must be names, indices or 'annotations'"):
        Kernel.from_folder("kernel_pkg.shift", outputs="all")


def test_outputs_declarations():
    def k(a: float, x: "Final[float[:]]", y: "float[:]", z, n: int):  # noqa: F821, UP037
        pass

    assert outputs_from_annotations(k) == ("y", "z")
    assert outputs_from_annotations(lambda a, b: None) is None
    assert PyccelKernel(k, outputs="annotations").outputs == ("y", "z")
    with pytest.raises(KernelOutputsError, match=r"did you mean outputs=\(2,\)\?"):
        PyccelKernel(k, outputs=2)
    with pytest.raises(TypeError, match="each outputs entry"):
        PyccelKernel(k, outputs=(True,))
    assert repr(PyccelKernel(k, outputs=(2,))) == (
        "PyccelKernel(kernel='k', use_cupy=None, outputs=(2,))"
    )


def test_pyccel_kernel_on_numpy_calls_directly():
    seen = []
    kernel = PyccelKernel(lambda a, b=None: seen.append((a, b)) or a)
    x = np.ones(3)
    with xp.profiling.count_transfers() as counter:
        assert kernel(x, b=2) is x
    assert seen == [(x, 2)] and counter.total == 0


def test_as_kernel_array_on_the_host():
    a = np.arange(12.0).reshape(3, 4)
    assert as_kernel_array(a, a) is a
    strided = a[:, ::2]
    copy = as_kernel_array(strided, a)
    assert copy.flags.c_contiguous and copy is not strided
    assert np.shares_memory(as_kernel_array(strided, a, strided=True), a)
    assert as_kernel_array(a, a, np.float32).dtype == np.float32
    column = a[:, :1]  # length-1 axis with a non-C stride
    fixed = as_kernel_array(column, a, strided=True)
    assert fixed.strides[1] == 8 and np.shares_memory(fixed, a)


def test_kernel_profile_on_the_host(catalog):
    x = np.ones(64)
    with xp.profiling.kernel_profile() as profile:
        for _ in range(3):
            catalog["scale"](x, 1.5, 64)
        catalog["shift"](x, 64)
    data = profile.as_dict()
    assert data["scale"]["host"]["calls"] == 3 and data["shift"]["host"]["calls"] == 1
    assert data["scale"]["host"]["bytes"] == 0
    report = profile.report()
    assert report.startswith("kernel profile: 4 call(s) of 2 kernel(s), by total time")
    assert "still falling back" not in report
    catalog["scale"](x, 1.5, 64)  # not profiled any more
    assert profile.as_dict()["scale"]["host"]["calls"] == 3


def test_kernel_testing_does_not_import_pytest():
    code = (
        "import sys, cunumpy.kernel_testing as kt; assert 'pytest' not in sys.modules; "
        "kt.BACKENDS; assert 'pytest' in sys.modules; print('ok')"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.stdout.strip() == "ok", done.stderr


def test_parity_cases_mark_missing_test_args(catalog):
    from cunumpy.kernel_testing import parity_cases

    cases = parity_cases(catalog)
    assert [c.id for c in cases] == ["axpy", "scale"]
    assert all(not c.marks for c in cases)
    bare = KernelCatalog([Kernel(len, CudaKernel(SCALE_CU, "scale"))])
    (case,) = parity_cases(bare)
    assert case.marks[0].kwargs["reason"] == "kernel 'scale' has no scale_test_args.py"


def test_host_parameters_of_a_package_compiled_in_place(tmp_path, monkeypatch):
    # struphy compiles its kernel folders in place (`struphy compile`): importing the host
    # module then gives Pyccel's extension, whose functions are builtins without a signature;
    # the parameter names come from the stub Pyccel writes into __pyccel__/
    pytest.importorskip("pyccel")
    import shutil

    from cunumpy.kernels._pyccel_cache import _pyccel_command

    package = tmp_path / "inplace_pkg"
    shutil.copytree(Path(__file__).parents[1] / "kernel_pkg" / "axpy", package / "axpy")
    (package / "__init__.py").write_text("")
    folder = package / "axpy"
    done = subprocess.run(
        [*_pyccel_command(), "axpy_kernels.py", "--language", "c"],
        cwd=folder, capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    monkeypatch.syspath_prepend(str(tmp_path))
    kernel = Kernel.from_folder("inplace_pkg.axpy", missing_cuda="fallback")
    python = kernel.host_kernel.kernel.python
    assert type(python).__name__ == "builtin_function_or_method"  # the compiled one
    assert kernel.host_parameters() == ("a", "x", "y", "n")
    x, y = np.linspace(0, 1, 7), np.ones(7)
    with xp.use_backend("numpy"):
        kernel(0.5, x, y, 7)
    np.testing.assert_allclose(y, 1.0 + 0.5 * x, rtol=0, atol=0)


def test_071_private_dispatch_module_is_a_deprecated_alias():
    # feectools 0.10.0's device tests import Kernel from 0.7's private cunumpy._dispatch
    import importlib

    import cunumpy.kernels

    sys.modules.pop("cunumpy._dispatch", None)
    with pytest.warns(DeprecationWarning, match="from cunumpy.kernels import Kernel"):
        alias = importlib.import_module("cunumpy._dispatch")
    assert alias.Kernel is cunumpy.kernels.Kernel and alias.CudaKernel is cunumpy.kernels.CudaKernel
    assert set(alias.__all__) == set(cunumpy.kernels.__all__)
