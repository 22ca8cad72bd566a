"""A CudaStruct: its layout, fields and declaration."""

from cunumpy.arguments import CudaStruct

P = CudaStruct(
    "Particles",
    [("x", "double*"), ("n", "int"), ("charge", "double"), ("alive", "bool*"), ("w", "float")],
)
print(P.name, P.dtype.itemsize, [P.dtype.fields[f][1] for f in P.dtype.names])
print([(f.name, f.ctype, f.pointer) for f in P.fields])
print(P.declaration, end="")
print(P.has_views)
V = CudaStruct("Grid", [("rho", "Array2D<double>"), ("dx", "double")])
print(V.dtype.itemsize, V.has_views)
try:
    CudaStruct("Bad", [("a", "int"), ("a", "double")])
except ValueError:
    print("ValueError duplicate")
