"""Trust battery, errors (issue 21, items 4, 5, 6 and 9): bad input given to kernels, launches,
structs, files and backend settings, each case in its own interpreter.

Every case must end in one of two ways: it runs (the cases marked ``None``), or it raises a class
of :mod:`cunumpy.exceptions` that also subclasses the built-in a user would catch, with a message
that names what the case says it must (the kernel, the argument, what was expected and what was
given). A case that kills its interpreter (a signal) is a crash, one that outlives its timeout a
hang; both fail. The cases run in parallel, a few at a time, each in its own subprocess.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

import pytest

from cunumpy.kernel_testing import emulation_compiler

TIMEOUT = 300  # seconds; a case still running then is a hang

RUNNER = r"""
import json, sys
code = sys.stdin.read()
namespace = {"__name__": "__case__"}
result = {"raised": None}
try:
    exec(compile(code, "<case>", "exec"), namespace)
except BaseException as exc:
    result = {
        "raised": type(exc).__name__,
        "module": type(exc).__module__,
        "mro": [c.__name__ for c in type(exc).__mro__],
        "message": str(exc),
        "full": getattr(exc, "full_message", None),
    }
print("\n@@RESULT@@" + json.dumps(result))
"""


@dataclass
class Case:
    """One bad input: ``code`` runs after ``prelude``; ``raises`` is the expected class (``None``
    when the code must run), ``base`` the built-in it must also be, ``names`` the texts the
    message must contain."""

    id: str
    code: str
    raises: str | None
    base: str = "Exception"
    names: tuple[str, ...] = ()
    prelude: str = "numpy"
    env: dict[str, str] = field(default_factory=dict)


PRELUDES = {
    "numpy": "import numpy as np\nimport cunumpy as xp\nfrom cunumpy.kernels import CudaKernel\n",
    # the emulated device: device arrays exist, launches check everything before compiling
    "device": textwrap.dedent(
        r'''
        import cunumpy as xp  # installs the fake CuPy
        import numpy as np, cupy
        from cunumpy.kernels import CudaKernel
        AXPY = CudaKernel("""
        extern "C" __global__ void axpy(double* y, const double* x, double a, int n) {
            int i = blockIdx.x * blockDim.x + threadIdx.x;
            if (i < n) y[i] += a * x[i];
        }""", "axpy")
        SCALARS = CudaKernel("""
        extern "C" __global__ void scalars(int i, unsigned int u, short s, long long ll,
                unsigned long long ull, signed char c, unsigned char uc, float f, double d,
                bool b, double* out) { out[0] = d; }""", "scalars")
        x = cupy.arange(8.0); y = cupy.zeros(8)
        OUT = cupy.zeros(1)
        GOOD = dict(i=1, u=1, s=1, ll=1, ull=1, c=1, uc=1, f=1.0, d=1.0, b=True)
        def call_scalars(**changed):
            values = {**GOOD, **changed}
            SCALARS(*values.values(), OUT, n_threads=1)
        '''
    ),
}


def _cases() -> list[Case]:
    cases: list[Case] = []
    add = cases.append

    # ------------------------------------------------------------ kernel sources (item 9)
    def source_case(id, src, name, names, raises="CudaSignatureError", base="ValueError", **kw):
        add(Case(id, f"CudaKernel({src!r}, {name!r}, **{kw!r})", raises, base, names))

    source_case(
        "missing-kernel-lists-what-it-found",
        "__global__ void a(int n) {}\n__global__ void b(int n) {}",
        "c",
        ("no __global__ function 'c'", "it defines a, b"),
    )
    source_case(
        "no-kernel-at-all",
        "__device__ int f() { return 1; }",
        "k",
        ("no __global__ function 'k'", "it defines no __global__ function"),
    )
    source_case(
        "kernel-only-in-a-comment",
        "// __global__ void k(int n) {}",
        "k",
        ("'k'", "it defines no __global__"),
    )
    source_case("empty-source", "", "k", ("'k'",))
    source_case("non-void-return", "__global__ int k(int n) { return n; }", "k", ("'k'", "void"))
    source_case(
        "reference-parameter",
        "__global__ void k(double& x) {}",
        "k",
        ("'k'", "double& x", "references"),
    )
    source_case(
        "pointer-to-pointer",
        "__global__ void k(double** x) {}",
        "k",
        ("'k'", "double** x", "pointers to pointers"),
    )
    source_case("vector-type", "__global__ void k(float2 v) {}", "k", ("'k'", "float2 v", "vector"))
    source_case(
        "unknown-type-hints-structs",
        "__global__ void k(Particle p) {}",
        "k",
        ("'k'", "Particle p", "structs=[", "CudaStruct"),
    )
    source_case("unnamed-parameter", "__global__ void k(double*) {}", "k", ("'k'", "no name"))
    source_case(
        "unbalanced-parentheses", "__global__ void k(double* x {}", "k", ("'k'", "unbalanced")
    )
    source_case(
        "template-without-args",
        "template <typename T> __global__ void k(T* x) {}",
        "k",
        ("'k'", "template_args"),
    )
    source_case(
        "template-args-for-plain-kernel",
        "__global__ void k(double* x) {}",
        "k",
        ("'k'", "not a template"),
        template_args=("double",),
    )
    source_case(
        "template-arg-with-semicolon",
        "template <typename T> __global__ void k(T* x) {}",
        "k",
        ("'k'", "not valid C++"),
        template_args=("double; int",),
    )
    source_case(
        "too-many-template-args",
        "template <typename T> __global__ void k(T* x) {}",
        "k",
        ("'k'", "template"),
        template_args=("double", "int"),
    )
    source_case(
        "variadic-parameter", "__global__ void k(int n, ...) {}", "k", ("'k'", "argument 1")
    )
    source_case(
        "function-pointer-parameter",
        "__global__ void k(void (*f)(int)) {}",
        "k",
        ("'k'", "argument 0"),
    )
    for i, junk in enumerate(["\x00\x01\x02", "}}}{{{", "__global__ void", "#define X\n" * 3]):
        source_case(f"garbage-source-{i}", junk, "k", ("'k'",))
    add(
        Case(
            "source-not-a-string",
            "CudaKernel(b'__global__ void k(int n) {}', 'k')",
            "KernelArgumentTypeError",
            "TypeError",
            ("source",),
        )
    )

    # ------------------------------------------------------------ kernel options (item 6)
    for i, bad in enumerate(['"128"', "b'128'", "128.0", "True", "(32, '4')", "(32.0,)", "None"]):
        add(
            Case(
                f"block-size-{i}",
                f"CudaKernel('__global__ void k(double* x) {{}}', 'k', block_size={bad})",
                "LaunchShapeTypeError",
                "TypeError",
                ("'k'", "block_size"),
            )
        )
    add(
        Case(
            "structs-given-as-names",
            "CudaKernel('struct P { int n; };\\n__global__ void k(P p) {}', 'k', structs=['P'])",
            "CudaStructTypeError",
            "TypeError",
            ("structs=", "'P'", "str"),
        )
    )

    # ------------------------------------------------------------ argument counts (item 9)
    for given, missing in [
        ("y, x, 2.0", ("missing 1 argument", "argument 3 (int n)")),
        ("y, x", ("missing 2 arguments", "argument 2 (double a)", "argument 3 (int n)")),
        ("", ("missing 4 arguments", "argument 0 (double* y)")),
    ]:
        add(
            Case(
                f"missing-arguments-{4 - len([g for g in given.split(',') if g])}",
                f"AXPY({given + ', ' if given else ''}n_threads=8)",
                "KernelArgumentTypeError",
                "TypeError",
                ("axpy()", *missing, "takes 4"),
                prelude="device",
            )
        )
    add(
        Case(
            "one-argument-too-many",
            "AXPY(y, x, 2.0, 8, 9, n_threads=8)",
            "KernelArgumentTypeError",
            "TypeError",
            ("axpy()", "1 argument too many", "takes 4", "got 5"),
            prelude="device",
        )
    )
    add(
        Case(
            "check-args-missing",
            "AXPY.check_args(y, x)",
            "KernelArgumentTypeError",
            "TypeError",
            ("axpy()", "missing 2 arguments"),
            prelude="device",
        )
    )

    # ------------------------------------------------------------ keywords (item 9)
    add(
        Case(
            "unexpected-keyword",
            "AXPY(y, x, 2.0, 8, nthreads=8)",
            "KernelArgumentTypeError",
            "TypeError",
            ("axpy()", "unexpected keyword argument 'nthreads'", "n_threads"),
            prelude="device",
        )
    )
    add(
        Case(
            "unexpected-keywords",
            "AXPY(y, x, 2.0, 8, n=8, a=1.0)",
            "KernelArgumentTypeError",
            "TypeError",
            ("axpy()", "arguments 'n', 'a'"),
            prelude="device",
        )
    )
    add(
        Case(
            "argument-by-name",
            "AXPY(y=y, x=x, a=2.0, n=8)",
            "KernelArgumentTypeError",
            "TypeError",
            ("axpy()", "by position"),
            prelude="device",
        )
    )

    # ------------------------------------------------------------ launch shapes (item 6)
    for key, bad in [
        ("grid", "(1.5,)"),
        ("grid", "'1'"),
        ("grid", "True"),
        ("grid", "(1, None)"),
        ("grid", "1.0"),
        ("grid", "object()"),
        ("block", "(2.0, 2)"),
        ("block", "'32'"),
        ("block", "[True]"),
        ("n_threads", "8.0"),
        ("n_threads", "'8'"),
        ("n_threads", "(8, 1.5)"),
        ("n_threads", "b'8'"),
        ("n_threads", "np.float64(8)"),
        ("shared_mem", "'0'"),
        ("shared_mem", "1.5"),
        ("shared_mem", "True"),
        ("stream", "'default'"),
        ("stream", "1.5"),
    ]:
        extra = "" if key in ("grid", "n_threads") else ", n_threads=8"
        add(
            Case(
                f"launch-{key}-{bad}",
                f"AXPY(y, x, 2.0, 8, {key}={bad}{extra})",
                "LaunchShapeTypeError",
                "TypeError",
                ("axpy", key),
                prelude="device",
            )
        )
    for key, bad, names in [
        ("n_threads", "-5", ("n_threads",)),
        ("grid", "(1, 1, 1, 1)", ("grid",)),
        ("grid", "-1", ("grid",)),
        ("grid", "(2**70,)", ("grid",)),
        ("block", "(4096,)", ("block",)),
        ("block", "(0,)", ("block",)),
        ("shared_mem", "-1", ("shared_mem",)),
        ("shared_mem", "2**40", ("shared_mem",)),
        ("shared_mem", "2**80", ("shared_mem",)),
    ]:
        extra = "" if key in ("grid", "n_threads") else ", n_threads=8"
        add(
            Case(
                f"launch-{key}-value-{bad}",
                f"AXPY(y, x, 2.0, 8, {key}={bad}{extra})",
                "LaunchShapeError",
                "ValueError",
                names,
                prelude="device",
            )
        )
    add(
        Case(
            "n-threads-and-grid",
            "AXPY(y, x, 2.0, 8, n_threads=8, grid=1)",
            "LaunchShapeTypeError",
            "TypeError",
            ("n_threads", "grid"),
            prelude="device",
        )
    )

    # ------------------------------------------------------------ scalar values (item 6)
    ranges = {
        "i": (-(2**31), 2**31 - 1, "int i"),
        "u": (0, 2**32 - 1, "unsigned int u"),
        "s": (-(2**15), 2**15 - 1, "short s"),
        "ll": (-(2**63), 2**63 - 1, "long long ll"),
        "ull": (0, 2**64 - 1, "unsigned long long ull"),
        "c": (-128, 127, "signed char c"),
        "uc": (0, 255, "unsigned char uc"),
    }
    for param, (lo, hi, decl) in ranges.items():
        for value in (lo - 1, hi + 1, 2**200, -(2**200)):
            shown = value if abs(value) < 2**100 else ("huge" if value > 0 else "minus-huge")
            add(
                Case(
                    f"overflow-{param}-{shown}",
                    f"call_scalars({param}={value})",
                    "KernelArgumentOverflowError",
                    "OverflowError",
                    ("scalars()", decl),
                    prelude="device",
                )
            )
        for value in (lo, hi):  # the ends of the range are accepted
            add(
                Case(
                    f"in-range-{param}-{value}",
                    f"call_scalars({param}={value})",
                    None,
                    prelude="device",
                )
            )
    for param, bad, decl in [
        ("i", "1.5", "int i"),
        ("i", "'1'", "int i"),
        ("i", "None", "int i"),
        ("i", "np.float64(2.0)", "int i"),
        ("i", "1j", "int i"),
        ("u", "np.int64(-1)", "unsigned int u"),
        ("b", "1", "bool b"),
        ("b", "None", "bool b"),
        ("d", "True", "double d"),
        ("d", "1j", "double d"),
        ("d", "'1.0'", "double d"),
        ("d", "x", "double d"),
        ("f", "np.float64(0.1)", "float f"),
        ("f", "np.complex64(1)", "float f"),
    ]:
        add(
            Case(
                f"scalar-{param}-{bad}",
                f"call_scalars({param}={bad})",
                "KernelArgumentTypeError" if param != "u" else "KernelArgumentOverflowError",
                "TypeError" if param != "u" else "OverflowError",
                ("scalars()", decl),
                prelude="device",
            )
        )

    # ------------------------------------------------------------ array arguments (item 9)
    for id_, bad, names, raises, base in [
        (
            "numpy-array-for-pointer",
            "np.zeros(8)",
            ("double* y", "never"),
            "KernelArgumentTypeError",
            "TypeError",
        ),
        (
            "float32-for-double",
            "cupy.zeros(8, np.float32)",
            ("double* y", "float32"),
            "KernelArgumentTypeError",
            "TypeError",
        ),
        ("int-for-pointer", "3", ("double* y",), "KernelArgumentTypeError", "TypeError"),
        ("list-for-pointer", "[0.0] * 8", ("double* y",), "KernelArgumentTypeError", "TypeError"),
        (
            "strided-view",
            "cupy.zeros(16)[::2]",
            ("double* y", "C-contiguous"),
            "KernelArgumentTypeError",
            "TypeError",
        ),
        ("string-for-pointer", "'y'", ("double* y",), "KernelArgumentTypeError", "TypeError"),
        (
            "bad-interface",
            "type('F', (), {'__cuda_array_interface__': 3})()",
            ("double* y",),
            "KernelArgumentTypeError",
            "TypeError",
        ),
        (
            "interface-without-shape",
            "type('F', (), {'__cuda_array_interface__': "
            "{'data': (x.data.ptr, False), 'typestr': '<f8', 'version': 3}})()",
            ("double* y", "shape"),
            "KernelArgumentTypeError",
            "TypeError",
        ),
    ]:
        add(
            Case(
                f"array-{id_}",
                f"AXPY({bad}, x, 2.0, 8, n_threads=8)",
                raises,
                base,
                ("axpy()", *names),
                prelude="device",
            )
        )
    add(
        Case(
            "array-for-scalar",
            "AXPY(y, x, x, 8, n_threads=8)",
            "KernelArgumentTypeError",
            "TypeError",
            ("axpy()", "double a"),
            prelude="device",
        )
    )
    add(
        Case(
            "const-pointer-accepts-read-only-data",
            "AXPY(y, x, 2.0, 8, n_threads=8); assert float(y[3]) == 6.0",
            None,
            prelude="device",
        )
    )

    # ------------------------------------------------------------ structs (item 5)
    struct = "from cunumpy.arguments import CudaStruct, CudaStructArguments\n"
    for i, (fields, names) in enumerate(
        [
            ("[('class', 'double')]", ("struct S", "class", "keyword")),
            ("[('n', 'int'), ('int', 'int')]", ("struct S", "int", "keyword")),
            ("[('template', 'int')]", ("struct S", "template", "keyword")),
            ("[('a', 'double[4611686018427387904]')]", ("struct S", "'a'", "too large")),
            ("[('a[4611686018427387904]', 'double')]", ("struct S", "'a'", "too large")),
            ("[('a', 'double[1000000000000][1000000000000]')]", ("struct S", "'a'", "too large")),
            ("[('n', 'int'), ('n', 'double')]", ("struct S", "duplicate", "'n'")),
            ("[('n', 'int'), ('n[2]', 'int')]", ("struct S", "duplicate", "'n'")),
            ("[('x', 'float2')]", ("struct S", "'x'", "float2")),
            ("[('x', 'Particle')]", ("struct S", "'x'", "Particle")),
            ("[('x', 'double**')]", ("struct S", "'x'")),
            ("[('x', 'double[0]')]", ("struct S", "double[0]")),
            ("[('x', 'double[-1]')]", ("struct S", "double[-1]")),
            ("[('1x', 'double')]", ("struct S", "1x")),
            ("[('x y', 'double')]", ("struct S", "x y")),
            ("[]", ("struct S", "no fields")),
            ("[('x',)]", ("struct S", "pairs")),
            ("[('x', 3)]", ("struct S", "'x'", "3")),
        ]
    ):
        add(
            Case(
                f"struct-definition-{i}",
                struct + f"CudaStruct('S', {fields})",
                "CudaStructError",
                "ValueError",
                names,
            )
        )
    for bad in ("'class'", "'1S'", "''", "3"):
        add(
            Case(
                f"struct-name-{bad}",
                struct + f"CudaStruct({bad}, [('x', 'double')])",
                "CudaStructError",
                "ValueError",
                (),
            )
        )

    # the struct declared in the kernel source, compared field by field at construction
    declared = "struct P { double x; int n; float w[3]; };\n__global__ void k(P p) {}"
    for i, (fields, names) in enumerate(
        [
            ("[('n', 'int'), ('x', 'double'), ('w[3]', 'float')]", ("field 0 is 'x'", "'n'")),
            (
                "[('x', 'float'), ('n', 'int'), ('w[3]', 'float')]",
                ("field 'x' is double x", "float x"),
            ),
            ("[('x', 'double'), ('n', 'long long'), ('w[3]', 'float')]", ("field 'n' is int n",)),
            (
                "[('x', 'double'), ('n', 'int'), ('w[4]', 'float')]",
                ("field 'w'", "float w[3]", "float w[4]"),
            ),
            ("[('x', 'double'), ('n', 'int')]", ("field 2 'w'", "missing from the CudaStruct")),
            (
                "[('x', 'double'), ('n', 'int'), ('w[3]', 'float'), ('z', 'int')]",
                ("field 3 'z'", "missing from the CUDA source"),
            ),
            ("[('x', 'double'), ('m', 'int'), ('w[3]', 'float')]", ("field 1 is 'n'", "'m'")),
        ]
    ):
        add(
            Case(
                f"struct-source-mismatch-{i}",
                struct
                + f"P = CudaStruct('P', {fields})\nCudaKernel({declared!r}, 'k', structs=[P])",
                "CudaStructError",
                "ValueError",
                ("kernel 'k'", "struct P in the CUDA source does not match its CudaStruct", *names),
            )
        )
    add(
        Case(
            "struct-source-match",
            struct + f"P = CudaStruct('P', [('x', 'double'), ('n', 'int'), ('w[3]', 'float')])\n"
            f"CudaKernel({declared!r}, 'k', structs=[P])",
            None,
        )
    )
    add(
        Case(
            "struct-typedef-mismatch",
            struct + "P = CudaStruct('P', [('x', 'double')])\n"
            "CudaKernel('typedef struct { float x; } P;\\n__global__ void k(P p) {}', 'k', "
            "structs=[P])",
            "CudaStructError",
            "ValueError",
            ("field 'x' is float x",),
        )
    )
    add(
        Case(
            "struct-in-an-included-header",
            struct + "import tempfile, pathlib\n"
            "d = pathlib.Path(tempfile.mkdtemp())\n"
            "(d / 'p.cuh').write_text('struct P { double x; int n; };')\n"
            "P = CudaStruct('P', [('n', 'int'), ('x', 'double')])\n"
            "CudaKernel('#include \"p.cuh\"\\n__global__ void k(P p) {}', 'k', structs=[P], "
            "include_dirs=[d])",
            "CudaStructError",
            "ValueError",
            ("p.cuh", "field 0 is 'x'"),
        )
    )
    for i, (values, raises, base, names) in enumerate(
        [
            ("n=1", "KernelArgumentTypeError", "TypeError", ("struct Q", "missing fields ['x']")),
            ("n=1, x=2.0, z=3", "KernelArgumentTypeError", "TypeError", ("unknown fields ['z']",)),
            ("n=2**31, x=1.0", "KernelArgumentOverflowError", "OverflowError", ("struct Q", "'n'")),
            ("n=2**300, x=1.0", "KernelArgumentOverflowError", "OverflowError", ("struct Q",)),
            ("n=1.5, x=1.0", "KernelArgumentTypeError", "TypeError", ("struct Q", "'n'")),
            ("n=1, x='a'", "KernelArgumentTypeError", "TypeError", ("struct Q", "'x'")),
        ]
    ):
        add(
            Case(
                f"struct-value-{i}",
                struct + f"Q = CudaStruct('Q', [('n', 'int'), ('x', 'double')])\nQ({values})",
                raises,
                base,
                names,
            )
        )
    for i, body in enumerate(
        [
            "struct_name = 'A'\n    fields = [('n', 'int')]",
            "struct_name = 'A'\n    fields = [('n', 'int'), ('x', 'double*')]\n"
            "    def __init__(self):\n        self.n = 'not an int'",
            "pass",
            "struct_name = 'A'\n    fields = [('n', 'int')]\n"
            "    def __init__(self):\n        self.n = 2**100",
        ]
    ):
        add(
            Case(
                f"struct-arguments-repr-{i}",
                struct
                + f"class A(CudaStructArguments):\n    {body}\nassert repr(A()).startswith('A(')",
                None,
            )
        )

    # ------------------------------------------------------------ files (item 9)
    files = "import tempfile, pathlib\nd = pathlib.Path(tempfile.mkdtemp())\n"
    add(
        Case(
            "file-not-utf8",
            files
            + "p = d / 'k_cuda.cu'\np.write_bytes(b'// caf\\xe9\\n__global__ void k(int n) {}')\n"
            "CudaKernel.from_file(p)",
            "CudaSourceEncodingError",
            "UnicodeError",
            ("k_cuda.cu", "not UTF-8", "0xe9", "line 1"),
        )
    )
    add(
        Case(
            "file-not-utf8-all",
            files
            + "p = d / 'k_cuda.cu'\np.write_bytes(b'\\n\\n\\xff')\nCudaKernel.all_from_file(p)",
            "CudaSourceEncodingError",
            "ValueError",
            ("k_cuda.cu", "line 3"),
        )
    )
    add(
        Case(
            "file-missing-kernel-names-the-file",
            files + "p = d / 'k_cuda.cu'\np.write_text('__global__ void a(int n) {}')\n"
            "CudaKernel.from_file(p)",
            "CudaSignatureError",
            "ValueError",
            ("k_cuda.cu", "no __global__ function 'k'", "it defines a"),
        )
    )
    add(
        Case(
            "file-without-kernels",
            files + "p = d / 'k_cuda.cu'\np.write_text('int x;')\nCudaKernel.all_from_file(p)",
            "CudaSignatureError",
            "ValueError",
            ("k_cuda.cu", "no __global__ function"),
        )
    )
    add(
        Case(
            "file-with-another-suffix",
            files + "p = d / 'k.cu'\np.write_text('__global__ void k(int n) {}')\n"
            "CudaKernel.from_file(p)",
            "CudaSignatureError",
            "ValueError",
            ("k.cu", "_cuda.cu", "pass the kernel name"),
        )
    )

    # ------------------------------------------------------------ long messages (item 9)
    deep = "double" + "".join(f", Wrap{i}<" for i in range(300)) + "double" + ">" * 300
    add(
        Case(
            "deep-template-message-is-cut",
            f"CudaKernel('template <typename T> __global__ void k(T* x) {{}}', 'k', "
            f"template_args=({deep + ';'!r},))",
            "CudaSignatureError",
            "ValueError",
            ("'k'", "characters cut", "full_message"),
        )
    )
    add(
        Case(
            "full-message-keeps-everything",
            "from cunumpy.exceptions import CudaSignatureError\n"
            "try:\n"
            "    CudaKernel('__global__ void k(int n) {}', 'k' + 'x' * 5000)\n"
            "except CudaSignatureError as e:\n"
            "    assert len(str(e)) < 2300 and len(e.full_message) > 5000\n"
            "    assert str(e).startswith(e.full_message[:100])\n"
            "    assert str(e).endswith(e.full_message[-100:])\n"
            "    import pickle\n"
            "    assert pickle.loads(pickle.dumps(e)).full_message == e.full_message\n",
            None,
        )
    )

    # ------------------------------------------------------------ backend settings (item 4)
    add(
        Case(
            "set-backend-cupy-without-cupy",
            "xp.set_backend('cupy')",
            "BackendUnavailableError",
            "RuntimeError",
            ("set_backend('cupy')", "CuPy cannot work", "CUNUMPY_FAKE_CUPY=1"),
        )
    )
    add(
        Case(
            "use-backend-cupy-without-cupy",
            "with xp.use_backend('cupy'):\n    pass",
            "BackendUnavailableError",
            "RuntimeError",
            ("CuPy cannot work",),
        )
    )
    add(
        Case(
            "env-cupy-without-cupy",
            "import cunumpy",
            "BackendUnavailableError",
            "RuntimeError",
            ("CUNUMPY_BACKEND='cupy'", "CuPy cannot work"),
            prelude="none",
            env={"CUNUMPY_BACKEND": "cupy", "CUNUMPY_FAKE_CUPY": "0"},
        )
    )
    add(
        Case(
            "env-unknown-backend",
            "import cunumpy",
            "BackendError",
            "ValueError",
            ("CUNUMPY_BACKEND", "'gpu'"),
            prelude="none",
            env={"CUNUMPY_BACKEND": "gpu", "CUNUMPY_FAKE_CUPY": "0"},
        )
    )
    add(
        Case(
            "fake-cupy-alone-selects-the-emulated-device",
            "import cunumpy as xp, cupy\n"
            "assert xp.get_backend() == 'cupy' and cupy.__cunumpy_fake__",
            None,
            prelude="none",
            env={"CUNUMPY_FAKE_CUPY": "1", "CUNUMPY_BACKEND": ""},
        )
    )
    add(Case("set-backend-not-a-string", "xp.set_backend(3)", "BackendError", "ValueError", ("3",)))
    return cases


CASES = _cases()
_IDS = [c.id for c in CASES]
assert len(set(_IDS)) == len(_IDS), "case ids must be unique"


def _run(case: Case) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("CUNUMPY_FAKE_CUPY", "CUNUMPY_BACKEND")}
    env["OMP_NUM_THREADS"] = "1"
    if case.prelude == "device":
        env.update(CUNUMPY_FAKE_CUPY="1", CUNUMPY_BACKEND="cupy")
    env.update(case.env)
    prelude = "" if case.prelude == "none" else PRELUDES[case.prelude]
    code = prelude + case.code
    try:
        done = subprocess.run(
            [sys.executable, "-X", "faulthandler", "-c", RUNNER],
            input=code,
            env=env,
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
        )
    except subprocess.TimeoutExpired:
        return {"hang": True}
    out = {"returncode": done.returncode, "stderr": done.stderr[-3000:], "code": code}
    marker = done.stdout.rfind("@@RESULT@@")
    if marker >= 0:
        out.update(json.loads(done.stdout[marker + len("@@RESULT@@") :]))
    return out


@pytest.fixture(scope="module")
def outcomes() -> dict[str, Future]:
    """Every case started at once, a few processes at a time; each test waits for its own."""
    pool = ThreadPoolExecutor(max_workers=min(4, os.cpu_count() or 1))
    futures = {c.id: pool.submit(_run, c) for c in CASES}
    yield futures
    pool.shutdown(wait=False, cancel_futures=True)


def test_the_battery_has_at_least_150_cases():
    assert len(CASES) >= 150, len(CASES)


@pytest.mark.skipif(emulation_compiler() is None, reason="the device cases need a C++ compiler")
@pytest.mark.parametrize("case", CASES, ids=_IDS)
def test_case(case: Case, outcomes: dict[str, Future]) -> None:
    got = outcomes[case.id].result()
    assert not got.get("hang"), f"{case.id}: still running after {TIMEOUT} s (a hang)"
    rc = got["returncode"]
    if rc < 0:
        pytest.fail(
            f"{case.id}: the interpreter died of {signal.Signals(-rc).name}:\n{got['stderr']}"
        )
    assert "raised" in got, f"{case.id}: no result (exit {rc}):\n{got['stderr']}"
    if case.raises is None:
        assert got["raised"] is None, f"{case.id}: raised {got['raised']}: {got.get('message')}"
        return
    message = got.get("message", "")
    assert got["raised"] == case.raises, f"{case.id}: {got['raised']}: {message}"
    assert got["module"] == "cunumpy.exceptions", got
    assert "CunumpyError" in got["mro"] and case.base in got["mro"], got["mro"]
    for name in case.names:
        assert name in message, f"{case.id}: {name!r} not in the message:\n{message}"
