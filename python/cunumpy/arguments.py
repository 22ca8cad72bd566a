"""Argument objects for CUDA kernels: groups of arguments and C structs passed by value.

- :class:`CudaArguments` groups values that a :class:`~cunumpy.kernels.CudaKernel` flattens
  into several parameters (any object with ``__cuda_args__()`` works the same way).
- :class:`CudaStruct` describes a C struct. Its layout (offsets, size, alignment) is computed in
  Rust with the CUDA ABI: scalars are aligned to their size, so ``complex<double>`` is
  16-aligned (NumPy's own ``align=True`` dtypes align complex128 to 8 and get such structs
  wrong); pointers and ``ArrayND``/``CArrayND`` views are 8-aligned; nested structs and
  fixed-size arrays follow the C rules. Calling it with keyword values packs a
  :class:`CudaStructValue` that kernels take by value (``CudaKernel(..., structs=[S])``).
- :class:`CudaStructArguments` is a struct as a Python class whose attributes are the fields;
  it repacks itself whenever a field changes.
"""

from __future__ import annotations

import ast
import inspect
import re
import sys
import typing
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from . import _core
from ._struct_value import CudaStructRecord, CudaStructValue
from .cuda._source import CudaParameter
from .exceptions import (
    CudaStructError,
    CupyUnavailableError,
    InvalidArgumentTypeError,
    KernelArgumentTypeError,
)

__all__ = [
    "CudaArguments",
    "CudaStruct",
    "CudaStructArguments",
    "CudaStructRecord",
    "CudaStructValue",
    "write_cuda_header",
]

_COMPLEX_PROBE_TYPE = "template <typename T> struct alignas(2 * sizeof(T)) complex { T re, im; };\n"


class CudaArguments:
    """A group of kernel arguments: ``kernel(CudaArguments(x, v, n), out)`` is
    ``kernel(x, v, n, out)``."""

    def __init__(self, *values: Any) -> None:
        self.values = tuple(values)

    def __cuda_args__(self) -> tuple[Any, ...]:
        """The values this object stands for, in parameter order."""
        return self.values

    def __repr__(self) -> str:
        return f"{type(self).__name__}{self.values!r}"


def _current_device() -> int:
    cupy = sys.modules.get("cupy")
    if cupy is None:
        return 0
    try:
        return int(cupy.cuda.runtime.getDevice())
    except Exception:  # no usable device: host-only values still pack
        return 0


def _guard_of(text: str) -> str:
    return re.sub(r"\W", "_", text).upper()


class CudaStruct:
    """A C struct with the CUDA layout.

    ``fields`` is a sequence of ``(name, type)`` pairs. A type is the text of a C type a kernel
    parameter may have (``"double"``, ``"complex<double>"``, ``"float*"``, ``"void*"``,
    ``"Array2D<double>"``, ``"CArray1D<int>"``), optionally with extents (``"float[3]"``), or
    another :class:`CudaStruct` (nested by value). A name may also carry the extents
    (``"pos[3]"``). ``structs`` are the structs a type's text may name.

    Raises :class:`~cunumpy.exceptions.CudaStructError` (a ``ValueError``) for an invalid name,
    duplicate fields or an unsupported type.
    """

    def __init__(
        self,
        name: str,
        fields: Iterable[tuple[str, str | CudaStruct]],
        *,
        structs: Sequence[CudaStruct] = (),
    ) -> None:
        if not isinstance(name, str):
            raise CudaStructError(f"invalid struct name {name!r}: expected a str")
        given = list(fields)
        specs = []
        nested: dict[str, CudaStruct] = {s.name: s for s in structs}
        for item in given:
            if not (isinstance(item, tuple | list) and len(item) == 2):
                raise CudaStructError(f"struct {name}: fields are (name, type) pairs, got {item!r}")
            field, ctype = item
            if isinstance(ctype, CudaStruct):
                nested[ctype.name] = ctype
                specs.append((field, ctype._layout))
            elif isinstance(ctype, str):
                specs.append((field, ctype))
            else:
                raise CudaStructError(
                    f"struct {name}: field {field!r} has an unsupported type {ctype!r}: "
                    "expected a C type's text or a CudaStruct"
                )
        self._layout = _core.StructLayout(name, specs, [s._layout for s in structs])
        self._nested = nested
        self._fields: list[dict[str, Any]] = list(self._layout.fields)
        self._parameters: tuple[CudaParameter, ...] | None = None
        self._dtype: np.dtype | None = None

    # -- layout --------------------------------------------------------------------------------
    @property
    def name(self) -> str:
        """The C name of the struct."""
        return str(self._layout.name)

    @property
    def itemsize(self) -> int:
        """``sizeof`` of the struct on the device, in bytes."""
        return int(self._layout.size)

    @property
    def alignment(self) -> int:
        """``alignof`` of the struct on the device."""
        return int(self._layout.alignment)

    @property
    def offsets(self) -> dict[str, int]:
        """Each field's byte offset, in declaration order."""
        return {f["name"]: int(f["offset"]) for f in self._fields}

    @property
    def field_names(self) -> tuple[str, ...]:
        """The field names, in declaration order."""
        return tuple(f["name"] for f in self._fields)

    @property
    def fields(self) -> tuple[CudaParameter, ...]:
        """One :class:`~cunumpy.cuda.CudaParameter` per field, in declaration order, as for a
        kernel parameter: ``name``, ``ctype`` (without ``*``), ``dtype`` (the element dtype;
        ``None`` for ``void*`` and nested structs), ``pointer``, ``struct`` (a nested struct's
        name), ``view_ndim``, ``contiguous`` and ``declaration``. Offsets and sizes are in
        :attr:`field_layout`."""
        if self._parameters is None:
            self._parameters = tuple(_field_parameter(f) for f in self._fields)
        return self._parameters

    @property
    def field_layout(self) -> tuple[dict[str, Any], ...]:
        """One dict per field with its layout: ``name``, ``ctype``, ``kind`` (scalar, pointer,
        view, struct), ``dtype``, ``ndim``, ``contiguous``, ``extents``, ``offset``, ``size``,
        ``alignment``, ``declaration``."""
        return tuple({k: v for k, v in f.items() if k != "struct"} for f in self._fields)

    @property
    def has_views(self) -> bool:
        """Whether a field (nested structs included) is an ``ArrayND``/``CArrayND`` view."""
        return bool(self._layout.has_views)

    @property
    def declaration(self) -> str:
        """The C declaration: ``struct S {\\n    double x;\\n};\\n``."""
        return str(self._layout.declaration)

    @property
    def dtype(self) -> np.dtype:
        """A NumPy structured dtype with the CUDA offsets and size (explicit offsets, so
        ``complex<double>`` fields sit where the device puts them). Pointers are ``uint64``;
        views are ``{data: uint64, shape: int64[N], strides: int64[N]}``."""
        if self._dtype is None:
            self._dtype = _dtype_of(self._layout)
        return self._dtype

    def __repr__(self) -> str:
        return f"CudaStruct({self.name!r}, size={self.itemsize}, alignment={self.alignment})"

    # -- headers -------------------------------------------------------------------------------
    def _declarations(self) -> list[str]:
        deps = [d.declaration for d in self._layout.dependencies()]
        return [*deps, self.declaration]

    def to_header(
        self,
        path: str | Path | None = None,
        *,
        guard: str | None = None,
        includes: Sequence[str] = (),
    ) -> str:
        """The struct (and the structs it nests) as a CUDA header; written to ``path`` when
        given. ``includes``: a bare name (``"my_complex.cuh"``) becomes ``#include "…"``, a
        ``<…>`` name is kept. The default guard is ``NAME_CUH``."""
        text = _header([self], guard or _guard_of(f"{self.name}_CUH"), includes=includes)
        if path is not None:
            Path(path).write_text(text)
        return text

    # -- values --------------------------------------------------------------------------------
    def __call__(self, **values: Any) -> CudaStructValue:
        """Packs a value of the struct. Every field is required; each is checked like a kernel
        parameter of the field's type (device arrays for pointers and views, scalars cast by
        the kernel rules, a value of the nested struct or a dict of its fields). Errors name
        the struct and the field."""
        names = self.field_names
        missing = [n for n in names if n not in values]
        unknown = [n for n in values if n not in names]
        if missing or unknown:
            raise KernelArgumentTypeError(
                f"struct {self.name}: missing fields {missing}, unknown fields {unknown}"
            )
        ordered = []
        for f in self._fields:
            v = values[f["name"]]
            nested = f["struct"]
            if nested is not None and isinstance(v, Mapping):
                v = self._nested[nested.name](**v)
            ordered.append(v)
        packed = bytes(self._layout.pack(ordered, _current_device()))
        return CudaStructValue(self, packed, dict(values))

    # -- checks against the compiler ----------------------------------------------------------
    def layout_source(self, include: str | None = None) -> str:
        """A kernel ``cunumpy_layout_<name>(unsigned long long* out)`` writing ``sizeof``,
        ``alignof`` and then each field's offset, as the compiler lays the struct out.

        ``include`` names a header that declares the struct (else the declaration is
        inlined, with a minimal ``complex<T>`` when a field is complex)."""
        if include is not None:
            head = _include_line(include)
        else:
            head = "#include <cunumpy/array_view.cuh>\n" if self.has_views else ""
            if self._layout.has_complex:
                head += _COMPLEX_PROBE_TYPE
            head += "".join(self._declarations())
        lines = [
            head,
            f"__global__ void cunumpy_layout_{self.name}(unsigned long long* out) {{",
            f"    {self.name} s;",
            "    const char* base = reinterpret_cast<const char*>(&s);",
            f"    out[0] = sizeof({self.name});",
            f"    out[1] = alignof({self.name});",
        ]
        for i, f in enumerate(self._fields):
            lines.append(
                f"    out[{i + 2}] = (unsigned long long)"
                f"(reinterpret_cast<const char*>(&s.{f['name']}) - base);"
            )
        lines.append("}\n")
        return "\n".join(lines)

    def expected_layout(self) -> dict[str, int]:
        """``{"sizeof", "alignof", <field>: offset}`` as computed (what ``verify_layout``
        compares against)."""
        return {"sizeof": self.itemsize, "alignof": self.alignment, **self.offsets}

    def verify_layout(
        self,
        include: str | None = None,
        *,
        include_dirs: Sequence[str | Path] = (),
        options: Sequence[str] = (),
    ) -> dict[str, int]:
        """Compiles :meth:`layout_source` with NVRTC, runs it on the current GPU and compares
        ``sizeof``, ``alignof`` and every offset with the computed layout. Returns the
        device's numbers; raises :class:`~cunumpy.exceptions.CudaStructError` on a mismatch
        and :class:`~cunumpy.exceptions.CupyUnavailableError` without CuPy and a GPU."""
        try:
            import cupy
        except ImportError as exc:
            raise CupyUnavailableError(
                f"verify_layout of struct {self.name} needs CuPy and a GPU"
            ) from exc
        from .kernels._cuda_kernel import CudaKernel  # the class, not the kernel layer

        kernel = CudaKernel(
            self.layout_source(include),
            f"cunumpy_layout_{self.name}",
            block_size=1,
            include_dirs=include_dirs,
            options=options,
        )
        out = cupy.zeros(2 + len(self._fields), dtype=np.uint64)
        kernel(out, n_threads=1)
        got = [int(v) for v in out.get()]
        device = {"sizeof": got[0], "alignof": got[1]}
        device.update({f["name"]: got[i + 2] for i, f in enumerate(self._fields)})
        expected = self.expected_layout()
        diffs = [
            f"{k}: computed {expected[k]}, device {device[k]}"
            for k in expected
            if expected[k] != device[k]
        ]
        if diffs:
            raise CudaStructError(
                f"the device layout of struct {self.name} differs from its CudaStruct: "
                + "; ".join(diffs)
            )
        return device

    # -- from annotations ----------------------------------------------------------------------
    @classmethod
    def from_signature(
        cls,
        func: Callable[..., Any],
        name: str,
        *,
        int_type: str = "long long",
        scalar_names: Mapping[str, str] | None = None,
        contiguous: bool | Collection[str] = False,
    ) -> CudaStruct:
        """One field per parameter of ``func`` (``self``, ``*args`` and ``**kwargs`` skipped),
        typed from pyccel-style annotations: ``float``/``float64`` → ``double``, ``float32``
        → ``float``, ``int`` → ``int_type``, ``int8..int64``, ``bool``,
        ``complex``/``complex128`` → ``complex<double>``, ``complex64`` → ``complex<float>``,
        ``"T[:, :]"`` → ``Array2D<T>`` (``CArray2D<T>`` for the names in ``contiguous``, or
        all with ``contiguous=True``). ``Final[...]``, ``const`` and string annotations are
        understood. ``scalar_names`` maps extra annotation names to C types."""
        params = [
            p
            for p in inspect.signature(func).parameters.values()
            if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) and p.name != "self"
        ]
        for p in params:
            if p.annotation is inspect.Parameter.empty:
                raise CudaStructError(f"struct {name}: parameter {p.name!r} has no type annotation")
        return _struct_from_annotations(
            name,
            [(p.name, p.annotation) for p in params],
            int_type=int_type,
            scalar_names=scalar_names,
            contiguous=contiguous,
        )

    @classmethod
    def from_pyccel_class(
        cls,
        source: str | Path,
        class_name: str,
        name: str | None = None,
        *,
        int_type: str = "long long",
        scalar_names: Mapping[str, str] | None = None,
        exclude: Sequence[str] = (),
        attribute_names: bool = True,
        contiguous: bool | Collection[str] = False,
    ) -> CudaStruct:
        """The struct of a Pyccel argument class: one field per parameter of its
        ``__init__`` (``self`` skipped), typed from the annotations as in
        :meth:`from_signature`.

        ``source`` is the path of a ``.py`` file or the source text; it is parsed, never
        imported (the compiled class has no Python signature). With ``attribute_names`` (the
        default) a parameter stored as ``self.<attribute> = <parameter>`` gives a field named
        after the attribute, as the host kernels see it. ``exclude`` names parameters or
        attributes that are not fields (an unknown name is an error); ``contiguous`` takes
        field names. ``name`` is the C name (default ``class_name``).

        >>> S = CudaStruct.from_pyccel_class(
        ...     "class Args:\\n    def __init__(self, x: 'float[:]', n: int):\\n"
        ...     "        self.markers = x\\n        self.n = n\\n", "Args")
        >>> [f.name for f in S.fields]
        ['markers', 'n']
        """
        struct = name or class_name
        init, where = _pyccel_init(source, class_name, struct)
        stored = _stored_attributes(init) if attribute_names else {}
        args = [*init.args.posonlyargs, *init.args.args][1:] + list(init.args.kwonlyargs)
        excluded = set(exclude)
        known = {a.arg for a in args} | {stored.get(a.arg, a.arg) for a in args}
        unknown = sorted(excluded - known)
        if unknown:
            raise CudaStructError(
                f"struct {struct}: exclude names {unknown} are neither parameters nor "
                f"attributes of {class_name}.__init__ in {where}"
            )
        params: list[tuple[str, Any]] = []
        for a in args:
            field = stored.get(a.arg, a.arg)
            if a.arg in excluded or field in excluded:
                continue
            if a.annotation is None:
                raise CudaStructError(
                    f"struct {struct}: parameter {a.arg!r} of {class_name}.__init__ has no "
                    "type annotation"
                )
            params.append((field, _annotation_text(a.annotation)))
        return _struct_from_annotations(
            struct, params, int_type=int_type, scalar_names=scalar_names, contiguous=contiguous
        )

    def check_source(self, source: str) -> None:
        """Compares the definition of this struct in CUDA ``source`` (``struct NAME {...}``
        or ``typedef struct {...} NAME;``) with this :class:`CudaStruct`: field names, order,
        types, offsets and the size. Raises :class:`~cunumpy.exceptions.CudaStructError`
        naming the first field that differs, or when the definition cannot be compared (a
        member function, a base struct, an alignment attribute, a bit field). Nothing is
        checked when ``source`` does not define the struct (it comes from a header, for
        example)."""
        problem = self._layout.source_mismatch(source, False)
        if problem is not None:
            raise CudaStructError(problem)

    def _source_problem(self, source: str, *, lenient: bool) -> str | None:
        """What is wrong with the struct's definitions in ``source``, or ``None``. With
        ``lenient`` a definition that cannot be compared (member functions, a base struct)
        is accepted: that is how kernels check their ``structs=``."""
        return self._layout.source_mismatch(source, lenient)


_SCALARS = {
    "float": "double",
    "float64": "double",
    "double": "double",
    "float32": "float",
    "int64": "long long",
    "int32": "int",
    "int16": "short",
    "int8": "signed char",
    "uint64": "unsigned long long",
    "uint32": "unsigned int",
    "uint16": "unsigned short",
    "uint8": "unsigned char",
    "bool": "bool",
    "bool_": "bool",
    "complex": "complex<double>",
    "complex128": "complex<double>",
    "complex64": "complex<float>",
}


def _annotation_ctype(
    ann: Any, int_type: str, extra: Mapping[str, str], struct: str, param: str
) -> tuple[str, int]:
    """(C scalar type, number of array dimensions) of one annotation."""
    if typing.get_origin(ann) is typing.Final or (getattr(ann, "__origin__", None) is typing.Final):
        args = typing.get_args(ann)
        ann = args[0] if args else ann
    if isinstance(ann, type):
        if ann is int:
            return int_type, 0
        try:
            text = np.dtype(ann).name if ann.__module__ == "numpy" else ann.__name__
        except TypeError:
            text = ann.__name__
    elif isinstance(ann, str):
        text = ann
    else:
        raise CudaStructError(
            f"struct {struct}: cannot parse the annotation {ann!r} of parameter {param!r}"
        )
    text = text.strip().strip("'\"").strip()
    for prefix in ("typing.Final[", "Final["):
        if text.startswith(prefix) and text.endswith("]"):
            text = text[len(prefix) : -1].strip().strip("'\"")
    text = re.sub(r"^const\s+", "", text)
    text = re.sub(r"\s*,?\s*const\s*$", "", text)
    ndim = 0
    m = re.fullmatch(r"([\w.]+)\s*\[([\s:,]*)\](?:\s*\(\s*order\s*=\s*'?\w'?\s*\))?", text)
    if m:
        text, dims = m.group(1), m.group(2)
        ndim = dims.count(":")
        if ndim == 0 or ndim != dims.count(",") + 1:
            raise CudaStructError(
                f"struct {struct}: cannot parse the annotation {ann!r} of parameter {param!r}"
            )
        if ndim > 16:
            raise CudaStructError(
                f"struct {struct}: parameter {param!r}: arrays have at most 16 dimensions, "
                f"got {ndim}"
            )
    elif not re.fullmatch(r"[\w.]+", text):
        raise CudaStructError(
            f"struct {struct}: cannot parse the annotation {ann!r} of parameter {param!r}"
        )
    base = text.rsplit(".", 1)[-1]
    if base in extra:
        return extra[base], ndim
    if base == "int":
        return int_type, ndim
    if base in _SCALARS:
        return _SCALARS[base], ndim
    raise CudaStructError(f"struct {struct}: parameter {param!r}: unsupported scalar type {base!r}")


def _field_parameter(f: Mapping[str, Any]) -> CudaParameter:
    """A field's layout dict as the kernel parameter it would be."""
    kind = f["kind"]
    dtype = None if f.get("dtype") is None else np.dtype(f["dtype"])
    ctype = str(f["ctype"])
    if kind == "pointer":
        ctype = ctype.rstrip().rstrip("*").rstrip()
    nested = f.get("struct")
    return CudaParameter(
        name=str(f["name"]),
        ctype=ctype,
        dtype=dtype if kind != "struct" else None,
        pointer=kind == "pointer",
        struct=None if nested is None else str(nested.name),
        view_ndim=int(f["ndim"]) if kind == "view" else None,
        contiguous=bool(f.get("contiguous", False)) if kind == "view" else False,
        declaration=str(f.get("declaration", "")),
    )


def _pyccel_init(source: str | Path, class_name: str, struct: str) -> tuple[ast.FunctionDef, str]:
    """The ``__init__`` of ``class_name`` in a ``.py`` path or source text (parsed, never
    imported), and where it came from."""
    text = str(source)
    is_path = isinstance(source, Path) or ("\n" not in text and text.endswith(".py"))
    where = text if is_path else "the given source"
    if is_path:
        text = Path(text).read_text()
    try:
        tree = ast.parse(text)
    except SyntaxError as exc:
        raise CudaStructError(f"struct {struct}: cannot parse {where}: {exc}") from None
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == class_name:
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == "__init__":
                    return item, where
            raise CudaStructError(
                f"struct {struct}: class {class_name!r} in {where} has no __init__"
            )
    raise CudaStructError(f"struct {struct}: no class {class_name!r} in {where}")


def _stored_attributes(init: ast.FunctionDef) -> dict[str, str]:
    """``parameter -> attribute`` for the first ``self.<attribute> = <parameter>`` of each."""
    self_name = init.args.args[0].arg if init.args.args else "self"
    found: dict[str, str] = {}
    for node in ast.walk(init):
        if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Name)):
            continue
        for target in node.targets:
            if (
                isinstance(target, ast.Attribute)
                and isinstance(target.value, ast.Name)
                and target.value.id == self_name
            ):
                found.setdefault(node.value.id, target.attr)
    return found


def _annotation_text(node: ast.expr) -> str:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return ast.unparse(node)


def _struct_from_annotations(
    name: str,
    params: Sequence[tuple[str, Any]],
    *,
    int_type: str,
    scalar_names: Mapping[str, str] | None,
    contiguous: bool | Collection[str],
) -> CudaStruct:
    """One field per ``(field name, annotation)`` (see :meth:`CudaStruct.from_signature`)."""
    extra = dict(scalar_names or {})
    fields: list[tuple[str, str]] = []
    arrays: set[str] = set()
    for field, ann in params:
        ctype, ndim = _annotation_ctype(ann, int_type, extra, name, field)
        if ndim:
            arrays.add(field)
        fields.append((field, ctype if not ndim else f"Array{ndim}D<{ctype}>"))
    if contiguous is True:
        chosen = set(arrays)
    elif contiguous is False:
        chosen = set()
    else:
        chosen = set(contiguous)
        wrong = sorted(chosen - arrays)
        if wrong:
            raise CudaStructError(
                f"struct {name}: contiguous names {wrong} are not array fields "
                f"(array fields: {sorted(arrays)})"
            )
    return CudaStruct(name, [(n, "C" + t if n in chosen else t) for n, t in fields])


def _dtype_of(layout: Any) -> np.dtype:
    names, formats, offsets = [], [], []
    for f in layout.fields:
        kind = f["kind"]
        if kind == "scalar":
            base: Any = np.dtype(f["dtype"])
        elif kind == "pointer":
            base = np.dtype(np.uint64)
        elif kind == "view":
            n = int(f["ndim"])
            vnames = ["data", "shape"] + ([] if f["contiguous"] else ["strides"])
            vformats = [np.uint64, (np.int64, (n,))] + (
                [] if f["contiguous"] else [(np.int64, (n,))]
            )
            base = np.dtype(
                {
                    "names": vnames,
                    "formats": vformats,
                    "offsets": [0, 8, 8 + 8 * n][: len(vnames)],
                    "itemsize": int(f["element_size"]),
                }
            )
        else:
            base = _dtype_of(f["struct"])
        extents = tuple(f["extents"])
        names.append(f["name"])
        formats.append((base, extents) if extents else base)
        offsets.append(int(f["offset"]))
    return np.dtype(
        {"names": names, "formats": formats, "offsets": offsets, "itemsize": int(layout.size)}
    )


def _include_line(inc: str) -> str:
    inc = inc.strip()
    if inc.startswith("<") or inc.startswith('"'):
        return f"#include {inc}\n"
    return f'#include "{inc}"\n'


#: The first line of a generated header (the same text as cunumpy 0.7, so headers written by
#: either compare equal).
HEADER_BANNER = (
    "// Generated by cunumpy.arguments.CudaStruct from the Python definition; do not edit.\n"
)


def _header(structs: Sequence[CudaStruct], guard: str, *, includes: Sequence[str]) -> str:
    lines = [HEADER_BANNER, f"#ifndef {guard}\n", f"#define {guard}\n", "\n"]
    include_lines = [_include_line(i) for i in includes]
    if any(s.has_views for s in structs):
        include_lines.insert(0, '#include "cunumpy/array_view.cuh"\n')
    if include_lines:
        lines.extend(include_lines)
        lines.append("\n")
    seen: set[str] = set()
    for s in structs:
        for decl, sname in [
            *((d.declaration, d.name) for d in s._layout.dependencies()),
            (s.declaration, s.name),
        ]:
            if sname not in seen:
                seen.add(sname)
                lines.append(decl + "\n")
    lines.append(f"#endif  // {guard}\n")
    return "".join(lines)


def write_cuda_header(
    path: str | Path,
    structs: Sequence[CudaStruct],
    guard: str | None = None,
    *,
    includes: Sequence[str] = (),
) -> str:
    """Writes several structs (and the structs they nest, once each) into one header and
    returns its text. The default guard comes from the file name
    (``pusher_args.cuh`` → ``PUSHER_ARGS_CUH``)."""
    path = Path(path)
    text = _header(list(structs), guard or _guard_of(path.name), includes=includes)
    path.write_text(text)
    return text


def _state_of(value: Any) -> Any:
    """What decides a field's packed bytes: pointer/shape/strides of arrays, (type, value) of
    scalars, the packed bytes of nested struct values, else the object's identity."""
    if isinstance(value, bool | int | float | complex | np.generic):
        return (type(value), value)
    iface = getattr(value, "__cuda_array_interface__", None)
    if iface is not None:
        return (
            "array",
            iface["data"][0],
            tuple(iface["shape"]),
            iface.get("strides"),
            iface["typestr"],
        )
    struct = getattr(value, "__cuda_struct__", None)
    if struct is not None:
        return ("struct", struct())
    if isinstance(value, list | tuple):
        return tuple(_state_of(v) for v in value)
    return ("object", id(value))


class CudaStructArguments(CudaArguments):
    """A struct as a Python class: a subclass sets ``struct_name`` and ``fields`` (as for
    :class:`CudaStruct`); its instances hold one attribute per field and pass as one by-value
    struct argument. The packed value is rebuilt whenever a field's state changes (a new
    array, a reallocated one, a new scalar), so fields may be properties following an owner's
    arrays. Copies and pickles rebuild their packed value from their own arrays."""

    struct_name: ClassVar[str | None] = None
    fields: ClassVar[Sequence[tuple[str, Any]] | None] = None
    struct: ClassVar[CudaStruct | None] = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        has_name = "struct_name" in cls.__dict__
        has_fields = "fields" in cls.__dict__
        if has_name != has_fields:
            raise InvalidArgumentTypeError(
                f"{cls.__name__} must define both struct_name and fields"
            )
        if has_name:
            cls.struct = CudaStruct(cls.struct_name, cls.fields)  # type: ignore[arg-type]

    def _field_values(self) -> dict[str, Any]:
        struct = type(self).struct
        if struct is None:
            raise InvalidArgumentTypeError(
                f"{type(self).__name__} does not define struct_name and fields"
            )
        out = {}
        for name in struct.field_names:
            try:
                out[name] = getattr(self, name)
            except AttributeError:
                raise AttributeError(
                    f"{type(self).__name__} has no attribute {name!r} for the field of "
                    f"struct {struct.name}"
                ) from None
        return out

    def pack(self) -> CudaStructValue:
        """Packs the current field values (always; ``packed`` repacks only on changes)."""
        values = self._field_values()
        value = type(self).struct(**values)  # type: ignore[misc]
        self.__dict__["_cunumpy_packed"] = (tuple(_state_of(v) for v in values.values()), value)
        return value

    @property
    def value(self) -> CudaStructValue:
        """The packed struct value, rebuilt when a field changed since the last packing."""
        cached = self.__dict__.get("_cunumpy_packed")
        if cached is not None:
            values = self._field_values()
            if cached[0] == tuple(_state_of(v) for v in values.values()):
                return cached[1]
        return self.pack()

    @property
    def packed(self) -> bytes:
        """The struct's bytes (repacked on a change)."""
        return self.value.packed

    def __cuda_args__(self) -> tuple[Any, ...]:
        """The packed struct as one kernel argument, a :class:`CudaStructRecord`:
        ``args.__cuda_args__()[0]["field"]`` reads the packed field (a pointer's address)."""
        return self.value.__cuda_args__()

    def __cuda_struct__(self) -> tuple[str, bytes]:
        return self.value.__cuda_struct__()

    def __repr__(self) -> str:
        # Never raises: a repr must work on a half-built object (in a traceback, a debugger).
        struct = type(self).struct
        if struct is None:
            return f"{type(self).__name__}(<no struct_name and fields>)"
        parts = []
        for name in struct.field_names:
            try:
                value = getattr(self, name)
            except Exception:
                parts.append(f"{name}=<unset>")
                continue
            shape = getattr(value, "shape", None)
            dtype = getattr(value, "dtype", None)
            if shape is not None and dtype is not None and len(shape) > 0:
                text = f"<{type(value).__name__} shape={tuple(shape)} dtype={dtype}>"
            else:
                text = repr(value)
            parts.append(f"{name}={text}")
        return f"{type(self).__name__}({', '.join(parts)})"

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state.pop("_cunumpy_packed", None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)  # repacked from its own fields at the next use
