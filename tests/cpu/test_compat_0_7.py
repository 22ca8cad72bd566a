"""Programs written for cunumpy 0.7.1 keep working: the names 0.7 had, with its behaviour.

Expected values come from cunumpy 0.7.1 itself (``data/compat_0.7.1.json``, written by
``scripts/gen_compat_0_7_1.py`` in a venv with 0.7.1). The fake-CuPy cases run in a
subprocess so the fake never leaks into other tests.
"""

from __future__ import annotations

import ast
import importlib.util
import io
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import cunumpy as xp
from cunumpy.arguments import CudaStruct, write_cuda_header
from cunumpy.cuda import CudaParameter
from cunumpy.exceptions import CudaStructError, RemovedNameError
from cunumpy.kernels import CompiledHostKernel, CudaKernel, PyccelCache

_ROOT = Path(__file__).resolve().parents[2]
_DATA = json.loads((Path(__file__).with_name("data") / "compat_0.7.1.json").read_text())


def _cases():
    spec = importlib.util.spec_from_file_location(
        "gen_compat_0_7_1", _ROOT / "scripts" / "gen_compat_0_7_1.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


CASES = _cases()


def _fields(struct):
    return [
        [
            f.name,
            f.ctype,
            None if f.dtype is None else str(f.dtype),
            f.pointer,
            f.view_ndim,
            f.contiguous,
        ]
        for f in struct.fields
    ]


def run_fake(code):
    env = {**os.environ, "OMP_NUM_THREADS": "1", "CUNUMPY_FAKE_CUPY": "1"}
    env.pop("CUNUMPY_BACKEND", None)
    result = subprocess.run(
        [sys.executable, "-c", "import cunumpy\n" + textwrap.dedent(code)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result.stdout


# -- CudaStruct and headers --------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(CASES.STRUCTS))
def test_struct_fields_are_parameters_as_in_0_7(name):
    struct = CudaStruct(name, CASES.STRUCTS[name])
    assert all(isinstance(f, CudaParameter) for f in struct.fields)
    assert _fields(struct) == _DATA["fields"][name]
    assert [f.name for f in struct.fields] == list(struct.field_names)
    assert [d["offset"] for d in struct.field_layout] == list(struct.offsets.values())


@pytest.mark.parametrize("file", sorted(CASES.HEADERS))
def test_write_cuda_header_writes_what_0_7_wrote(tmp_path, file):
    names, guard, includes = CASES.HEADERS[file]
    structs = [CudaStruct(n, CASES.STRUCTS[n]) for n in names]
    text = write_cuda_header(tmp_path / file, structs, guard, includes=includes)
    assert text == _DATA["write_cuda_header"][file]
    assert (tmp_path / file).read_text() == text


@pytest.mark.parametrize("name", sorted(CASES.TO_HEADER))
def test_to_header_is_0_7s_text(name):
    guard, includes = CASES.TO_HEADER[name]
    struct = CudaStruct(name, CASES.STRUCTS[name])
    assert struct.to_header(guard=guard, includes=includes) == _DATA["to_header"][name]


def test_angle_includes_stay_angle_includes():
    # 0.7 wrote #include "<x.h>", which does not compile; a <...> name is kept as written
    text = CudaStruct("P", CASES.STRUCTS["P"]).to_header(includes=["<cuda/std/complex>"])
    assert "#include <cuda/std/complex>\n" in text


@pytest.mark.parametrize("case", sorted(CASES.PYCCEL_CASES))
def test_from_pyccel_class_as_in_0_7(case, tmp_path):
    kwargs = dict(CASES.PYCCEL_CASES[case])
    name = kwargs.pop("name", None)
    expected = _DATA["from_pyccel_class"][case]
    for source in (CASES.PYCCEL_SOURCE, tmp_path / "args.py", str(tmp_path / "args.py")):
        (tmp_path / "args.py").write_text(CASES.PYCCEL_SOURCE)
        struct = CudaStruct.from_pyccel_class(source, "MarkerArguments", name, **kwargs)
        assert struct.name == expected["name"]
        assert struct.declaration == expected["declaration"]
        assert _fields(struct) == expected["fields"]


def test_from_pyccel_class_errors_name_the_problem(tmp_path):
    with pytest.raises(CudaStructError, match="no class 'Nope'"):
        CudaStruct.from_pyccel_class(CASES.PYCCEL_SOURCE, "Nope")
    with pytest.raises(CudaStructError, match=r"exclude names \['typo'\]"):
        CudaStruct.from_pyccel_class(CASES.PYCCEL_SOURCE, "MarkerArguments", exclude=["typo"])
    source = "class A:\n    def __init__(self, x):\n        self.x = x\n"
    with pytest.raises(CudaStructError, match="'x' .* has no type annotation"):
        CudaStruct.from_pyccel_class(source, "A")


def test_check_source_compares_the_members():
    struct = CudaStruct("P", CASES.STRUCTS["P"])
    struct.check_source("struct P {\n  double *x; int n;\n  double charge; bool * alive; };")
    struct.check_source("typedef struct { double* x; int n; double charge; bool* alive; } P;")
    struct.check_source("__global__ void k(P p) {}")  # defined elsewhere: nothing to compare
    two = CudaStruct("T", [("x", "double"), ("y", "double"), ("p", "int*"), ("q", "int*")])
    two.check_source("struct T { double x, y; int *p, *q; };")
    spelled = CudaStruct("S", [("c", "char"), ("n", "long long"), ("v", "Array1D<float>")])
    spelled.check_source("struct S { signed char c; int64_t n; Array1D< float > v; };")
    with pytest.raises(CudaStructError, match="does not match its CudaStruct"):
        struct.check_source("struct P { double* x; double charge; int n; bool* alive; };")
    with pytest.raises(CudaStructError, match="does not match"):
        struct.check_source("typedef struct { float* x; int n; double charge; bool* alive; } P;")
    with pytest.raises(CudaStructError, match="cannot compare"):
        struct.check_source("struct P { double* x; int n; double charge; bool* alive; int f(); };")


# -- CudaKernel introspection ------------------------------------------------------------------
def test_launch_shape_as_in_0_7():
    for (block_size, n, grid, block, shapes), want in zip(
        CASES.LAUNCH_SHAPES, _DATA["launch_shape"], strict=True
    ):
        kernel = CudaKernel(CASES.KERNEL, "k", block_size=block_size)
        args = None if shapes is None else tuple(np.zeros(s) for s in shapes)
        got = kernel.launch_shape(
            None if n is None else (n if isinstance(n, int) else tuple(n)),
            grid=None if grid is None else (grid if isinstance(grid, int) else tuple(grid)),
            block=None if block is None else tuple(block),
            args=args,
        )
        assert [list(got[0]), list(got[1])] == want, (block_size, n, grid, block, shapes)


def test_launch_shape_errors_and_callable_rule():
    kernel = CudaKernel(CASES.KERNEL, "k")
    with pytest.raises(TypeError, match="exactly one of n_threads and grid"):
        kernel.launch_shape(10, grid=2)
    sized = CudaKernel(CASES.KERNEL, "k", block_size=32, n_threads_from=lambda a: a[1] * 2)
    assert sized.launch_shape(args=(np.zeros(1), 40)) == ((3,), (32,))


def test_prepare_args_gives_what_the_kernel_receives():
    scale = CudaKernel('extern "C" __global__ void scale(double a, int n) {}', "scale")
    out = scale.prepare_args(2, 10)
    assert out == (2.0, 10) and type(out[0]) is np.float64 and type(out[1]) is np.int32
    with pytest.raises(OverflowError):
        scale.prepare_args(2.0, 2**40)
    with pytest.raises(TypeError):
        scale.prepare_args(2.0)


def test_compile_options_and_included_headers(tmp_path):
    (tmp_path / "mine.cuh").write_text("#include <cunumpy/index.cuh>\n")
    source = '#include "mine.cuh"\nextern "C" __global__ void f(double* x) {}\n'
    kernel = CudaKernel(source, "f", options=("-DX=1",), source_dir=tmp_path, debug=True)
    names = [p.name for p in kernel.included_headers]
    assert names == ["mine.cuh", "index.cuh"]
    opts = kernel.compile_options()
    assert opts[0] == "-DX=1" and "-DCUNUMPY_BOUNDS_CHECK" in opts
    assert any(o.startswith("-I") and o.endswith("include") for o in opts)
    quiet = CudaKernel(source, "f", source_dir=tmp_path, debug=False)
    assert "-DCUNUMPY_BOUNDS_CHECK" not in quiet.compile_options()


# -- top level ---------------------------------------------------------------------------------
def test_default_float_dtype_and_require_version():
    assert xp.default_float_dtype() == np.float64
    assert xp.asarray([0.5], dtype=xp.default_float_dtype()).dtype == np.float64
    xp.require_version("0.7.1")
    xp.require_version(xp.__version__ + ".dev1")
    with pytest.raises(ImportError, match="cunumpy 99.0 or newer"):
        xp.require_version("99.0")


def test_host_call_on_numpy_is_a_plain_call():
    seen = []
    out = xp.host_call(lambda x, k=1: seen.append(xp.get_backend()) or x * k, np.ones(3), k=2)
    assert seen == ["numpy"] and isinstance(out, np.ndarray) and out.tolist() == [2, 2, 2]

    class Grid:
        @xp.setup_on_host
        def __init__(self, n):
            self.x = xp.linspace(0.0, 1.0, n)

        @xp.evaluate_on_host
        def cumulative(self, y):
            return np.cumsum(y) + self.x

    grid = Grid(3)
    assert Grid.cumulative.__name__ == "cumulative"
    np.testing.assert_array_equal(grid.cumulative(np.ones(3)), [1.0, 2.5, 4.0])


def test_host_call_on_the_emulated_device_moves_arrays_once_each_way():
    out = run_fake(
        """
        import numpy as np
        import cunumpy as xp
        from cunumpy.profiling import count_transfers
        xp.set_backend("cupy")
        a = xp.arange(4.0)
        with count_transfers() as c:
            r = xp.host_call(lambda x, y: (x * 2, [y[0], 3.0], xp.get_backend()), a, [a, 1])
        assert xp.is_gpu(r[0]) and xp.is_gpu(r[1][0]) and r[1][1] == 3.0
        assert r[2] == "numpy"
        print(c.to_host, c.to_device)
        # no device argument: a plain call, on NumPy, results stay on the host
        r = xp.host_call(lambda: xp.zeros(2))
        assert isinstance(r, np.ndarray)

        class Profile:
            @xp.setup_on_host
            def __init__(self, n):
                self.x = xp.linspace(0.0, 1.0, n)
            @xp.evaluate_on_host
            def f(self, y):
                return np.cumsum(y) + self.x
        p = Profile(4)
        assert isinstance(p.x, np.ndarray) and xp.get_backend() == "cupy"
        assert xp.is_gpu(p.f(xp.ones(4))) and isinstance(p.f(np.ones(4)), np.ndarray)
        print(xp.to_numpy(p.f(xp.ones(4))).tolist())
        """
    )
    counts, values = out.strip().splitlines()
    assert counts == "1 2"  # `a` copied once although passed twice; two arrays back
    assert values == str((np.cumsum(np.ones(4)) + np.linspace(0.0, 1.0, 4)).tolist())


def test_the_xp_module_of_0_7():
    import cunumpy.xp as backend_module

    assert xp.xp is backend_module
    assert backend_module.array_backend.backend == xp.get_backend() == "numpy"
    assert backend_module.array_backend.xp is backend_module.xp
    assert backend_module.xp.__name__ == "array_api_compat.numpy"
    a = np.arange(3.0)
    assert backend_module.to_numpy(array=a) is a
    assert xp.to_numpy(array=a) is a and xp.is_cpu(array=a) and not xp.is_gpu(array=a)
    assert xp.get_array_backend(array=a) == "numpy"
    assert xp.cupy_version_supported(cupy_version="14.0.0")
    seen = []
    own = backend_module.ArrayBackend("numpy")
    own.add_listener(lambda m: seen.append(m.__name__))
    with own.use_backend("numpy"):
        assert own.backend == "numpy"
    assert seen == ["array_api_compat.numpy"]
    with pytest.raises(ValueError):
        own.set("gpu")


def test_missing_names_name_cunumpy_and_removed_ones_say_what_replaces_them():
    with pytest.raises(AttributeError, match="module 'cunumpy' has no attribute 'no_such_name'"):
        xp.no_such_name  # noqa: B018
    with pytest.raises(RemovedNameError, match="use cunumpy.kernels.CudaKernel instead"):
        xp.CudaKernel  # noqa: B018
    with pytest.raises(AttributeError, match="use cunumpy.arguments.CudaStruct"):
        xp.cuda.CudaStruct  # noqa: B018
    with pytest.raises(RemovedNameError, match="cunumpy.kernels.KernelArguments was removed"):
        xp.kernels.KernelArguments  # noqa: B018


def test_device_queries_without_a_gpu():
    assert xp.cuda.DEFAULT_SHARED_MEMORY_PER_BLOCK == 48 * 1024
    assert xp.cuda.max_shared_memory_per_block() == 48 * 1024
    assert xp.cuda.max_shared_memory_per_block(0, opt_in=True) == 48 * 1024
    assert xp.cuda.is_hip() is False
    xp.cuda.set_device(device_id=0)
    with pytest.raises(ValueError):
        xp.cuda.max_shared_memory_per_block(-1)


def test_device_queries_on_the_emulated_device():
    out = run_fake(
        """
        import cunumpy as xp
        cuda = xp.cuda
        print(cuda.max_shared_memory_per_block(), cuda.max_shared_memory_per_block(opt_in=True))
        print(cuda.is_hip())
        """
    )
    assert out.split() == [str(48 * 1024), str(227 * 1024), "False"]


# -- host kernels ------------------------------------------------------------------------------
def test_compiled_host_kernel_takes_a_module_name_and_has_0_7s_properties():
    import json as json_module

    kernel = CompiledHostKernel("json", "dumps", lambda module: module)
    assert kernel.module is json_module and kernel.python is json_module.dumps
    assert kernel.fallback is None and kernel.compiled is True
    assert kernel([1]) == "[1]"
    failing = CompiledHostKernel("json", "dumps", lambda module: 1 / 0, fallback=lambda x: "fb")
    assert failing.compiled is False and isinstance(failing.error, ZeroDivisionError)
    assert failing([1]) == "fb"


def test_pyccel_cache_members(tmp_path, monkeypatch):
    cache = PyccelCache("demo-kernels", env_prefix="demo")
    assert cache.cache_env == "DEMO_KERNEL_CACHE" and cache.openmp_env == "DEMO_OPENMP"
    monkeypatch.setenv("DEMO_KERNEL_CACHE", str(tmp_path / "c"))
    assert cache.cache_root() == tmp_path / "c" and cache.directory == tmp_path / "c"
    assert cache.fallback_root().name == "demo-kernels-kernels"
    assert cache.openmp_enabled()
    monkeypatch.setenv("DEMO_OPENMP", "0")
    assert not cache.openmp_enabled()
    module = tmp_path / "mod_kernels.py"
    module.write_text("def f(x: 'float[:]'):\n    x[0] = 1.0\n")
    key = cache.build_key(module)
    assert len(key) == 20 and key == cache.key(module.read_text())
    assert cache.build_key(module, "fortran") != key


# -- typing --------------------------------------------------------------------------------------
def test_the_stub_declares_every_public_name():
    stub = ast.parse((_ROOT / "python" / "cunumpy" / "__init__.pyi").read_text())
    declared = set()
    for node in stub.body:
        if isinstance(node, ast.ImportFrom):
            declared |= {a.asname or a.name for a in node.names}
        elif isinstance(node, ast.AnnAssign):
            declared.add(node.target.id)
    missing = sorted(set(xp.__all__) - declared)
    assert not missing, f"__init__.pyi lacks {missing}"
    assert any(isinstance(n, ast.ImportFrom) and n.module == "numpy" for n in stub.body)


def test_compile_log_stream_without_a_gpu_raises_before_writing():
    kernel = CudaKernel(CASES.KERNEL, "k")
    log = io.StringIO()
    if xp.cupy_available():
        pytest.skip("a GPU is present")
    with pytest.raises((RuntimeError, ImportError)):
        kernel.compile(log_stream=log)
    assert log.getvalue() == ""


def test_prepare_args_packs_views_and_structs_as_0_7_did():
    # the values below are what cunumpy 0.7.1 gives for the same call on its fake CuPy
    out = run_fake(
        """
        import numpy as np
        import cunumpy as xp
        from cunumpy.arguments import CudaStruct
        from cunumpy.kernels import CudaKernel
        xp.set_backend("cupy")
        S = CudaStruct("S", [("n", "int"), ("q", "double")])
        k = CudaKernel(
            '#include <cunumpy/array_view.cuh>\\nstruct S { int n; double q; };\\n'
            'extern "C" __global__ void f(Array2D<double> a, CArray1D<float> b, S s, '
            'double* p, int n) {}', "f", structs=[S])
        a = xp.zeros((4, 6))[:, ::2]
        b = xp.zeros(3, dtype=np.float32)
        p = xp.zeros(2)
        view, cview, s, ptr, n = k.prepare_args(a, b, S(n=3, q=2.5), p, np.int64(4))
        assert view["data"] == a.data.ptr and cview["data"] == b.data.ptr
        print(view["shape"].tolist(), view["strides"].tolist(), view.dtype.itemsize)
        print(cview["shape"].tolist(), cview.dtype.names, cview.dtype.itemsize)
        print(int(s["n"]), float(s["q"]), ptr is p, type(n).__name__, int(n))
        """
    )
    assert out.splitlines() == [
        "[4, 3] [6, 2] 40",
        "[3] ('data', 'shape') 16",
        "3 2.5 True int32 4",
    ]
