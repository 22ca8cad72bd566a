"""``device_function_kernel``: a ``__global__`` wrapper around one ``__device__`` function, so
the function can be tested element by element like any kernel.

Only the prototype is split here (return type, name, parameter list); each parameter is then
classified by the same Rust signature parser that checks every ``CudaKernel``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from .. import _core
from ..cuda._source import struct_name
from ..exceptions import CudaSignatureError
from ..kernels._cuda_kernel import CudaKernel

__all__ = ["device_function_kernel", "device_function_source"]

# Specifiers that may precede the return type of a device function's prototype.
_SPECIFIERS = {
    "__device__",
    "__host__",
    "__forceinline__",
    "__noinline__",
    "inline",
    "static",
    "constexpr",
    "extern",
}
_PROTOTYPE = re.compile(r"^(?P<head>.*?)\b(?P<name>[A-Za-z_]\w*)\s*\((?P<params>.*)\)\s*$", re.S)
_PARAM_NAME = re.compile(r"(?P<type>.*?)\b(?P<name>[A-Za-z_]\w*)\s*$", re.S)
# The thread index in the generated kernel; a parameter of this name is refused.
_INDEX = "cunumpy_thread_index"
_PROBE = "cunumpy_device_function_probe"


def _error(function: str, what: str) -> CudaSignatureError:
    return CudaSignatureError(f"device_function_kernel({function!r}): {what}")


def _split_params(text: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "(<[":
            depth += 1
        elif ch in ")>]":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    parts = [p.strip() for p in parts]
    if parts == [""] or parts == ["void"]:
        return []
    return parts


class _Param:
    """One parameter of the device function: its declaration in the kernel and the argument
    the kernel passes to the function."""

    def __init__(self, name: str, kind: str, ctype: str, declaration: str) -> None:
        self.name = name
        self.kind = kind  # "pointer", "struct" or "scalar"
        self.ctype = ctype
        self.declaration = declaration

    @property
    def kernel_declaration(self) -> str:
        if self.kind == "scalar":
            return f"const {self.ctype}* {self.name}"
        return self.declaration

    @property
    def call_argument(self) -> str:
        return f"{self.name}[{_INDEX}]" if self.kind == "scalar" else self.name


def _parse(signature: str, struct_names: Sequence[str]) -> tuple[str, str, list[_Param]]:
    text = re.sub(r"//[^\n]*|/\*.*?\*/", " ", signature, flags=re.S).strip()
    text = text.rstrip(";").strip()
    if "{" in text:
        text = text[: text.index("{")].strip()
    match = _PROTOTYPE.match(text)
    if match is None:
        raise CudaSignatureError(
            f"device_function_kernel: cannot parse the prototype {signature!r} "
            "(expected '<return type> <name>(<parameters>)')"
        )
    function = match["name"]
    head = [w for w in match["head"].split() if w not in _SPECIFIERS]
    return_type = " ".join(head)
    if not return_type:
        raise _error(function, f"the prototype {signature!r} has no return type")
    if "*" in return_type or "&" in return_type:
        raise _error(
            function,
            f"returns {return_type!r}; only void or a scalar (one value per thread, written to "
            "the output array) can be wrapped, not a pointer or a reference",
        )
    bare_return = return_type.replace("const ", "").strip()
    if bare_return != "void" and _core.dtype_of_ctype(bare_return) is None:
        raise _error(
            function,
            f"returns {return_type!r}; only void or a scalar type with a NumPy dtype can be "
            "wrapped (write a struct result through a pointer parameter instead)",
        )

    declarations = []
    for i, raw in enumerate(_split_params(match["params"])):
        declaration = raw
        if "&" in raw:
            words = raw.replace("&", " ").split()
            base = [w for w in words[:-1] if w not in ("const", "volatile")] if words else []
            if len(base) != 1 or base[0] not in struct_names:
                raise _error(
                    function,
                    f"parameter {i} ({raw!r}) is a reference to a non-struct type; only struct "
                    f"types given in structs= ({', '.join(struct_names) or 'none'}) may be "
                    "passed by reference (a scalar is read per thread, an array is a pointer)",
                )
            declaration = f"{base[0]} {words[-1]}"  # passed to the kernel by value
        declarations.append(declaration)

    probe = f'extern "C" __global__ void {_PROBE}({", ".join(declarations)}) {{}}'
    try:
        parsed, _ = _core.parse_cuda_signature(probe, _PROBE, structs=list(struct_names))
    except CudaSignatureError as exc:
        message = str(exc).replace(f"kernel '{_PROBE}'", f"device function {function!r}")
        message = message.replace(f"'{_PROBE}'", repr(function))
        raise _error(function, f"cannot wrap the prototype {signature!r}: {message}") from None
    params = []
    for declaration, (pname, ctype, _dtype, is_pointer, struct, *_rest) in zip(
        declarations, parsed, strict=True
    ):
        kind = "pointer" if is_pointer else ("struct" if struct is not None else "scalar")
        params.append(_Param(pname, kind, ctype, declaration))
    return function, bare_return, params


def device_function_source(
    header_source: str,
    signature: str,
    *,
    name: str | None = None,
    includes: Sequence[str] = (),
    n_threads_param: str = "n",
    out_param: str = "out",
    structs: Sequence[Any] = (),
) -> tuple[str, str]:
    """The CUDA source and kernel name :func:`device_function_kernel` compiles (see there)."""
    struct_names = [struct_name(s) for s in structs]
    function, return_type, params = _parse(signature, struct_names)
    kernel_name = name or f"{function}_kernel"
    names = {p.name for p in params}
    reserved = [(n_threads_param, "n_threads_param")]
    if return_type != "void":
        reserved.append((out_param, "out_param"))
    for reserved_name, option in reserved:
        if reserved_name in names:
            raise _error(
                function,
                f"a parameter is named {reserved_name!r}, which the kernel uses for its "
                f"{'thread count' if option == 'n_threads_param' else 'output array'} "
                f"(pass {option}= another name)",
            )
    if return_type != "void" and out_param == n_threads_param:
        raise _error(function, f"out_param and n_threads_param are both {out_param!r}")
    if _INDEX in names:
        raise _error(function, f"a parameter is named {_INDEX!r}, which the kernel uses")

    declarations = [p.kernel_declaration for p in params]
    call = f"{function}({', '.join(p.call_argument for p in params)})"
    if return_type != "void":
        declarations.append(f"{return_type}* {out_param}")
        body = f"{out_param}[{_INDEX}] = {call};"
    else:
        body = f"{call};"
    declarations.append(f"int {n_threads_param}")
    lines = []
    for include in includes:
        include = include.strip()
        lines.append(f"#include {include}" if include[:1] in '<"' else f'#include "{include}"')
    lines += [
        header_source.rstrip(),
        "",
        f'extern "C" __global__ void {kernel_name}({", ".join(declarations)}) {{',
        f"    const long long {_INDEX} = (long long)blockIdx.x * blockDim.x + threadIdx.x;",
        f"    if ({_INDEX} >= {n_threads_param}) return;",
        f"    {body}",
        "}",
        "",
    ]
    return "\n".join(lines), kernel_name


def device_function_kernel(
    header_source: str,
    signature: str,
    *,
    name: str | None = None,
    includes: Sequence[str] = (),
    n_threads_param: str = "n",
    out_param: str = "out",
    **cudakernel_kw: Any,
) -> CudaKernel:
    """A :class:`~cunumpy.kernels.CudaKernel` that calls the ``__device__`` function
    ``signature`` (its prototype, e.g. ``"double lerp(double a, double b, double t)"``) once per
    thread; ``header_source`` defines it (or includes the header that does, see ``includes``).

    The generated ``extern "C" __global__ void <name or fn_kernel>(...)`` takes:

    - each pointer parameter unchanged, passed through to the function;
    - each struct parameter (by value or ``const&``; the types given in ``structs=``) by value;
    - each scalar ``T x`` as ``const T* x``; thread ``i`` passes ``x[i]``;
    - for a non-void result, ``R* out`` (``out_param``) receiving thread ``i``'s result at
      ``out[i]``;
    - last, ``int n`` (``n_threads_param``); threads with ``i >= n`` return.

    ``includes`` are header names added as ``#include`` lines before ``header_source`` (put their
    folder in ``include_dirs=``). Other keywords go to ``CudaKernel`` (``structs=``,
    ``block_size=``, ``options=``...); without ``n_threads=`` a launch runs one thread per
    element of the first array argument. Raises
    :class:`~cunumpy.exceptions.CudaSignatureError` (a ``ValueError``) for an unparsable
    prototype, a pointer or non-scalar return type, a reference to a non-struct type, or a
    parameter named like ``out``/``n``.
    """
    source, kernel_name = device_function_source(
        header_source,
        signature,
        name=name,
        includes=includes,
        n_threads_param=n_threads_param,
        out_param=out_param,
        structs=cudakernel_kw.get("structs", ()),
    )
    return CudaKernel(source, kernel_name, **cudakernel_kw)
