"""Source tools for CUDA C: signature parsing, kernel names, the type map, includes."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from .. import _core

#: The compiler options a debug build adds (``debug=True``, ``CUNUMPY_CUDA_DEBUG=1``).
DEBUG_OPTIONS: tuple[str, ...] = ("-lineinfo", "-DCUNUMPY_BOUNDS_CHECK")


class CudaParameter(NamedTuple):
    """One parameter of a ``__global__`` function, as the argument checks see it."""

    name: str
    ctype: str
    dtype: np.dtype | None
    pointer: bool
    struct: Any = None
    view_ndim: int | None = None
    contiguous: bool = False
    declaration: str = ""


def parse_cuda_signature(
    source: str,
    name: str,
    *,
    structs: Any = (),
    template_args: Any = None,
) -> list[CudaParameter]:
    """The parameters of ``__global__`` function ``name`` in ``source``.

    ``structs`` are struct types (or their names) the kernel takes by value; ``template_args``
    fill the template parameters (types, dtypes, ints, bools, or C++ text). Raises
    :class:`~cunumpy.exceptions.CudaSignatureError` naming the kernel and the parameter when
    a parameter cannot be checked (references, pointers to pointers, vector types, macros,
    unknown types).
    """
    params, _expression = _core.parse_cuda_signature(
        source,
        name,
        structs=[struct_name(s) for s in structs],
        template_args=template_arg_texts(template_args),
    )
    return parameters_of(params, structs)


def parameters_of(params: Any, structs: Any = ()) -> list[CudaParameter]:
    """``CudaParameter`` values from the field tuples the Rust parser gives. A struct
    parameter's ``struct`` is the struct object given in ``structs`` (a ``CudaStruct``) and its
    ``dtype`` that struct's dtype, as in cunumpy 0.7; a struct known only by name keeps the
    name."""
    by_name = {struct_name(s): s for s in structs if not isinstance(s, str)}
    out = []
    for n, ctype, dt, ptr, st, nd, contiguous, decl in params:
        dtype = None if dt is None else np.dtype(dt)
        struct = by_name.get(st, st) if st is not None else None
        if struct is not None and not isinstance(struct, str) and not ptr:
            dtype = getattr(struct, "dtype", dtype)
        out.append(CudaParameter(n, ctype, dtype, ptr, struct, nd, contiguous, decl))
    return out


def cuda_kernel_names(source: str) -> list[str]:
    """The ``__global__`` function names of ``source``, in order, without duplicates."""
    return _core.cuda_kernel_names(source)


def ctype_of(dtype: Any) -> str:
    """The C type that matches a NumPy dtype (``float64`` -> ``double``)."""
    return _core.ctype_of(np.dtype(dtype).name)


def struct_name(struct: Any) -> str:
    return struct if isinstance(struct, str) else struct.name


#: The C++ type each Python type stands for as a template argument: ``float`` is C++ ``float``
#: (write ``np.float64`` or ``"double"`` for ``double``), as in C++ source.
PYTHON_TEMPLATE_TYPES: dict[type, str] = {float: "float", int: "int", bool: "bool"}


def template_arg_texts(template_args: Any) -> list[str] | None:
    """C++ text for each template argument: str as is, bool as true/false, int in decimal, the
    Python types ``float``, ``int``, ``bool`` as the C++ types of those names
    (:data:`PYTHON_TEMPLATE_TYPES`), a dtype (or NumPy type) as its C type (``np.float64`` ->
    ``double``, ``np.float32`` -> ``float``, ``np.int64`` -> ``long long``)."""
    if template_args is None:
        return None
    if isinstance(template_args, (str, bool, int, type)) or not hasattr(template_args, "__iter__"):
        template_args = (template_args,)
    texts = []
    for value in template_args:
        if isinstance(value, type) and value in PYTHON_TEMPLATE_TYPES:
            texts.append(PYTHON_TEMPLATE_TYPES[value])
        elif isinstance(value, bool):
            texts.append("true" if value else "false")
        elif isinstance(value, (int, np.integer)):
            texts.append(str(int(value)))
        elif isinstance(value, str):
            texts.append(value)
        else:
            texts.append(ctype_of(value))
    return texts


def cuda_include_dir() -> str:
    """The folder of the shipped headers (``#include <cunumpy/index.cuh>``)."""
    return str(Path(__file__).resolve().parent.parent / "include")


def resolve_includes(
    source: str,
    include_dirs: Any = (),
    *,
    base_dir: Any = None,
    angle_dirs: Any = (),
) -> list[Path]:
    """Every header ``source`` includes (recursively) that exists on disk."""
    found = _core.resolve_includes(
        source,
        [os.fspath(d) for d in include_dirs],
        base_dir=None if base_dir is None else os.fspath(base_dir),
        angle_dirs=[os.fspath(d) for d in angle_dirs],
    )
    return [Path(p) for p in found]


def include_hash(paths: Any) -> str:
    """16 hex digits over the length and content of each header, in order."""
    return _core.include_hash([os.fspath(p) for p in paths])
