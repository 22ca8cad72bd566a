"""Headers for CUDA code from CudaStructs (write_cuda_header / to_header)."""

import tempfile
from pathlib import Path

from cunumpy.arguments import CudaStruct, write_cuda_header

P = CudaStruct("PushArgs", [("x", "double*"), ("v", "double*"), ("dt", "double"), ("n", "int")])
G = CudaStruct("GridArgs", [("rho", "Array1D<double>"), ("nx", "int")])
with tempfile.TemporaryDirectory() as tmp:
    path = Path(tmp) / "pusher_args.cuh"
    write_cuda_header(path, [P, G], includes=["my_helpers.cuh"])
    print(path.read_text(), end="")
print(P.to_header(), end="")
