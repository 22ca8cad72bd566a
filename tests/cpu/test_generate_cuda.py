"""``xp.kernels.generate_cuda``: host kernels in struphy's style translated to CUDA C, run on the
emulated device and compared with the host kernel (the reference); kernels whose parallel loop
cannot be proven race-free are refused with the line and the array."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pytest

import cunumpy as xp
from cunumpy.exceptions import (
    CudaPortError,
    CudaPortInputError,
    CudaPortRaceError,
    CudaPortUnsupportedError,
)
from cunumpy.kernel_testing import (
    assert_kernels_agree,
)
from cunumpy.kernels import Kernel, KernelCatalog, generate_cuda

TESTS = Path(__file__).resolve().parents[1]
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))

import port_kernels as pk  # noqa: E402
from port_cases import CASES, args_deposit_2d, args_dot_sum  # noqa: E402
from port_test_support import needs_compiler  # noqa: E402


@needs_compiler
@pytest.mark.parametrize("name", sorted(CASES))
def test_generated_kernel_matches_the_host_kernel(name, emulated):
    host, make_args, how = CASES[name]
    src = generate_cuda(host)
    assert src.kernel == name
    assert {w[2] for w in src.writes} == {how}
    kernel = Kernel(host, src.cuda_kernel())
    KernelCatalog([kernel]).check_signatures()  # host and CUDA parameter names agree
    out = assert_kernels_agree(kernel, make_args, rtol=1e-12, atol=1e-12)
    assert any(np.any(a != 0) for a in out.values())  # the kernel did something


def test_floor_division_and_modulo_by_a_power_of_two_are_a_shift_and_a_mask():
    """Their parity with the host kernel on negative integers is the case above."""
    src = str(generate_cuda(pk.python_int_powers_of_two))
    assert "out(i, 0) = (long long)(k(i)) >> 1;" in src
    assert "out(i, 1) = (long long)(k(i)) & 1;" in src
    assert "((long long)((k(i) - 37)) >> 3)" in src and "((long long)((k(i) - 37)) & 7)" in src
    assert "((long long)(k(i)) >> 0) + ((long long)(k(i)) & 0)" in src
    assert "cunumpy_port_floordiv" not in src and "cunumpy_port_mod" not in src
    # other divisors keep Python's rounding through the helper
    assert "cunumpy_port_floordiv(k(i), d)" in str(generate_cuda(pk.python_int_semantics))


def test_generated_kernels_launch_in_64_thread_blocks_capped_at_112_registers():
    """cuda_kernel() hands CudaKernel block_size=64 and max_registers=112 (nine 64-thread
    blocks an SM, not eight); the source says where they come from, and a caller can change
    both. The GPU tests build kernels under a cap low enough to bind and compare them with
    their host kernels."""
    from cunumpy.kernels._generate import BLOCK_SIZE, MAX_REGISTERS

    assert (BLOCK_SIZE, MAX_REGISTERS) == (64, 112)
    for kernel in (pk.deposit_1d, pk.push_v_rotation, pk.dot_sum):
        src = generate_cuda(kernel)
        assert f'extern "C" __global__ void {kernel.__name__}(' in src
        assert "blocks of BLOCK_SIZE" in src and "MAX_REGISTERS" in src
        assert "__maxnreg__" not in src and "__launch_bounds__" not in src
        built = src.cuda_kernel()
        assert (built.block_size, built.max_registers) == (64, 112)
        assert src.cuda_kernel(max_registers=None).max_registers is None
        assert src.cuda_kernel(max_registers=96, block_size=128).max_registers == 96
        assert src.cuda_kernel(block_size=128).block_size == 128


def test_source_is_readable_and_mirrors_the_host_kernel():
    src = generate_cuda(pk.deposit_1d)
    assert (
        'extern "C" __global__ void deposit_1d(CArray2D<double> markers, '
        "long long n_markers, CArray1D<double> grid, double dx)" in src
    )
    assert "// L45: grid[i0 % nx] += markers[ip, 6] * (1.0 - f)" in src
    assert "cunumpy_atomic_add(&grid(cunumpy_port_mod(i0, nx))" in src
    assert src.atomics == ("grid",)
    assert (src.loop_line, src.loop_var, src.n_threads) == (41, "ip", "n_markers")
    assert "line 45: write to grid: atomic add" in src.describe()
    push = generate_cuda(pk.push_v_rotation)
    # helpers become __device__ functions, once each, before the kernel
    assert push.count("__device__ void cross(") == 1
    assert push.count("__device__ double norm3(") == 1
    assert push.index("norm3(") < push.index("__global__")
    assert push.atomics == ()


def test_sample_call_types_replace_missing_annotations():
    def untyped(a, b, n):  # noqa: ARG001 - found through its module's source
        pass

    src = generate_cuda(pk.deposit_2d, sample_args=args_deposit_2d("numpy", 0))
    assert "CArray2D<double> rho" in src
    f32 = generate_cuda(
        pk.deposit_2d,
        sample_args=(np.zeros(3, np.float32), np.zeros(3), np.zeros(3), np.zeros((2, 2)), 1.0, 1.0),
    )
    assert "CArray1D<float> xs" in f32
    with pytest.raises(CudaPortInputError, match="not C-contiguous"):
        generate_cuda(
            pk.deposit_2d,
            sample_args=(np.zeros(3), np.zeros(3), np.zeros(3), np.zeros((4, 4))[:, ::2], 1.0, 1.0),
        )


@pytest.mark.parametrize(
    ("kernel", "line", "array", "construct"),
    [
        (pk.shift_left, 116, "a", "read of another iteration's element"),
        (pk.scatter_assign, 121, "out", "unprovable write"),
        (pk.deposit_then_read, 134, "grid", "read of accumulated array"),
        (pk.conditional_index, 213, None, "carried scalar"),
        (pk.running_sum, 231, None, "scalar update"),
        (pk.sum_into_written, 249, "res", "reduction"),
    ],
)
def test_unprovable_kernels_are_refused_with_line_and_array(kernel, line, array, construct):
    with pytest.raises(CudaPortRaceError) as info:
        generate_cuda(kernel)
    err = info.value
    assert (err.function, err.line, err.array, err.construct) == (
        kernel.__name__,
        line,
        array,
        construct,
    )
    assert f"{kernel.__name__}, line {line}" in str(err)


def test_unsupported_constructs_name_the_construct():
    with pytest.raises(CudaPortUnsupportedError) as info:
        generate_cuda(pk.cross)  # no loop to run in parallel
    assert info.value.construct == "parallel loop"
    with pytest.raises(CudaPortInputError, match="line 3 is not a for loop"):
        generate_cuda(pk.deposit_1d, parallel_loop=3)


@pytest.mark.parametrize(("kernel", "line"), [(pk.sum_then_assign, 240), (pk.total_charge, 128)])
def test_sum_assigned_after_the_loop_is_refused(kernel, line):
    with pytest.raises(CudaPortUnsupportedError) as info:
        generate_cuda(kernel)
    assert (info.value.line, info.value.construct) == (line, "reduction")
    assert "`out[k] += s`" in str(info.value)


def test_sum_is_a_partial_per_thread_then_one_atomic_add():
    src = generate_cuda(pk.dot_sum)
    assert src.writes == (("res", 224, "reduction"),)
    assert "cunumpy_atomic_add(&res(0), (double)(s));" in src
    assert "if (blockIdx.x == 0 && threadIdx.x == 0) s += cunumpy_s_init;" in src
    assert src.n_threads_of(args_dot_sum("numpy", 0)) == 257 - 3
    assert "line 224: write to res: sum of every thread's partial" in src.describe()


def test_generic_kernel_is_instantiated_for_float():
    src = generate_cuda(pk.axpy_generic)
    assert src.typevars == (("T", "float"),)
    assert "double alpha, CArray2D<double> x, CArray2D<double> y" in src
    assert "generic T: instantiated for float" in src.describe()
    f32 = generate_cuda(
        pk.axpy_generic,
        sample_args=(np.float32(1.0), np.zeros((2, 2), np.float32), np.zeros((2, 2), np.float32)),
    )
    assert "CArray2D<float> x" in f32


def test_slice_assignments_run_element_by_element():
    src = generate_cuda(pk.push_slices)
    assert "for (long long cunumpy_k0 = 0; cunumpy_k0 < 3; ++cunumpy_k0) {" in src
    assert "v(cunumpy_k0) = markers((3 + cunumpy_k0), ip);" in src
    assert {(a, how) for a, _, how in src.writes} == {("markers", "owned")}
    # the right-hand side reads other elements of the array it writes: all of it first, as
    # Python does (parity in test_generate_cuda_helper_index.py)
    shift = generate_cuda(pk.shift_slice)
    assert "cunumpy_rhs[cunumpy_k0] = a(cunumpy_k0, i);" in shift
    assert "a((1 + cunumpy_k0), i) = cunumpy_rhs[cunumpy_k0];" in shift


@needs_compiler
@pytest.mark.parametrize("options", [[], ["-DCUNUMPY_PORT_CAP_TRAP_ONLY"]])
def test_local_array_sized_at_run_time_stops_when_over_its_reserve(options, emulated):
    # -DCUNUMPY_PORT_CAP_TRAP_ONLY drops the message on a GPU only (a bare __trap() there):
    # the emulated device still names the array
    from cunumpy.exceptions import EmulatedKernelFault

    src = generate_cuda(pk.window_sums)
    assert "double buf_data[CUNUMPY_PORT_LOCAL_CAP];" in src
    assert "#define CUNUMPY_PORT_LOCAL_CAP 64" in src
    assert "#if defined(CUNUMPY_PORT_CAP_TRAP_ONLY) && defined(__CUDA_ARCH__)" in src
    kernel = src.cuda_kernel(options=options)
    with xp.use_backend("cupy"):
        x, out = xp.asarray(np.ones((4, 101))), xp.zeros(4)
        kernel(x, out, 4)
        np.testing.assert_array_equal(xp.to_numpy(out), np.full(4, 15.0))
        with pytest.raises(EmulatedKernelFault, match="'buf' .line 330. needs 101 elements"):
            kernel(x, out, 100)


def test_row_views_are_read_only():
    src = generate_cuda(pk.row_sums)
    assert "row = CArray1D<double>{m.data + " in src
    with pytest.raises(CudaPortUnsupportedError) as info:
        generate_cuda(pk.write_row)
    assert (info.value.construct, info.value.array) == ("write through a view", "row")
    with pytest.raises(CudaPortUnsupportedError) as info:
        generate_cuda(pk.shift_through_view)
    assert (info.value.construct, info.value.array) == ("slice", "row")


def test_offsets_computed_in_an_inner_loop_are_owned():
    src = generate_cuda(pk.stencil_rows_2d)
    assert src.writes == (("out", 205, "owned"),)
    assert src.loop_var == "i1"
    assert src.collapsed == (("i2", 196),)


@needs_compiler
def test_missing_cuda_generate_translates_on_the_first_device_call(emulated):
    rng = np.random.default_rng(5)
    xs, ys, w = (rng.uniform(0.0, 1.0, 300) for _ in range(3))
    expected = np.zeros((8, 6))
    pk.deposit_2d(xs, ys, w, expected, 1.0 / 8, 1.0 / 6)
    kernel = Kernel(pk.deposit_2d, missing_cuda="generate")
    assert kernel.cuda_kernel is None and kernel.generated_cuda is None
    with xp.use_backend("cupy"):
        rho = xp.zeros((8, 6))
        kernel(xp.asarray(xs), xp.asarray(ys), xp.asarray(w), rho, 1.0 / 8, 1.0 / 6)
        got = xp.to_numpy(rho)
    assert kernel.has_cuda and kernel.generated_cuda.atomics == ("rho",)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
    with xp.use_backend("cupy"):  # a later call runs the kept version (the fast path)
        rho2 = xp.zeros((8, 6))
        kernel(xp.asarray(xs), xp.asarray(ys), xp.asarray(w), rho2, 1.0 / 8, 1.0 / 6)
        np.testing.assert_allclose(xp.to_numpy(rho2), expected, rtol=1e-12, atol=1e-12)
    # the parity test of kernel_testing runs on a kernel that generates its CUDA version too
    other = Kernel(pk.stencil_rows_2d, missing_cuda="generate")
    assert_kernels_agree(other, CASES["stencil_rows_2d"][1], rtol=1e-12, atol=1e-12)
    assert other.generated_cuda.loop_var == "i1"


def test_missing_cuda_generate_raises_the_refusal(emulated):
    kernel = Kernel(pk.scatter_assign, missing_cuda="generate")
    with xp.use_backend("cupy"), pytest.raises(CudaPortRaceError, match="scatter_assign, line 121"):
        kernel.get_kernel()
    assert kernel.cuda_kernel is None


WALKTHROUGH = TESTS.parent / "examples" / "particle_pusher"


@needs_compiler
@pytest.mark.parametrize("name", ["boris_push", "deposit_charge"])
def test_walkthrough_kernels_are_translated_and_agree(name, emulated, monkeypatch):
    """The particle pusher walk-through's pusher and deposit (a Particles struct argument,
    unannotated: typed by a sample call) generated and compared with their host versions."""
    import importlib

    monkeypatch.syspath_prepend(str(WALKTHROUGH))
    host = importlib.import_module(f"pusher.{name}.{name}_kernels")
    test_args = importlib.import_module(f"pusher.{name}.{name}_test_args")
    with xp.use_backend("cupy"):
        sample = test_args.make_args("cupy", 0)
    src = generate_cuda(getattr(host, name), sample_args=sample)
    assert "struct Particles {" in src
    assert src.n_threads == "p.n"
    if name == "deposit_charge":
        assert src.atomics == ("rho",)
    else:
        assert {w[0] for w in src.writes} == {"p.vx", "p.vy", "p.x", "p.y"} and src.atomics == ()
    kernel = Kernel(getattr(host, name), src.cuda_kernel())
    assert_kernels_agree(
        kernel,
        test_args.make_args,
        rtol=test_args.RTOL,
        atol=test_args.ATOL,
        outputs=test_args.OUTPUTS,
    )


def _run(args, env_extra=None, cwd=None):
    import os
    import subprocess

    env = {**os.environ, **(env_extra or {})}
    return subprocess.run(
        [sys.executable, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=600
    )


@needs_compiler
@pytest.mark.parametrize("device", ["numpy", "emulated"])
def test_example_runs(device):
    env = {"CUNUMPY_FAKE_CUPY": "1", "CUNUMPY_BACKEND": "cupy"} if device == "emulated" else {}
    result = _run([str(TESTS.parent / "examples" / "generate_cuda.py")], env)
    assert result.returncode == 0, result.stderr
    backend = "cupy" if device == "emulated" else "numpy"
    # every particle deposits its whole weight (1.0): the total is the particle count
    assert f"backend {backend}: total charge 1000.000000" in result.stdout
    if device == "emulated":  # the tries leave rho as the one deposit made it
        assert "fastest build here: " in result.stdout
        assert "after tuning: total charge 1000.000000" in result.stdout
        assert re.search(r"Kernel.tune kept '[^']+': total charge 1000.000000", result.stdout)
    assert "rho: atomic add" in result.stdout
    assert "cunumpy_atomic_add(&rho(" in result.stdout
    # the grid kernel: one thread per interior point, each the mean of five ones
    assert "collapsed with `for j` at line" in result.stdout
    assert "smooth: 2852 threads, sum 2852.0" in result.stdout


KERNEL = """
import math


def dep(x: "float[:]", rho: "float[:]", dx: float):
    n = rho.shape[0]
    for ip in range(x.shape[0]):
        g = x[ip] / dx
        i0 = int(math.floor(g))
        rho[i0 % n] += 1.0 - (g - i0)
        rho[(i0 + 1) % n] += g - i0


def racy(x: "float[:]", n: int):
    for i in range(1, n):
        x[i] = x[i - 1] + 1.0
"""

TEST_ARGS = """
import numpy as np

import cunumpy as xp

RTOL = 1e-12
ATOL = 1e-12


def make_args(backend, seed):
    rng = np.random.default_rng(seed)
    return (xp.asarray(rng.uniform(0.0, 2.0, 300)), xp.zeros(10), 0.2)
"""


@needs_compiler
def test_port_command_writes_next_to_the_kernel_and_checks_parity(tmp_path):
    folder = tmp_path / "mypkg" / "dep"
    folder.mkdir(parents=True)
    (tmp_path / "mypkg" / "__init__.py").write_text("")
    (folder / "__init__.py").write_text("")
    (folder / "dep_kernels.py").write_text(KERNEL)
    (folder / "dep_test_args.py").write_text(TEST_ARGS)
    env = {"PYTHONPATH": str(tmp_path)}
    result = _run(["-m", "cunumpy", "port", "mypkg.dep.dep_kernels:dep"], env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "parallel loop `for ip in range(...)` at line 7" in result.stdout
    assert "line 10: write to rho: atomic add" in result.stdout
    assert "parity: the generated kernel agrees with the host kernel" in result.stdout
    written = (folder / "dep_cuda.cu").read_text()
    assert 'extern "C" __global__ void dep(' in written
    # the catalog picks the written file up as the kernel's CUDA version
    sys.path.insert(0, str(tmp_path))
    try:
        from cunumpy.kernels import KernelCatalog as Catalog

        assert "1 of 1" in Catalog.from_package("mypkg").summary()
    finally:
        sys.path.remove(str(tmp_path))
    # never over an existing file
    again = _run(["-m", "cunumpy", "port", "mypkg.dep.dep_kernels:dep"], env)
    assert again.returncode == 1 and "not overwritten" in again.stderr
    assert (folder / "dep_cuda.cu").read_text() == written
    refused = _run(["-m", "cunumpy", "port", "mypkg.dep.dep_kernels:racy"], env)
    assert refused.returncode == 1
    assert "refused: racy, line 16: reads 'x' at an index other than 'i'" in refused.stdout
    assert not (folder / "racy_cuda.cu").exists()


@needs_compiler
def test_catalog_missing_cuda_generate_generates_unported_kernels(tmp_path, emulated, monkeypatch):
    folder = tmp_path / "genpkg" / "dep"
    folder.mkdir(parents=True)
    (tmp_path / "genpkg" / "__init__.py").write_text("")
    (folder / "__init__.py").write_text("")
    (folder / "dep_kernels.py").write_text(KERNEL)
    monkeypatch.syspath_prepend(str(tmp_path))
    catalog = KernelCatalog.from_package("genpkg", missing_cuda="generate")
    kernel = catalog["dep"]
    assert kernel.cuda_kernel is None  # nothing until the first device-side call
    rng = np.random.default_rng(3)
    x = rng.uniform(0.0, 2.0, 300)
    expected = np.zeros(10)
    with xp.use_backend("numpy"):
        kernel(x, expected, 0.2)
    with xp.use_backend("cupy"):
        rho = xp.zeros(10)
        kernel(xp.asarray(x), rho, 0.2)
        got = xp.to_numpy(rho)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
    assert kernel.generated_cuda.atomics == ("rho",)


@needs_compiler
def test_struct_class_named_in_annotation_is_laid_out_and_agrees(emulated):
    """``args: "GridArguments"`` names a Pyccel argument class: it becomes a struct argument
    laid out by ``CudaStruct.from_pyccel_class`` (the 2-D field a ``CArray2D`` view), and the
    generated kernel agrees with the host kernel."""
    from port_cases import grid_args_maker

    from cunumpy.arguments import CudaStruct

    src = generate_cuda(pk.eval_on_grid)
    expected = CudaStruct.from_pyccel_class(Path(pk.__file__), "GridArguments", contiguous=True)
    assert [s.name for s in src.structs] == ["GridArguments"]
    # the __init__ parameters as from_pyccel_class lays them out, then the derived integer
    assert src.structs[0].field_names == (*expected.field_names, "n_cells")
    assert {k: src.structs[0].offsets[k] for k in expected.offsets} == expected.offsets
    assert "CArray2D<double> coef;" in src and "args.coef(" in src
    kernel = Kernel(pk.eval_on_grid, src.cuda_kernel())
    out = assert_kernels_agree(
        kernel, grid_args_maker(src.structs[0]), rtol=1e-12, atol=1e-12, outputs=["out"]
    )
    assert any(np.any(a != 0) for a in out.values())


def test_helpers_of_other_modules_become_device_functions():
    src = generate_cuda(pk.norms_other_module)
    assert src.helpers == (
        "port_helpers__cell_of",
        "port_helpers__scaled_norm",
        "port_helpers__square",
    )
    assert src.count("__device__ double port_helpers__square(") == 1
    # comments of the helpers quote their own file and line
    assert "// port_helpers.py:12: return x * x" in src


@needs_compiler
def test_struct_passed_to_a_helper_of_another_module_agrees(emulated):
    from port_cases import grid_args_maker

    src = generate_cuda(pk.grid_other_module)
    assert "__device__ double port_helpers__read_coef(const GridArguments& args" in src
    assert "port_helpers__coef_at(args.coef, i, 0)" in src
    kernel = Kernel(pk.grid_other_module, src.cuda_kernel())
    out = assert_kernels_agree(
        kernel, grid_args_maker(src.structs[0]), rtol=1e-12, atol=1e-12, outputs=["out"]
    )
    assert any(np.any(a != 0) for a in out.values())


def test_helper_writing_a_struct_array_is_refused():
    with pytest.raises(CudaPortRaceError) as info:
        generate_cuda(pk.bump_other_module)
    err = info.value
    # the helper writes at the index it is given (ip % 4), which is not the iteration's own
    assert (err.line, err.array, err.construct) == (324, "args.coef", "unprovable write")
    assert "port_helpers__bump()" in str(err)


@needs_compiler
def test_plus_equal_into_a_struct_view_field_is_atomic(emulated):
    from port_cases import grid_args_maker

    src = generate_cuda(pk.deposit_on_grid)
    assert src.atomics == ("args.coef",)
    xs, host_args, _, n = grid_args_maker(src.structs[0])("numpy", 3)
    xs = np.asarray(xs)
    coef0 = host_args.coef.copy()
    pk.deposit_on_grid(xs, host_args, n)
    import cupy

    coef_d = cupy.asarray(coef0)
    dev = src.structs[0](
        coef=coef_d,
        h=host_args.h,
        nx=host_args.nx,
        shift=cupy.asarray(host_args.shift),
        n_cells=host_args.n_cells,
    )
    src.cuda_kernel()(cupy.asarray(xs), dev, n)
    np.testing.assert_allclose(cupy.asnumpy(coef_d), host_args.coef, rtol=1e-12, atol=1e-12)
    assert not np.array_equal(host_args.coef, coef0)


def test_unknown_annotation_class_is_refused_by_name():
    from cunumpy.kernels._generate import translate_source

    source = (
        "def k(a: 'float[:]', g: 'NoSuchArgs', n: int):\n"
        "    for i in range(n):\n        a[i] = 0.0\n"
    )
    with pytest.raises(CudaPortError) as info:
        translate_source(source, "k")
    assert "NoSuchArgs" in str(info.value) and info.value.line == 1


def test_local_arrays_from_numpy_names_keep_dtype_and_fill():
    """``from numpy import empty, zeros`` then ``zeros(3, dtype=float)``, as struphy writes
    them: a zero-filled local array of the given dtype (``empty`` is left unfilled)."""
    from cunumpy.kernels._generate import translate_source

    source = (
        "from numpy import empty, zeros\n\n"
        "def k(a: 'float[:,:]', out: 'float[:]', n: int):\n"
        "    v = zeros(3, dtype=float)\n"
        "    w = empty((2, 2), dtype=int)\n"
        "    for ip in range(n):\n"
        "        w[0, 0] = ip\n"
        "        out[ip] = a[ip, 0] + v[1] + w[0, 0]\n"
    )
    src = translate_source(source, "k")
    assert "double v_data[3];" in src and "long long w_data[4];" in src
    assert "v_data[k] = (double)0;" in src and "w_data[k] =" not in src


@needs_compiler
def test_a_trip_count_read_from_device_arrays_is_one_counted_copy_each(emulated):
    # stencil_rows_2d loops over range(s[0], e[0] + 1): the launch shape needs s and e on the host
    host, make_args, _ = CASES["stencil_rows_2d"]
    src = generate_cuda(host)
    with xp.use_backend("cupy"):
        args = make_args("cupy", 1)
    assert type(args[3]).__module__.startswith("cupy"), type(args[3])
    with xp.profiling.count_transfers() as c:
        # rows 2..9 and columns 1..6, collapsed: one thread per (i1, i2)
        assert src.n_threads_of(args) == 8 * 6
    assert c.to_host == 2 and c.to_device == 0, (c.to_host, c.to_device)


@needs_compiler
@pytest.mark.parametrize("host", [pk.eval_basis, pk.eval_basis_copy])
def test_struct_scratch_fields_are_per_thread_and_agree(host, emulated):
    """A struct parameter whose class's ``__init__`` allocates a scratch array (``self.w =
    np.empty(p[0] + 1)``, as struphy's ``SplineArguments``): the struct is laid out without
    it, every thread gets its own sized as ``__init__`` sizes it, helpers write it (the field
    passed whole) and read it (through a local name); a per-thread copy of the parameter
    (``BasisArguments(args.coef, args.p)``) is the parameter itself."""
    from port_cases import basis_args_maker

    src = generate_cuda(host)
    assert [s.name for s in src.structs] == ["BasisArguments"]
    assert src.structs[0].field_names == ("coef", "p")  # no scratch field in the layout
    assert "struct BasisArguments_thread {" in src and "CArray1D<double> w;" in src
    assert f"__device__ void {host.__name__}__body(" in src
    assert "double args__w_data[CUNUMPY_PORT_LOCAL_CAP];" in src
    assert "(self.p(0) + 1)" in src  # the extent of __init__, the parameter read from the field
    assert "BasisArguments(" not in src.split("struct BasisArguments_thread")[1]
    code = [ln for ln in src.splitlines() if not ln.strip().startswith("//")]
    assert not any("thread_args" in ln for ln in code)
    kernel = Kernel(host, src.cuda_kernel())
    KernelCatalog([kernel]).check_signatures()
    out = assert_kernels_agree(
        kernel, basis_args_maker(src.structs[0]), rtol=1e-12, atol=1e-12, outputs=["out"]
    )
    assert all(np.all(np.asarray(a) != 0) for a in out.values())


def test_helper_writing_a_struct_field_it_is_passed_is_refused():
    """The struct passed whole to a helper that passes its shared field ``coef`` on to a
    writer: a race, refused with the line and the field (scratch fields aside)."""
    with pytest.raises(CudaPortRaceError) as info:
        generate_cuda(pk.eval_basis_writes_coef)
    err = info.value
    assert (err.construct, err.array) == ("helper writes array", "args.coef")
    lines = Path(pk.__file__).read_text().splitlines()
    assert "fill_coef(xs[ip], args)" in lines[err.line - 1]


def test_struct_construction_other_than_a_copy_is_refused():
    with pytest.raises(CudaPortUnsupportedError) as info:
        generate_cuda(pk.eval_basis_copy_and_param)
    err = info.value
    assert err.construct == "struct construction"
    lines = Path(pk.__file__).read_text().splitlines()
    assert "thread_args = BasisArguments(args.coef, args.p)" in lines[err.line - 1]
    assert "'args' is also used besides the copy" in str(err)


def test_trip_count_of_numpy_size_is_the_launch_shape():
    """``n = size(x)`` before the loop (struphy's ``eval_spline_mpi_sparse_meshgrid``): the
    launch shape is the element count of the argument."""
    from cunumpy.kernels._generate import translate_source

    source = (
        "from numpy import size\n"
        "def k(a: 'float[:,:]', out: 'float[:]'):\n"
        "    n = size(a)\n"
        "    for i in range(n):\n"
        "        out[i] = 2.0 * i\n"
    )
    src = translate_source(source, "k")
    a = np.zeros((3, 4))
    assert src.n_threads_of((a, np.zeros(12))) == a.size


def test_helper_returning_a_tuple_returns_through_out_parameters():
    """``i, j, frac = cell_and_fraction(...)`` (struphy's ``get_spans``): the helper writes its
    results through pointers; using the tuple as a value is refused, naming the line."""
    src = generate_cuda(pk.gather_at_cells)
    head = "__device__ void cell_and_fraction(double x, double y, long long n, "
    assert head + "long long* cunumpy_ret0, long long* cunumpy_ret1, double* cunumpy_ret2)" in src
    assert "*cunumpy_ret2 = 0;" in src
    outs = "&cunumpy_tmp0, &cunumpy_tmp1, &cunumpy_tmp2"
    assert f"cell_and_fraction(xs(ip, 0), xs(ip, 1), n, {outs});" in src
    with pytest.raises(CudaPortUnsupportedError) as info:
        generate_cuda(pk.tuple_as_value)
    assert info.value.construct == "call" and "returns a tuple" in str(info.value)
    lines = Path(pk.__file__).read_text().splitlines()
    assert "t = cell_and_fraction(" in lines[info.value.line - 1]


@needs_compiler
def test_strided_views_of_a_struct_field_agree(emulated):
    """``cz = args.c[:, :, 1]`` and ``args.c[:, 2, :]`` (whole axes and integer indices) are
    strided ``Array2D`` views of the field's own elements, passed to a helper that indexes
    them and reads their shape; ``from numpy import pi`` inside the function is the constant."""
    from port_cases import patch_args_maker

    src = generate_cuda(pk.eval_patch)
    assert "Array2D<double> cz;" in src and "Array2D<double> cm;" in src
    assert "__device__ double eval_2d(long long i, long long j, Array2D<double> c2)" in src
    assert "3.141592653589793" in src and "M_PI" not in src  # NVRTC has no <math.h>
    kernel = Kernel(pk.eval_patch, src.cuda_kernel())
    out = assert_kernels_agree(
        kernel, patch_args_maker(src.structs[0]), rtol=1e-12, atol=1e-12, outputs=["out"]
    )
    assert all(np.any(np.asarray(a) != 0) for a in out.values())


def test_write_through_a_strided_view_is_refused():
    with pytest.raises(CudaPortUnsupportedError) as info:
        generate_cuda(pk.write_patch_view)
    assert (info.value.construct, info.value.array) == ("write through a view", "cz")


@needs_compiler
def test_loop_over_a_struct_field_and_a_struct_field_output(emulated):
    """``range(args.n_cells)``: the launch shape read from the packed struct value; the parity
    test selects the struct's array field as the output (``outputs=["args.coef"]``) on both
    sides, the host class's attribute and the device value's array."""
    src = generate_cuda(pk.scale_cells)
    struct = src.structs[0]

    def make(backend, seed):
        rng = np.random.default_rng(seed)
        coef, shift = rng.normal(size=(8, 3)), np.array([1], dtype=np.int64)
        if backend == "numpy":
            return (pk.GridArguments(coef, 0.5, 3, shift), 1.5)
        value = struct(coef=xp.asarray(coef), h=0.5, nx=3, shift=xp.asarray(shift), n_cells=8)
        return (value, 1.5)

    with xp.use_backend("cupy"):
        assert src.n_threads_of(make("cupy", 0)) == 8
    out = assert_kernels_agree(
        Kernel(pk.scale_cells, src.cuda_kernel()),
        make,
        rtol=1e-12,
        atol=1e-12,
        outputs=["args.coef"],
    )
    assert len(out) == 1


@needs_compiler
def test_two_struct_arguments_of_one_class_with_scratch_agree(emulated):
    from port_cases import basis_args_maker

    src = generate_cuda(pk.eval_basis_two)
    assert src.count("struct BasisArguments {") == 1
    assert src.count("struct BasisArguments_thread {") == 1
    assert "a__w_data[" in src and "b__w_data[" in src
    one = basis_args_maker(src.structs[0], n=120)

    def make(backend, seed):
        xs, a, out, _ = one(backend, seed)
        _, b, _, _ = one(backend, seed + 1)
        return (xs, a, b, out)

    out = assert_kernels_agree(
        Kernel(pk.eval_basis_two, src.cuda_kernel()), make, rtol=1e-12, atol=1e-12, outputs=["out"]
    )
    assert all(np.all(np.asarray(v) != 0) for v in out.values())


@needs_compiler
def test_scratch_field_written_by_the_kernel_is_private(emulated):
    from port_cases import basis_args_maker

    src = generate_cuda(pk.eval_basis_direct)
    assert ("args.w", "private") in {(a, how) for a, _, how in src.writes}
    assert "the thread's own scratch array" in src.describe()
    out = assert_kernels_agree(
        Kernel(pk.eval_basis_direct, src.cuda_kernel()),
        basis_args_maker(src.structs[0]),
        rtol=1e-12,
        atol=1e-12,
        outputs=["out"],
    )
    assert all(np.any(np.asarray(v) != 0) for v in out.values())
