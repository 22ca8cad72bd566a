"""The packed value of a struct (:class:`cunumpy.arguments.CudaStructValue`, defined here, below
both :mod:`cunumpy.arguments` and the emulated launches that pass it on as it is)."""

from __future__ import annotations

from typing import Any


class CudaStructValue:
    """A packed value of a :class:`~cunumpy.arguments.CudaStruct`. Keeps the arrays it points
    at alive (``values``) for as long as it lives. Kernels read ``__cuda_struct__()``."""

    __slots__ = ("struct", "packed", "values")

    def __init__(self, struct: Any, packed: bytes, values: dict[str, Any]) -> None:
        self.struct = struct
        self.packed = packed
        self.values = values

    def __cuda_struct__(self) -> tuple[str, bytes]:
        """``(struct name, packed bytes)``: how kernels take the value."""
        return self.struct.name, self.packed

    def __cuda_args__(self) -> tuple[Any, ...]:
        """The value itself, as one kernel argument."""
        return (self,)

    def __getitem__(self, field: str) -> Any:
        return self.values[field]

    def __bytes__(self) -> bytes:
        return self.packed

    def __repr__(self) -> str:
        return f"<{self.struct.name} value, {len(self.packed)} bytes>"


CudaStructValue.__module__ = "cunumpy.arguments"  # its public home
