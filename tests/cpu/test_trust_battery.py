"""Trust battery (issue 21): bad input, faults and edge values never kill the process, never
give a silently wrong answer, and always raise a typed, named cunumpy error.

Every case that could crash the interpreter (a signal in compiled code) runs in its own
subprocess, so a crash fails that one test instead of killing pytest.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest

INT_MIN = int(np.iinfo(np.int32).min)


def run_isolated(code: str, *, fake_cupy: bool = False, timeout: int = 300) -> str:
    """Runs ``code`` in a fresh interpreter; fails (naming the signal) if it dies."""
    env = dict(os.environ)
    if fake_cupy:
        env.update(CUNUMPY_FAKE_CUPY="1", CUNUMPY_BACKEND="cupy")
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if done.returncode < 0:
        name = signal.Signals(-done.returncode).name
        pytest.fail(f"the interpreter was killed by {name}:\n{done.stderr[-3000:]}")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


# ---------------------------------------------------------------- item 7: integer division
DIVISION_KERNEL = r"""
extern "C" __global__ void divide(const T* a, const T* b, T* q, T* r, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { q[i] = a[i] / b[i]; r[i] = a[i] % b[i]; }
}
extern "C" __global__ void divide_in_place(T* a, const T* b, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { a[i] /= b[i]; a[i] %= (b[i] == 0 ? 0 : 7); }
}
"""


@pytest.mark.parametrize(
    ("ctype", "dtype"),
    [
        ("int", "int32"),
        ("unsigned int", "uint32"),
        ("long long", "int64"),
        ("unsigned long long", "uint64"),
        ("short", "int16"),
    ],
)
def test_emulated_integer_division_by_zero_gives_all_bits_set(ctype, dtype):
    # The GPU's integer division gives all bits set for a zero divisor (0xFFFFFFFF for 64-bit
    # operands below 2**32, docs/testing-without-a-gpu.md) and wraps MIN / -1; the host would
    # raise SIGFPE. The expected values are computed here from
    # those rules, independently of the emulator.
    out = run_isolated(
        f"""
        import numpy as np
        from cunumpy.kernel_testing import emulate_cuda_kernel
        from cunumpy.kernels import CudaKernel
        src = {DIVISION_KERNEL!r}.replace("T*", "{ctype}*")
        dt = np.dtype("{dtype}")
        info = np.iinfo(dt)
        lo = info.min if info.min < 0 else 5
        a = np.array([7, info.max, lo, 9, 0, 100], dt)
        m1 = -1 if info.min < 0 else 3
        b = np.array([0, 0, m1, 2, 0, 7], dt)
        q = np.zeros_like(a); r = np.zeros_like(a)
        emulate_cuda_kernel(CudaKernel(src, "divide"), a, b, q, r, np.int32(6), grid=1, block=32)
        ones = np.array(-1).astype(dt) if info.min < 0 else np.array(info.max, dt)
        def by_zero(x):
            # 64-bit operands below 2**32 take the GPU's 32-bit sequence: 0xFFFFFFFF
            return np.array(0xFFFFFFFF, dt) if dt.itemsize == 8 and 0 <= int(x) < 2**32 else ones
        with np.errstate(all="ignore"):
            exp_q = [by_zero(7), ones, lo if info.min < 0 else lo // m1, 4, by_zero(0), 14]
            exp_r = [by_zero(7), ones, 0 if info.min < 0 else lo % m1, 1, by_zero(0), 2]
        assert q.tolist() == np.array(exp_q, dt).tolist(), q
        assert r.tolist() == np.array(exp_r, dt).tolist(), r
        c = a.copy()
        emulate_cuda_kernel(CudaKernel(src, "divide_in_place"), c, b, np.int32(6), grid=1, block=32)
        assert c[0] == by_zero(by_zero(7)) and c[3] == 4 % 7 and c[5] == 14 % 7, c
        print("OK")
        """
    )
    assert "OK" in out


FUSED_DIVISION = """
import numpy as np
import cunumpy as xp
a = np.array([7, -7, {INT_MIN}, 9, {INT_MIN}, 0], np.int32)
b = np.array([0, 0, -1, 2, 0, -1], np.int32)
with np.errstate(all="ignore"):
    want = [a // b, a % b, a // np.int32(-1), a % np.int32(-1)]
{convert}
got = [xp.fuse(lambda x, y: x // y)(A, B), xp.fuse(lambda x, y: x % y)(A, B),
       xp.fuse(lambda x: x // -1)(A), xp.fuse(lambda x: x % -1)(A)]
for g, w in zip(got, want):
    g = xp.to_numpy(g) if not isinstance(g, np.ndarray) else g
    assert g.dtype == w.dtype and g.tolist() == w.tolist(), (g, w)
print("OK")
"""


def test_fused_integer_division_edge_values_match_numpy_on_numpy():
    code = FUSED_DIVISION.format(INT_MIN=INT_MIN, convert="A, B = a, b")
    assert "OK" in run_isolated(code)


def test_fused_integer_division_edge_values_match_numpy_on_the_emulated_device():
    code = FUSED_DIVISION.format(
        INT_MIN=INT_MIN, convert="import cupy\nA, B = cupy.asarray(a), cupy.asarray(b)"
    )
    assert "OK" in run_isolated(code, fake_cupy=True)


# ---------------------------------------------------------------- item 6: launch arguments
@pytest.mark.parametrize("bad", ["128", b"128", 128.0, True, (32, "4"), (32.0,), None, object()])
def test_block_size_that_is_not_ints_is_refused_not_iterated(bad):
    from cunumpy.exceptions import LaunchShapeTypeError
    from cunumpy.kernels import CudaKernel

    src = 'extern "C" __global__ void k(double* x) {}'
    with pytest.raises(LaunchShapeTypeError, match=r"CudaKernel 'k': block_size must be") as e:
        CudaKernel(src, "k", block_size=bad)
    assert isinstance(e.value, TypeError)


@pytest.mark.parametrize(
    ("given", "expected"),
    [(64, (64,)), (np.int64(64), (64,)), ((16, 8), (16, 8)), ([4, 4, 4], (4, 4, 4))],
)
def test_block_size_ints_still_work(given, expected):
    from cunumpy.kernels import CudaKernel

    k = CudaKernel('extern "C" __global__ void k(double* x) {}', "k", block_size=given)
    shape = k.block_size if isinstance(k.block_size, tuple) else (k.block_size,)
    assert tuple(shape) == expected


# ---------------------------------------------------------------- item 7: foreign arrays
@pytest.mark.parametrize(
    ("case", "message"),
    [
        ("null", "data pointer is NULL although its shape (4,) is not empty"),
        ("negative", "negative extent (-4)"),
        ("stream0", "stream is 0"),
        ("stream_negative", "stream -5 is negative"),
    ],
)
def test_bad_cuda_array_interface_is_refused_before_launch(case, message):
    # On 0.7 the NULL case killed the process (SIGSEGV) and the others launched.
    out = run_isolated(
        f"""
        import cunumpy
        import numpy as np, cupy
        from cunumpy.exceptions import KernelArgumentTypeError
        from cunumpy.kernels import CudaKernel
        k = CudaKernel('extern "C" __global__ void fill(double* x, int n) '
                       '{{ int i = threadIdx.x; if (i < n) x[i] = 1.0; }}', "fill")
        real = cupy.zeros(4)
        ptr = real.data.ptr

        class Foreign:
            def __init__(self, ptr, shape, stream=None):
                self.__cuda_array_interface__ = {{
                    "data": (ptr, False), "shape": shape, "typestr": "<f8", "version": 3,
                    "strides": None, "stream": stream}}

        cases = {{"null": Foreign(0, (4,)), "negative": Foreign(ptr, (-4,)),
                 "stream0": Foreign(ptr, (4,), 0), "stream_negative": Foreign(ptr, (4,), -5)}}
        obj = cases[{case!r}]
        try:
            k(obj, np.int32(4), grid=1, block=4)
        except KernelArgumentTypeError as e:
            text = str(e)
            assert text.startswith("fill"), text
            assert "x" in text and {message!r} in text, text
            assert not real.get().any()   # nothing launched
            print("OK")
        good = Foreign(ptr, (4,), 1)       # a valid interface still launches
        k(good, np.int32(4), grid=1, block=4)
        assert real.get().tolist() == [1.0] * 4
        print("LAUNCHED")
        """,
        fake_cupy=True,
    )
    assert "OK" in out and "LAUNCHED" in out


# ---------------------------------------------------------------- item 2: launch size
def test_ambiguous_inferred_launch_size_warns_once_naming_kernel_sizes_and_count():
    out = run_isolated(
        """
        import warnings
        import cunumpy
        import numpy as np, cupy
        from cunumpy.exceptions import LaunchSizeWarning
        from cunumpy.kernels import CudaKernel
        src = '''
        extern "C" __global__ void deposit(double* grid, const double* x, int n) {
            int i = blockIdx.x * blockDim.x + threadIdx.x;
            if (i < n) atomicAdd(&grid[(int)x[i] % 128], 1.0);
        }'''
        k = CudaKernel(src, "deposit")
        grid = cupy.zeros(128); x = cupy.asarray(np.arange(10_000.0))
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            k(grid, x, np.int32(10_000))        # 0.7.1's rule: 128 threads (the grid)
            k(grid, x, np.int32(10_000))        # once per kernel
        ours = [w for w in seen if issubclass(w.category, LaunchSizeWarning)]
        assert len(ours) == 1, [str(w.message) for w in seen]
        text = str(ours[0].message)
        assert text.startswith("deposit: ") and "(128,), (10000,)" in text, text
        assert "launching 128 threads" in text, text
        assert grid.get().sum() == 2 * 128      # the count 0.7.1 chose, unchanged
        with warnings.catch_warnings():
            warnings.simplefilter("error")      # explicit n_threads, or equal sizes: silent
            k2 = CudaKernel(src, "deposit")
            k2(grid, x, np.int32(10_000), n_threads=10_000)
            k2(cupy.zeros(128), cupy.zeros(128), np.int32(128))
        print("OK")
        """,
        fake_cupy=True,
    )
    assert "OK" in out


# ---------------------------------------------------------------- item 5: structs
def test_repr_of_struct_arguments_subclasses_never_raises():
    from cunumpy.arguments import CudaStructArguments

    class Particles(CudaStructArguments):
        struct_name = "Particles"
        fields = [("n", "int"), ("x", "double*")]

        def __init__(self, n=None, x=None):
            if n is not None:
                self.n = n
            if x is not None:
                self.x = x

    assert repr(Particles()) == "Particles(n=<unset>, x=<unset>)"
    text = repr(Particles(3, np.zeros(3)))
    assert text == "Particles(n=3, x=<ndarray shape=(3,) dtype=float64>)"

    class Plain(CudaStructArguments):
        pass

    assert repr(Plain()) == "Plain(<no struct_name and fields>)"


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ([("class", "double")], 'field name "class" is a C/C++ keyword'),
        ([("n", "int"), ("int", "int")], 'field name "int" is a C/C++ keyword'),
        ([("a", "double[4611686018427387904]")], "field 'a' is too large"),
        ([("n", "int"), ("n", "double")], "duplicate field names"),
    ],
)
def test_struct_keywords_overflowing_sizes_and_duplicates_are_refused(fields, message):
    from cunumpy.arguments import CudaStruct
    from cunumpy.exceptions import CudaStructError

    # 0.7.1 accepted the keyword (a struct that cannot compile) and wrapped the size to 0.
    with pytest.raises(CudaStructError, match=r"^struct S: ") as e:
        CudaStruct("S", fields)
    assert message in str(e.value)
    assert isinstance(e.value, ValueError)
