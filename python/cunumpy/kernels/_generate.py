"""``generate_cuda``: the first CUDA version of a host kernel, written by cunumpy.

The translation is done in Rust (``cunumpy-port``); this module only reads the function's module
source, dumps Python's own syntax tree of it as JSON (so the grammar is exactly the running
Python's) and collects argument types from a sample call.
"""

from __future__ import annotations

import ast
import inspect
import json
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from copy import deepcopy
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

from .. import _core
from .._conversions import to_numpy
from ..exceptions import CudaPortInputError

__all__ = ["GeneratedCuda", "generate_cuda", "translate_source"]

#: The launch block and register cap of a generated kernel (``CudaKernel(block_size=,
#: max_registers=)``): an SM's 65 536 registers hold 9 blocks of 64 threads at 105 to 112
#: registers a thread (18 warps), 8 at 113 to 128 (16 warps), where 128-thread blocks give 4
#: from 97 to 128 (16 warps). Measured on the H200 against 32- and 128-thread blocks and caps
#: of 64 to 128 (benches/results/generated-cuda-struphy-h200-2026-12-03-s12 and -s13): the
#: fewest kernels below 0.9x their hand-written versions.
BLOCK_SIZE = 64
MAX_REGISTERS = 112


class GeneratedCuda(str):
    """The generated CUDA source (a ``str``), with what the translator decided.

    ``kernel`` and ``params`` (the host kernel's name and argument order), ``loop_line`` and
    ``loop_var`` (the loop run in parallel, one iteration per thread), ``collapsed`` (``(var,
    line)`` of each loop nested in it that is collapsed with it, outer first: one iteration of
    the whole nest per thread; empty when none is), ``n_threads`` (the loop's trip count, the
    product of the collapsed loops' trip counts, as a Python expression of the arguments, or
    ``None``), ``writes`` (one
    ``(array, line, how)`` per array write in the loop, ``how`` being ``"owned"``: indexed by
    the loop variable, ``"atomic"``: a ``+=``/``-=`` made an atomic add, or ``"reduction"``:
    ``out[k] += s`` after the loop of a sum ``s`` the loop accumulates, each thread adding its
    own partial sum atomically, or ``"private"``: a scratch array of a struct argument, which
    every thread has its own of), ``atomics`` (the
    arrays updated atomically), ``helpers`` (functions of the module made ``__device__``) and
    ``typevars`` (``(name, type)`` for each module ``TypeVar`` of the annotations, instantiated
    for its first constraint the translator knows: ``T = TypeVar('T', float, complex)`` gives a
    ``double`` kernel).
    """

    kernel: str
    params: tuple[str, ...]
    loop_line: int
    loop_var: str
    collapsed: tuple[tuple[str, int], ...] = ()
    n_threads: str | None
    writes: tuple[tuple[str, int, str], ...]
    helpers: tuple[str, ...]
    structs: tuple[Any, ...]
    typevars: tuple[tuple[str, str], ...] = ()

    @property
    def atomics(self) -> tuple[str, ...]:
        return tuple(sorted({a for a, _, how in self.writes if how == "atomic"}))

    def n_threads_of(self, args: Sequence[Any]) -> int | None:
        """The launch shape for a call with positional ``args`` (the loop's trip count)."""
        if self.n_threads is None:
            return None
        names = dict(zip(self.params, args, strict=False))
        for name, arg in list(names.items()):
            # a packed struct value (`struct(n_markers=..., ...)`): its fields by attribute, as
            # the host kernel reads them (`range(args_markers.n_markers)`)
            fields = getattr(arg, "values", None)
            if hasattr(arg, "__cuda_struct__") and isinstance(fields, dict):
                names[name] = SimpleNamespace(**fields)
        for name, arg in names.items():
            # a trip count read from a device array's values (`range(s[0], e[0] + 1)`) is a
            # copy to the host: made here, counted, not left to CuPy's __int__ inside eval
            if not isinstance(arg, np.ndarray) and hasattr(arg, "__cuda_array_interface__"):
                if re.search(rf"\b{re.escape(name)}\s*\[", self.n_threads):
                    names[name] = to_numpy(arg)
        value = eval(
            self.n_threads,
            {"__builtins__": {}, "len": len, "max": max, "range": range, "int": int},
            names,
        )  # noqa: S307
        return max(int(value), 0)

    def cuda_kernel(self, **options: Any) -> Any:
        """A :class:`~cunumpy.kernels.CudaKernel` of this source whose default launch shape is
        the parallel loop's trip count, in blocks of :data:`BLOCK_SIZE` (64) threads;
        compiled again capped at :data:`MAX_REGISTERS` (112) registers a thread where it needs
        more (``max_registers=None``: no cap). Both are ``CudaKernel`` parameters a caller can
        pass."""
        from ._cuda_kernel import CudaKernel

        options.setdefault("block_size", BLOCK_SIZE)
        options.setdefault("max_registers", MAX_REGISTERS)
        if self.n_threads is not None:
            options.setdefault("n_threads_from", lambda args: self.n_threads_of(args))
        if self.structs:
            options.setdefault("structs", list(self.structs))
        return CudaKernel(str(self), self.kernel, **options)

    def tuned_kernel(
        self,
        *args: Any,
        candidates: Mapping[str, Mapping[str, Any]] | None = None,
        repeats: int = 5,
        launch: Mapping[str, Any] | None = None,
        **options: Any,
    ) -> Any:
        """The fastest of several builds of this source on ``args`` (positional, as the
        kernel takes them): by default :meth:`cuda_kernel` as is, with
        ``-DCUNUMPY_PORT_CAP_TRAP_ONLY``, and with that capped at 80 registers (``candidates``:
        label -> ``CudaKernel`` options). Each is timed in ``repeats`` rounds (``launch``: the
        launch keywords), the builds in turn; on a GPU a round is a batch of launches queued
        behind a spin kernel, so that what is timed is the device's work and not the host's
        work to launch it. Tune on data of the size you run: what is fastest on a hundred
        markers need not be on a million. The arrays the kernel writes are put back before
        every round and after the last, so ``args`` end as they began. The labels' median
        milliseconds a launch and the choice are in :attr:`tuning`."""
        from ._tune import fastest_build

        label, kernel, times = fastest_build(
            self, args, candidates=candidates, repeats=repeats, launch=launch, **options
        )
        self.tuning = {"chosen": label, "ms": times}
        return kernel

    @property
    def _owner(self) -> str:
        """The loop variable, or the tuple of the collapsed ones, that owns a written element."""
        if not self.collapsed:
            return self.loop_var
        return "(" + ", ".join([self.loop_var, *(v for v, _ in self.collapsed)]) + ")"

    def describe(self) -> str:
        """What was decided, one line each: the parallel loop, the atomics, the helpers."""
        header = {
            line.split(":", 1)[0]: line.split(":", 1)[1]
            for line in str(self).splitlines()[:6]
            if line.startswith(("// Parallel loop:", "// Counters ("))
        }
        loop = re.search(r"`(for [^`]*)`", header.get("// Parallel loop", ""))
        lines = [
            f"{self.kernel}: parallel loop "
            f"`{loop.group(1) if loop else f'for {self.loop_var} in range(...)'}` "
            f"at line {self.loop_line}"
        ]
        if self.collapsed:
            loops = ", ".join(f"`for {v}` at line {line}" for v, line in self.collapsed)
            names = ", ".join([self.loop_var, *(v for v, _ in self.collapsed)])
            lines[0] += f", collapsed with {loops}: one ({names}) per thread"
        lines.append(f"  launch shape: n_threads = {self.n_threads or '(pass n_threads=)'}")
        counters = next((v for k, v in header.items() if k.startswith("// Counters (")), None)
        if counters:
            lines.append(f"  counters (recounted per iteration):{counters.rstrip('.')}")
        for array, line, how in self.writes:
            what = {
                "atomic": "atomic add (other iterations may hit the same element)",
                "reduction": "sum of every thread's partial, one atomic add per thread",
                "private": "the thread's own scratch array (its struct's __init__ allocates it)",
            }.get(how, f"indexed by {self._owner}: safe")
            lines.append(f"  line {line}: write to {array}: {what}")
        if self.helpers:
            lines.append(f"  __device__ helpers: {', '.join(self.helpers)}")
        for var, ty in self.typevars:
            lines.append(
                f"  generic {var}: instantiated for {ty} (its first constraint known here)"
            )
        return "\n".join(lines)


def _dump(node: Any) -> Any:
    """Python's syntax tree as plain JSON data: ``{"_t": class, "_line": n, field: ...}``."""
    if isinstance(node, ast.AST):
        out: dict[str, Any] = {"_t": type(node).__name__}
        line = getattr(node, "lineno", None)
        if line is not None:
            out["_line"] = line
        for field, value in ast.iter_fields(node):
            out[field] = _dump(value)
        return out
    if isinstance(node, list):
        return [_dump(v) for v in node]
    if node is None or isinstance(node, bool | int | float | str):
        return node
    return {"_t": "Unsupported", "repr": repr(node)}


# C field types of a CudaStructArguments class -> the translator's type names.
_C_FIELD_TYPES = {
    "double": "float64",
    "float": "float32",
    "long long": "int64",
    "int64_t": "int64",
    "long": "int64",
    "int": "int32",
    "int32_t": "int32",
    "bool": "bool",
}


def _struct_type(name: str, cls: Any, kernel: str) -> str:
    fields = []
    for field, ctype in cls.fields:
        text = " ".join(str(ctype).replace("const ", "").split())
        pointer = text.endswith("*")
        base = _C_FIELD_TYPES.get(text.rstrip("*").strip())
        if base is None:
            raise CudaPortInputError(
                f"{kernel}: field {field!r} of struct {cls.struct_name} (argument {name!r}) "
                f"has C type {ctype!r}; the translator knows {sorted(_C_FIELD_TYPES)} "
                "and pointers to them"
            )
        fields.append(f"{field}: {base}[:]" if pointer else f"{field}: {base}")
    return f"struct {cls.struct_name} {{{'; '.join(fields)}}}"


def _type_of(name: str, value: Any, kernel: str) -> str:
    cls = type(value)
    if getattr(cls, "struct_name", None) and getattr(cls, "fields", None):
        return _struct_type(name, cls, kernel)
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, complex):
        return "complex"
    dtype, ndim = getattr(value, "dtype", None), getattr(value, "ndim", None)
    if dtype is None or ndim is None:
        raise CudaPortInputError(
            f"{kernel}: sample argument {name!r} is a {type(value).__name__}; "
            "expected an array, int, float, bool or complex"
        )
    if ndim == 0:
        return str(dtype)
    flags = getattr(value, "flags", None)
    if flags is not None and not flags.c_contiguous:
        raise CudaPortInputError(
            f"{kernel}: sample argument {name!r} is not C-contiguous; "
            "the generated kernel takes C-ordered arrays"
        )
    return f"{dtype}[{','.join(':' * ndim)}]"


def generate_cuda(
    host_function: Callable[..., Any],
    *,
    sample_args: Sequence[Any] | None = None,
    parallel_loop: int | None = None,
) -> GeneratedCuda:
    """Translates a host kernel (a typed Python/Pyccel function) into a CUDA C kernel with the
    same name and argument order, and returns its source (a :class:`GeneratedCuda`).

    Argument types come from the annotations (``float``, ``'float[:,:]'``,
    ``'Final[int32[:]]'``) or from ``sample_args`` (a sample call's positional arguments,
    which win; a :class:`~cunumpy.arguments.CudaStructArguments` instance makes a struct
    argument whose array fields the kernel indexes as ``p.x[i]``). The kernel's one top-level
    ``for ... in range(...)`` loop runs in parallel (``parallel_loop=LINE`` picks another
    top-level loop); every array write in it must be indexed by the loop variable, or be a
    ``+=``/``-=`` (made an atomic add). Anything else is refused with
    :class:`~cunumpy.exceptions.CudaPortRaceError`; constructs the translator does not handle
    raise :class:`~cunumpy.exceptions.CudaPortUnsupportedError`. Both name the function, the
    line, the construct and the array. Functions of the same module that the
    kernel calls become ``__device__`` functions.
    """
    fn = inspect.unwrap(getattr(host_function, "python_function", None) or host_function)
    name = getattr(fn, "__name__", None)
    module = inspect.getmodule(fn)
    if name is None or module is None:
        raise CudaPortInputError(
            f"generate_cuda needs a function defined in a module, got {host_function!r}"
        )
    try:
        source = inspect.getsource(module)
    except (OSError, TypeError) as exc:
        raise CudaPortInputError(
            f"{name}: the source of module {module.__name__!r} cannot be read ({exc})"
        ) from None
    arg_types: list[tuple[str, str]] = []
    structs: list[Any] = []
    if sample_args is not None:
        try:
            bound = inspect.signature(fn).bind(*sample_args)
        except TypeError as exc:
            raise CudaPortInputError(
                f"{name}: sample_args do not fit its parameters ({exc})"
            ) from None
        arg_types = [(n, _type_of(n, v, name)) for n, v in bound.arguments.items()]
        structs = [
            type(v).struct
            for v in bound.arguments.values()
            if getattr(type(v), "struct_name", None)
            and getattr(type(v), "struct", None) is not None
        ]
    out = translate_source(
        source,
        name,
        arg_types=arg_types,
        parallel_loop=parallel_loop,
        namespace=vars(module),
    )
    out.structs = tuple(dict.fromkeys([*structs, *out.structs]))
    return out


# Annotation names the translator reads as scalars (anything else that is a bare name may be a
# struct class).
_SCALAR_NAMES = frozenset(
    "float float64 double real f8 float32 f4 int int64 i8 int32 i4 bool bool_ complex "
    "complex128 complex64 cfloat cdouble".split()
)

# Element dtypes of struct fields -> the translator's type names.
_FIELD_DTYPES = {
    "float64": "float64",
    "float32": "float32",
    "int64": "int64",
    "int32": "int32",
    "bool": "bool",
}


def _port_error(cls: type, function: str, line: int, construct: str, message: str) -> Exception:
    exc = cls(f"{function}, line {line}: {message}")
    exc.function, exc.line, exc.construct, exc.array = function, line, construct, None
    return exc


def _module_file(module: str, search_paths: Sequence[Path]) -> Path | None:
    """The source file of dotted ``module`` under ``search_paths`` (then ``sys.path``), found
    without importing anything."""
    rel = Path(*module.split("."))
    for root in [*search_paths, *(Path(p) for p in sys.path if p)]:
        for cand in (root / rel.with_suffix(".py"), root / rel / "__init__.py"):
            if cand.is_file():
                return cand
    return None


def _struct_of_class(
    class_name: str,
    tree: ast.Module,
    source: str,
    namespace: dict[str, Any] | None,
    search_paths: Sequence[Path],
) -> Any:
    """The :class:`~cunumpy.arguments.CudaStruct` of the class an annotation names: a
    ``CudaStructArguments`` subclass of the module's namespace (its own layout), or a Pyccel
    argument class (laid out from its ``__init__`` annotations by
    ``CudaStruct.from_pyccel_class``) defined in the module or imported by
    ``from PACKAGE.MODULE import NAME``. ``None`` when the name is no class found so."""
    from ..arguments import CudaStruct

    obj = (namespace or {}).get(class_name)
    if inspect.isclass(obj) and getattr(obj, "struct", None) is not None:
        return obj.struct, None
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == class_name:
            return _with_derived_ints(
                CudaStruct.from_pyccel_class(source, class_name, contiguous=True), node
            ), node
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            for alias in node.names:
                if (alias.asname or alias.name) == class_name:
                    path = _module_file(node.module, search_paths)
                    if path is None:
                        return None, None
                    struct = CudaStruct.from_pyccel_class(
                        path, alias.name, class_name, contiguous=True
                    )
                    cls = next(
                        (
                            n
                            for n in ast.parse(path.read_text()).body
                            if isinstance(n, ast.ClassDef) and n.name == alias.name
                        ),
                        None,
                    )
                    return (struct, None) if cls is None else (_with_derived_ints(struct, cls), cls)
    return None, None


def _inline_field_aliases(tree: ast.Module, name: str, struct_types: dict[str, str]) -> None:
    """``markers = args.markers`` (a top-level statement of the kernel naming an array field of
    a struct argument, the name assigned nowhere else) is dropped and every use of
    ``markers`` reads ``args.markers``: the race proof then sees the field itself."""
    fn = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name), None)
    if fn is None or not struct_types:
        return
    stores: dict[str, int] = {}
    for node in ast.walk(fn):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            stores[node.id] = stores.get(node.id, 0) + 1
    aliases: dict[str, ast.Attribute] = {}
    keep = []
    for stmt in fn.body:
        value = getattr(stmt, "value", None)
        if (
            isinstance(stmt, ast.Assign)
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)
            and stores.get(stmt.targets[0].id) == 1
            and isinstance(value, ast.Attribute)
            and isinstance(value.value, ast.Name)
            and value.value.id in struct_types
            and f"{value.attr}: view " in struct_types[value.value.id]
        ):
            aliases[stmt.targets[0].id] = value
            continue
        keep.append(stmt)
    if not aliases:
        return
    fn.body = keep

    class _Inline(ast.NodeTransformer):
        def visit_Name(self, node: ast.Name) -> ast.AST:
            target = aliases.get(node.id)
            if target is None or not isinstance(node.ctx, ast.Load):
                return node
            return ast.copy_location(
                ast.Attribute(
                    value=ast.Name(id=target.value.id, ctx=ast.Load()),  # type: ignore[attr-defined]
                    attr=target.attr,
                    ctx=ast.Load(),
                ),
                node,
            )

    _Inline().visit(fn)


def _inline_helper_field_aliases(tree: ast.Module, kernel: str, struct_types: dict[str, str]):
    """``markers = args_markers.markers`` in a helper whose parameter ``args_markers`` is
    annotated with the class of one of the kernel's struct arguments: inlined as in the kernel
    (``_inline_field_aliases``), so that the helper's writes name the field and the race proof
    can follow the index the helper is given (``update_position_stage(ip, ..., args_markers)``
    writing ``markers[0:3, ip]``)."""
    by_class: dict[str, str] = {}
    for text in struct_types.values():
        head = text.split("{", 1)[0].split()
        if len(head) == 2 and head[0] == "struct":
            by_class[head[1]] = text
    if not by_class:
        return
    for fn in tree.body:
        if not isinstance(fn, ast.FunctionDef) or fn.name == kernel:
            continue
        params: dict[str, str] = {}
        for a in fn.args.args:
            ann = a.annotation
            cls = ann.value if isinstance(ann, ast.Constant) else getattr(ann, "id", None)
            if isinstance(cls, str) and cls in by_class:
                params[a.arg] = by_class[cls]
        if params:
            _inline_field_aliases(tree, fn.name, params)


def _is_int_expr(e: ast.expr) -> bool:
    """``x.shape[k]``, ``len(x)``, ``int(...)`` or an int literal: an integer for sure."""
    if isinstance(e, ast.Constant):
        return type(e.value) is int
    if isinstance(e, ast.Call) and isinstance(e.func, ast.Name):
        return e.func.id in ("len", "int")
    return (
        isinstance(e, ast.Subscript)
        and isinstance(e.value, ast.Attribute)
        and e.value.attr == "shape"
    )


def _with_derived_ints(struct: Any, cls: ast.ClassDef) -> Any:
    """``struct`` plus one ``long long`` field per attribute the class's ``__init__`` derives
    as an integer (``self.n_markers = markers.shape[1]``), in the order they are set: the host
    kernels read them like the parameters (struphy's ``MarkerArguments`` does this)."""
    from ..arguments import CudaStruct

    init = next(
        (n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None
    )
    if init is None:
        return struct
    names = set(struct.field_names)
    extra = []
    for node in ast.walk(init):
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            t = node.targets[0]
            if (
                isinstance(t, ast.Attribute)
                and isinstance(t.value, ast.Name)
                and t.value.id == "self"
                and t.attr not in names
                and _is_int_expr(node.value)
            ):
                names.add(t.attr)
                extra.append((t.attr, "long long"))
    if not extra:
        return struct
    return CudaStruct(struct.name, [(f.name, f.ctype) for f in struct.fields] + extra)


_ALLOCATORS = ("empty", "zeros", "ones")
_SCRATCH_DTYPES = {"float": "float64", "int": "int64", "bool": "bool", **_FIELD_DTYPES}


def _init_of(cls: ast.ClassDef | None) -> ast.FunctionDef | None:
    if cls is None:
        return None
    return next(
        (n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None
    )


def _scratch_fields(cls: ast.ClassDef | None) -> list[tuple[str, str, str, list[ast.expr]]]:
    """The arrays a Pyccel class's ``__init__`` allocates (``self.bn1 = np.empty(int(pn[0] +
    1), dtype=float)``, as struphy's ``DerhamArguments`` and ``SplineArguments`` do): ``(field,
    fill, "float64[:]", extents)``, the extents written with ``self.<field>`` for the
    ``__init__`` parameters stored in fields. They are not fields of the struct (the host
    passes no value for them): every thread of the generated kernel has its own. Allocations
    of a dtype the translator does not know are left out (a kernel using them is refused)."""
    from ..arguments import _stored_attributes

    init = _init_of(cls)
    if init is None or not init.args.args:
        return []
    me = init.args.args[0].arg
    stored = _stored_attributes(init)

    class _Fields(ast.NodeTransformer):
        def visit_Name(self, node: ast.Name) -> ast.AST:
            if node.id == me:
                return ast.copy_location(ast.Name(id="self", ctx=ast.Load()), node)
            if node.id in stored:
                return ast.copy_location(
                    ast.Attribute(
                        value=ast.Name(id="self", ctx=ast.Load()),
                        attr=stored[node.id],
                        ctx=ast.Load(),
                    ),
                    node,
                )
            return node

    out = []
    for node in ast.walk(init):
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1):
            continue
        t, v = node.targets[0], node.value
        if not (
            isinstance(t, ast.Attribute)
            and isinstance(t.value, ast.Name)
            and t.value.id == me
            and isinstance(v, ast.Call)
        ):
            continue
        func = v.func
        fname = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        if fname not in _ALLOCATORS:
            continue
        kw = {k.arg: k.value for k in v.keywords}
        shape = v.args[0] if v.args else kw.get("shape")
        dtype = v.args[1] if len(v.args) > 1 else kw.get("dtype")
        if shape is None:
            continue
        if dtype is None:
            dname = "float"
        elif isinstance(dtype, ast.Name):
            dname = dtype.id
        elif isinstance(dtype, ast.Attribute):
            dname = dtype.attr
        elif isinstance(dtype, ast.Constant) and isinstance(dtype.value, str):
            dname = dtype.value
        else:
            continue
        elem = _SCRATCH_DTYPES.get(dname)
        if elem is None:
            continue
        dims = list(shape.elts) if isinstance(shape, ast.Tuple | ast.List) else [shape]
        dims = [_Fields().visit(deepcopy(d)) for d in dims]
        out.append((t.attr, fname, f"{elem}[{','.join(':' * len(dims))}]", dims))
    return out


def _scratch_def(struct_name: str, scratch: list, line: int) -> ast.FunctionDef:
    """``def cunumpy_scratch__<Struct>(self): bn1 = (extent,)``: the extents of the scratch
    fields, as the translator reads them (at ``line``, the kernel parameter's)."""
    body = "".join(
        f"    {field} = ({', '.join(ast.unparse(d) for d in dims)},)\n"
        for field, _, _, dims in scratch
    )
    fn = ast.parse(f"def cunumpy_scratch__{struct_name}(self):\n{body}").body[0]
    for node in ast.walk(fn):
        if "lineno" in node._attributes:
            node.lineno = node.end_lineno = line
    assert isinstance(fn, ast.FunctionDef)
    return fn


def _struct_type_of(
    struct: Any, param: str, kernel: str, line: int, scratch: Sequence[tuple] = ()
) -> str:
    """A CudaStruct as the translator's struct type text (``struct N {x: float64[:]; n: int}``)."""
    fields = []
    for f in struct.fields:
        dtype = _FIELD_DTYPES.get(str(f.dtype)) if f.dtype is not None else None
        if dtype is None:
            raise _port_error(
                _unsupported(),
                kernel,
                line,
                "struct field",
                f"field {f.name!r} of struct {struct.name} (argument {param!r}) has C type "
                f"{f.declaration!r}; the translator knows fields of {sorted(_FIELD_DTYPES)}",
            )
        if f.view_ndim and not f.contiguous:
            raise _port_error(
                _unsupported(),
                kernel,
                line,
                "struct field",
                f"field {f.name!r} of struct {struct.name} (argument {param!r}) is a strided "
                f"view {f.declaration!r}; the translator indexes C-ordered CArrayND views",
            )
        if f.view_ndim:
            fields.append(f"{f.name}: view {dtype}[{','.join(':' * f.view_ndim)}]")
        elif f.pointer:
            fields.append(f"{f.name}: {dtype}[:]")
        else:
            fields.append(f"{f.name}: {dtype}")
    names = set(struct.field_names)
    for field, fill, ann, _ in scratch:
        if field not in names:
            fields.append(f"{field}: scratch {fill} {ann}")
    return f"struct {struct.name} {{{'; '.join(fields)}}}"


def _unsupported() -> type:
    from ..exceptions import CudaPortUnsupportedError

    return CudaPortUnsupportedError


def _struct_arg_types(
    tree: ast.Module,
    source: str,
    name: str,
    given: set[str],
    namespace: dict[str, Any] | None,
    search_paths: Sequence[Path],
) -> tuple[list[tuple[str, str]], list[Any]]:
    """Types of the kernel's parameters annotated with a struct class name (and not given by
    ``arg_types``), and those structs (for the launch). The extents of their scratch fields
    are added to ``tree`` (``_scratch_def``), and ``X = Class(p.f1, ..., p.fn)`` of the
    kernel, a per-thread copy of a struct parameter, is read as ``p`` itself
    (``_alias_struct_copies``)."""
    from ..exceptions import CudaStructError

    fn = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name), None)
    if fn is None:
        return [], []
    types, structs = [], []
    classes: dict[str, tuple[str, ast.ClassDef | None]] = {}
    scratch_done: set[str] = set()
    for arg in [*fn.args.posonlyargs, *fn.args.args]:
        ann = arg.annotation
        if arg.arg in given or ann is None:
            continue
        text = ann.value if isinstance(ann, ast.Constant) else ast.unparse(ann)
        if not isinstance(text, str):
            continue
        text = text.strip().strip("'\"").strip()
        if not text.isidentifier() or text in _SCALAR_NAMES:
            continue
        try:
            struct, cls = _struct_of_class(text, tree, source, namespace, search_paths)
        except CudaStructError as exc:
            raise _port_error(
                _unsupported(),
                name,
                arg.lineno,
                "struct class",
                f"argument {arg.arg!r} is annotated {text!r}, a class the struct machinery "
                f"cannot lay out: {exc}",
            ) from None
        if struct is None:
            continue
        scratch = _scratch_fields(cls)
        scratch = [x for x in scratch if x[0] not in set(struct.field_names)]
        types.append((arg.arg, _struct_type_of(struct, arg.arg, name, arg.lineno, scratch)))
        structs.append(struct)
        classes[arg.arg] = (text, cls)
        if scratch and struct.name not in scratch_done:
            scratch_done.add(struct.name)
            tree.body.append(_scratch_def(struct.name, scratch, arg.lineno))
    _alias_struct_copies(fn, classes)
    return types, structs


def _alias_struct_copies(fn: ast.FunctionDef, classes: dict[str, tuple[str, Any]]) -> None:
    """``thread_derham = DerhamArguments(args_derham.pn, args_derham.tn1, ...)`` in the kernel
    (struphy's pushers make a copy per OpenMP thread, so that each has its own scratch
    arrays): the struct parameter's fields in the order of the class's ``__init__``. In the
    generated kernel every thread has its own scratch fields of the parameter already, so the
    copy is the parameter: the statement is dropped and ``thread_derham`` reads
    ``args_derham``. Refused (naming the line) when the copy is anything else or the
    parameter is used besides."""
    by_class: dict[str, list[str]] = {}
    for param, (cname, _) in classes.items():
        by_class.setdefault(cname, []).append(param)
    stores: dict[str, int] = {}
    loads: dict[str, int] = {}
    for node in ast.walk(fn):
        if isinstance(node, ast.Name):
            d = loads if isinstance(node.ctx, ast.Load) else stores
            d[node.id] = d.get(node.id, 0) + 1
    renames: dict[str, str] = {}
    drop: set[int] = set()
    for node in ast.walk(fn):
        if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)):
            continue
        func = node.value.func
        cname = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        if cname not in by_class:
            continue

        def refuse(why: str, line: int = node.lineno, cname: str = cname) -> Exception:
            return _port_error(
                _unsupported(),
                fn.name,
                line,
                "struct construction",
                f"constructs a {cname} ({why}); the translator reads only a copy of a "
                f"{cname} parameter, {cname}(p.<field>, ...) with its fields in the order "
                "of __init__, assigned to a name once, the parameter used nowhere else",
            )

        call = node.value
        target = node.targets[0] if len(node.targets) == 1 else None
        if not isinstance(target, ast.Name) or stores.get(target.id) != 1 or call.keywords:
            raise refuse("not a copy assigned once to a name")
        bases = {
            a.value.id
            for a in call.args
            if isinstance(a, ast.Attribute) and isinstance(a.value, ast.Name)
        }
        if len(bases) != 1 or len(call.args) == 0:
            raise refuse("its arguments are not the fields of one parameter")
        (param,) = bases
        if param not in by_class[cname] or param in renames.values():
            raise refuse(f"'{param}' is not a {cname} parameter copied once")
        init = _init_of(classes[param][1])
        from ..arguments import _stored_attributes

        stored = _stored_attributes(init) if init is not None else {}
        order = [stored.get(a.arg, a.arg) for a in (init.args.args[1:] if init else [])]
        if [a.attr for a in call.args] != order:  # type: ignore[attr-defined]
            raise refuse(f"the arguments are not {param}.{', {param}.'.join(order)}")
        if loads.get(param, 0) != len(call.args):
            raise refuse(f"'{param}' is also used besides the copy")
        renames[target.id] = param
        drop.add(id(node))
    if not renames:
        return

    def strip(body: list[ast.stmt]) -> list[ast.stmt]:
        kept = []
        for st in body:
            if id(st) in drop:
                continue
            for field in ("body", "orelse", "finalbody"):
                inner = getattr(st, field, None)
                if isinstance(inner, list) and inner:
                    setattr(st, field, strip(inner) or [ast.Pass()])
            kept.append(st)
        return kept

    fn.body = strip(fn.body) or [ast.Pass()]
    for node in ast.walk(fn):
        if isinstance(node, ast.Name) and node.id in renames:
            node.id = renames[node.id]


def _annotations_as_text(tree: ast.Module) -> ast.Module:
    """Parameter annotations written as expressions (``x: float[:]`` under ``from __future__
    import annotations``) become the text Pyccel reads (``"float[:]"``), as if quoted."""
    for node in ast.walk(tree):
        if isinstance(node, ast.arg) and isinstance(node.annotation, ast.Subscript | ast.Attribute):
            text = ast.unparse(node.annotation)
            node.annotation = ast.copy_location(ast.Constant(text), node.annotation)
    return tree


# TypeVar constraints the translator instantiates a generic kernel for, in order of preference.
_TYPEVAR_PICK = ("float", "float64", "int", "int64", "float32", "int32", "bool")


def _typevars(tree: ast.Module) -> dict[str, str]:
    """``T = TypeVar('T', float, complex)`` at the top of the module -> ``{"T": "float"}``: the
    first constraint the translator knows (complex kernels are not translated). A TypeVar
    without such a constraint is left alone (the annotation is then refused by name)."""
    out: dict[str, str] = {}
    for node in tree.body:
        if not (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, ast.Call)
        ):
            continue
        func = node.value.func
        fname = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        if fname != "TypeVar":
            continue
        names = [
            c.id if isinstance(c, ast.Name) else c.value if isinstance(c, ast.Constant) else None
            for c in node.value.args[1:]
        ]
        pick = next((t for t in _TYPEVAR_PICK if t in names), None)
        if pick is not None:
            out[node.targets[0].id] = pick
    return out


def _instantiate_typevars(tree: ast.Module) -> dict[str, str]:
    """Rewrites the text annotations of every function (``'T[:,:]'``, ``'T'``) with the type
    each module TypeVar is instantiated for (see ``_typevars``); returns that choice."""
    tvars = _typevars(tree)
    if not tvars:
        return tvars
    pattern = re.compile(r"\b(" + "|".join(map(re.escape, tvars)) + r")\b")
    for node in ast.walk(tree):
        ann = getattr(node, "annotation", None) if isinstance(node, ast.arg) else None
        if isinstance(ann, ast.Constant) and isinstance(ann.value, str):
            ann.value = pattern.sub(lambda m: tvars[m.group(1)], ann.value)
        elif isinstance(ann, ast.Name) and ann.id in tvars:
            node.annotation = ast.copy_location(ast.Constant(tvars[ann.id]), ann)
    return tvars


def _hoist_local_imports(tree: ast.Module) -> None:
    """``from numpy import size`` (or ``import math``) inside a function body moves to the top
    of the module, where the translator reads the names of ``math`` and ``numpy``; imports of
    anything else stay (and are refused where they are)."""
    for fn in [n for n in tree.body if isinstance(n, ast.FunctionDef)]:
        keep = []
        for stmt in fn.body:
            names = (
                [stmt.module or ""]
                if isinstance(stmt, ast.ImportFrom)
                else [a.name for a in stmt.names]
                if isinstance(stmt, ast.Import)
                else None
            )
            if names and all(n in ("math", "numpy") for n in names):
                tree.body.insert(0, stmt)
            else:
                keep.append(stmt)
        fn.body = keep or [ast.Pass()]


def _is_shape_of(value: ast.expr) -> str | None:
    """``x.shape``, ``shape(x)``, ``np.shape(x)``: the name ``x``."""
    if isinstance(value, ast.Attribute) and value.attr == "shape":
        inner = value.value
        return inner.id if isinstance(inner, ast.Name) else None
    if (
        isinstance(value, ast.Call)
        and len(value.args) == 1
        and not value.keywords
        and isinstance(value.args[0], ast.Name)
    ):
        func = value.func
        if (isinstance(func, ast.Name) and func.id == "shape") or (
            isinstance(func, ast.Attribute) and func.attr == "shape"
        ):
            return value.args[0].id
    return None


class _ShapeInline(ast.NodeTransformer):
    """``shp[k]`` -> ``x.shape[k]`` for ``aliases = {"shp": "x"}``."""

    def __init__(self, aliases: dict[str, str]) -> None:
        self.aliases = aliases

    def visit_Subscript(self, node: ast.Subscript) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.value, ast.Name) and node.value.id in self.aliases:
            shape = ast.Attribute(
                value=ast.Name(id=self.aliases[node.value.id], ctx=ast.Load()),
                attr="shape",
                ctx=ast.Load(),
            )
            return ast.copy_location(
                ast.Subscript(value=shape, slice=node.slice, ctx=node.ctx), node
            )
        return node


def _inline_shape_aliases(tree: ast.Module) -> None:
    """``shp = shape(x)`` (a top-level statement of a function, the name assigned nowhere
    else and only ever indexed by a constant) is dropped and ``shp[k]`` reads ``x.shape[k]``."""
    for fn in [n for n in tree.body if isinstance(n, ast.FunctionDef)]:
        stores: dict[str, int] = {}
        for node in ast.walk(fn):
            if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
                stores[node.id] = stores.get(node.id, 0) + 1
        aliases: dict[str, str] = {}
        for stmt in fn.body:
            if (
                isinstance(stmt, ast.Assign)
                and len(stmt.targets) == 1
                and isinstance(stmt.targets[0], ast.Name)
                and stores.get(stmt.targets[0].id) == 1
            ):
                base = _is_shape_of(stmt.value)
                if base is not None:
                    aliases[stmt.targets[0].id] = base
        if not aliases:
            continue
        indexed = {
            id(node.value)
            for node in ast.walk(fn)
            if isinstance(node, ast.Subscript)
            and isinstance(node.value, ast.Name)
            and isinstance(node.slice, ast.Constant | ast.UnaryOp)
        }
        for node in ast.walk(fn):
            if (
                isinstance(node, ast.Name)
                and isinstance(node.ctx, ast.Load)
                and node.id in aliases
                and id(node) not in indexed
            ):
                aliases.pop(node.id)  # used whole: left to the translator
        if not aliases:
            continue

        fn.body = [
            stmt
            for stmt in fn.body
            if not (
                isinstance(stmt, ast.Assign)
                and isinstance(stmt.targets[0], ast.Name)
                and stmt.targets[0].id in aliases
                and _is_shape_of(stmt.value) is not None
            )
        ] or [ast.Pass()]
        _ShapeInline(aliases).visit(fn)
        ast.fix_missing_locations(fn)


_MATH_NUMPY = ("math", "numpy")


def _imports_of(tree: ast.Module) -> tuple[dict[str, str], dict[str, tuple[str, str]]]:
    """A module's imports of other modules than math/numpy: ``import a.b.c as m`` -> ``{"m":
    "a.b.c"}``, ``from a.b.c import f as g`` -> ``{"g": ("a.b.c", "f")}``."""
    mods: dict[str, str] = {}
    names: dict[str, tuple[str, str]] = {}
    for node in tree.body:
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] not in _MATH_NUMPY and (a.asname or "." not in a.name):
                    mods[a.asname or a.name] = a.name
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module.split(".")[0] not in _MATH_NUMPY:
                for a in node.names:
                    names[a.asname or a.name] = (node.module, a.name)
    return mods, names


class _Helpers:
    """Functions of other modules the kernel calls (``bsplines_kernels.find_span(...)``,
    ``from pkg.mod import f``): each is read from its file (found under the search paths, never
    imported), renamed ``<module>__<name>`` and added to the kernel's module, with the functions
    it calls in turn; its file's lines are appended to the source after the module's own, so
    the generated comments quote them (``origin`` maps those lines back)."""

    def __init__(self, tree: ast.Module, source: str, search_paths: Sequence[Path]) -> None:
        self.tree = tree
        self.lines = source.splitlines()
        self.main_len = len(self.lines)
        self.search = search_paths
        self.files: dict[Path, tuple[ast.Module, int]] = {}
        self.done: dict[tuple[Path, str], str | None] = {}
        self.spans: list[tuple[int, int, Path]] = []
        self.bound: dict[str, tuple[str | None, str]] = {
            a.asname or a.name: (n.module if isinstance(n, ast.ImportFrom) else None, a.name)
            for n in tree.body
            if isinstance(n, ast.Import | ast.ImportFrom)
            for a in n.names
        }

    def _file(self, path: Path) -> tuple[ast.Module, int]:
        if path not in self.files:
            text = path.read_text()
            offset = len(self.lines)
            tree = _annotations_as_text(ast.parse(text))
            _instantiate_typevars(tree)
            _hoist_local_imports(tree)
            _inline_shape_aliases(tree)
            ast.increment_lineno(tree, offset)
            self.lines.extend(text.splitlines())
            self.spans.append((offset, len(self.lines), path))
            self.files[path] = (tree, offset)
            # its math/numpy names, where the kernel's module does not bind them otherwise
            for node in tree.body:
                if not isinstance(node, ast.Import | ast.ImportFrom):
                    continue
                mod = node.module if isinstance(node, ast.ImportFrom) else None
                if (mod or node.names[0].name).split(".")[0] not in _MATH_NUMPY:
                    continue
                new = [
                    a
                    for a in node.names
                    if self.bound.setdefault(a.asname or a.name, (mod, a.name)) == (mod, a.name)
                ]
                if new:
                    moved = deepcopy(node)
                    moved.names = new
                    self.tree.body.insert(0, moved)
        return self.files[path]

    def pull(self, module: str, name: str) -> str | None:
        path = _module_file(module, self.search)
        if path is None:
            return None
        key = (path, name)
        if key in self.done:
            return self.done[key]
        tree, _ = self._file(path)
        fdef = next(
            (n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name), None
        )
        if fdef is None:
            self.done[key] = None
            return None
        taken = {n.name for n in self.tree.body if isinstance(n, ast.FunctionDef)}
        mangled = f"{module.rsplit('.', 1)[-1]}__{name}"
        while mangled in taken:
            mangled += "_"
        self.done[key] = mangled
        copy = deepcopy(fdef)
        copy.name = mangled
        mods, names = _imports_of(tree)
        local = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
        self.resolve(copy, mods, names, local, module)
        self.tree.body.append(copy)
        return mangled

    def resolve(
        self,
        fn: ast.FunctionDef,
        mods: dict[str, str],
        names: dict[str, tuple[str, str]],
        local: set[str],
        module: str | None,
    ) -> None:
        """Points the calls of ``fn`` to other modules' functions (and, in a function read
        from another module, to its own module's functions) at their renamed copies."""
        for node in ast.walk(fn):
            if not isinstance(node, ast.Call):
                continue
            func, target = node.func, None
            if (
                isinstance(func, ast.Attribute)
                and isinstance(func.value, ast.Name)
                and func.value.id in mods
            ):
                target = (mods[func.value.id], func.attr)
            elif isinstance(func, ast.Name) and func.id in names:
                target = names[func.id]
            elif isinstance(func, ast.Name) and module is not None and func.id in local:
                target = (module, func.id)
            if target is not None:
                mangled = self.pull(*target)
                if mangled is not None:
                    node.func = ast.copy_location(ast.Name(id=mangled, ctx=ast.Load()), func)

    def origin(self, line: int) -> tuple[Path, int] | None:
        """(file, line in it) of a line of an appended file; None for the module's own."""
        for start, end, path in self.spans:
            if start < line <= end:
                return path, line - start
        return None

    def source(self) -> str:
        return "\n".join(self.lines) + "\n"

    def relabel(self, text: str) -> str:
        """``// L<n>:`` comments of appended lines name their file and line instead."""

        def sub(m: re.Match[str]) -> str:
            where = self.origin(int(m.group(1)))
            if where is None:
                return m.group(0)
            return f"// {where[0].name}:{where[1]}:"

        return re.sub(r"// L(\d+):", sub, text)


def translate_source(
    source: str,
    name: str,
    *,
    arg_types: Sequence[tuple[str, str]] = (),
    parallel_loop: int | None = None,
    search_paths: Sequence[str | Path] = (),
    namespace: dict[str, Any] | None = None,
) -> GeneratedCuda:
    """Translates function ``name`` of a module's ``source`` (without importing it):
    ``generate_cuda`` without the function object. ``arg_types`` are ``(parameter, type)``
    pairs as annotations spell them (``"float64[:,:]"``, ``"int"``).

    A parameter annotated with a class name (``args: "DomainArguments"``) is a struct
    argument: the class is a ``CudaStructArguments`` subclass of ``namespace`` (its layout),
    or a Pyccel argument class defined in the module or imported by ``from PKG.MOD import
    NAME``, whose file is looked up under ``search_paths`` and ``sys.path`` (read, never
    imported) and laid out from its ``__init__`` annotations as
    :meth:`~cunumpy.arguments.CudaStruct.from_pyccel_class` does."""
    tree = _annotations_as_text(ast.parse(source))
    typevars = _instantiate_typevars(tree)
    _hoist_local_imports(tree)
    _inline_shape_aliases(tree)
    struct_types, structs = _struct_arg_types(
        tree,
        source,
        name,
        {n for n, _ in arg_types},
        namespace,
        [Path(p) for p in search_paths],
    )
    _inline_field_aliases(tree, name, dict(struct_types))
    helpers = _Helpers(tree, source, [Path(p) for p in search_paths])
    mods, names = _imports_of(tree)
    for fn in [n for n in tree.body if isinstance(n, ast.FunctionDef)]:
        helpers.resolve(fn, mods, names, set(), None)
    _inline_helper_field_aliases(tree, name, dict(struct_types))
    from ..exceptions import CudaPortError

    try:
        info = _core._port_translate(
            json.dumps(_dump(tree)),
            helpers.source(),
            name,
            arg_types=[*arg_types, *struct_types],
            parallel_loop=parallel_loop,
        )
    except CudaPortError as exc:
        where = helpers.origin(getattr(exc, "line", 0) or 0)
        if where is None:
            raise
        text = str(exc).split(": ", 1)[-1]
        moved = type(exc)(f"{exc.function}, line {where[1]} of {where[0]}: {text}")
        moved.function, moved.line, moved.construct, moved.array = (
            exc.function,
            where[1],
            exc.construct,
            exc.array,
        )
        moved.file = str(where[0])
        raise moved from None
    out = GeneratedCuda(helpers.relabel(info["source"]))
    out.kernel = info["kernel"]
    out.params = tuple(info["params"])
    out.loop_line = info["loop_line"]
    out.loop_var = info["loop_var"]
    out.collapsed = tuple((v, line) for v, line in info["collapsed"])
    out.n_threads = info["n_threads"]
    out.writes = tuple(tuple(w) for w in info["writes"])
    out.helpers = tuple(info["helpers"])
    out.structs = tuple(structs)
    out.typevars = tuple(sorted(typevars.items()))
    return out
