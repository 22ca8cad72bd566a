"""Writes ``tests/cpu/data/compat_0.7.1.json``: what cunumpy 0.7.1 gives for the cases of
``tests/cpu/test_compat_0_7.py`` (generated headers, struct fields, launch shapes, structs from
Pyccel classes). Run it with a Python that has cunumpy 0.7.1 installed:

    /path/to/venv-0.7.1/bin/python scripts/gen_compat_0_7_1.py > tests/cpu/data/compat_0.7.1.json
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import numpy as np

import cunumpy as xp
from cunumpy.arguments import CudaStruct, write_cuda_header
from cunumpy.kernels import CudaKernel

# The cases, shared with the test (which imports them from here).
STRUCTS = {
    "P": [("x", "double*"), ("n", "int"), ("charge", "double"), ("alive", "bool*")],
    "V": [("v", "Array2D<double>"), ("w", "CArray1D<float>"), ("k", "float"), ("p", "void*")],
    "C": [("n", "int"), ("c", "complex<double>"), ("ids", "long long*")],
}
HEADERS = {
    # name: (structs, guard, includes); "to_header" cases use one struct
    "pusher_args.cuh": (["P", "V"], None, ["my_complex.cuh"]),
    "plain.cuh": (["P"], None, []),
    "views.cuh": (["V"], "MY_GUARD", ["a.cuh", "sub/b.h"]),
}
TO_HEADER = {"P": (None, []), "V": (None, []), "C": ("C_ARGS", ["extra.cuh"])}
KERNEL = 'extern "C" __global__ void k(double* x, int n) {}'
LAUNCH_SHAPES = [
    # (block_size, n_threads, grid, block, args shapes)
    (128, 100, None, None, None),
    (128, [100, 3], None, None, None),
    (128, None, 5, None, None),
    (128, None, [2, 3], None, None),
    (128, None, None, None, [[300]]),
    (128, None, None, None, [[300, 2]]),
    (128, [100, 30], None, [16, 16], None),
    (128, None, [4], [16, 16], None),
    ([16, 8], None, None, None, [[300, 20]]),
    ([16, 8], [33, 9], None, None, None),
    (64, 0, None, None, None),
]
PYCCEL_SOURCE = '''
import numpy as np
from typing import Final


class MarkerArguments:
    """The arguments of the pushers."""

    def __init__(
        self,
        markers: "float[:, :]",
        n_markers: int,
        starts: "const int[:]",
        tn1: "float[:]",
        charge: float,
        valid: bool,
        weight: "float32",
        scratch: "float[:]",
    ):
        self.markers = markers
        self.n = n_markers
        self.starts = starts
        self.knots1 = tn1
        self.q = charge
        self.valid = valid
        self.weight = weight
        self.scratch = scratch
        self.tmp = np.zeros(3)
'''
PYCCEL_CASES = {
    "default": {},
    "parameter_names": {"attribute_names": False, "name": "MA"},
    "exclude_int": {"exclude": ["scratch"], "int_type": "int"},
    "contiguous": {"contiguous": ["markers", "knots1"]},
    "all_contiguous": {"contiguous": True, "exclude": ["n"]},
    "exclude_parameter_name": {"exclude": ["n_markers", "tn1"]},
}


def _fields(struct: CudaStruct) -> list[list[object]]:
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


def main() -> None:
    out: dict[str, object] = {"cunumpy": xp.__version__}
    structs = {name: CudaStruct(name, fields) for name, fields in STRUCTS.items()}
    out["fields"] = {name: _fields(s) for name, s in structs.items()}
    folder = Path(tempfile.mkdtemp())
    headers = {}
    for file, (names, guard, includes) in HEADERS.items():
        headers[file] = write_cuda_header(
            folder / file, [structs[n] for n in names], guard, includes=includes
        )
    out["write_cuda_header"] = headers
    out["to_header"] = {
        name: structs[name].to_header(guard=guard, includes=includes)
        for name, (guard, includes) in TO_HEADER.items()
    }
    shapes = []
    for block_size, n_threads, grid, block, arg_shapes in LAUNCH_SHAPES:
        kernel = CudaKernel(KERNEL, "k", block_size=block_size)
        args = None if arg_shapes is None else tuple(np.zeros(s) for s in arg_shapes)
        g, b = kernel.launch_shape(
            None
            if n_threads is None
            else (n_threads if isinstance(n_threads, int) else tuple(n_threads)),
            grid=None if grid is None else (grid if isinstance(grid, int) else tuple(grid)),
            block=None if block is None else tuple(block),
            args=args,
        )
        shapes.append([list(g), list(b)])
    out["launch_shape"] = shapes
    pyccel = {}
    for case, kwargs in PYCCEL_CASES.items():
        kwargs = dict(kwargs)
        name = kwargs.pop("name", None)
        try:
            s = CudaStruct.from_pyccel_class(PYCCEL_SOURCE, "MarkerArguments", name, **kwargs)
        except Exception as exc:
            pyccel[case] = {"error": type(exc).__name__}
            continue
        pyccel[case] = {"name": s.name, "declaration": s.declaration, "fields": _fields(s)}
    out["from_pyccel_class"] = pyccel
    json.dump(out, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
