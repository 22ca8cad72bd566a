"""The packed value of a struct (:class:`cunumpy.arguments.CudaStructValue`, defined here, below
both :mod:`cunumpy.arguments` and the emulated launches that pass it on as it is)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .exceptions import CudaStructError


class CudaStructValue:
    """A packed value of a :class:`~cunumpy.arguments.CudaStruct`. Keeps the arrays it points
    at alive (``values``) for as long as it lives. Kernels read ``__cuda_struct__()``."""

    __slots__ = ("struct", "packed", "values", "_record")

    def __init__(self, struct: Any, packed: bytes, values: dict[str, Any]) -> None:
        self.struct = struct
        self.packed = packed
        self.values = values
        self._record: CudaStructRecord | None = None

    def __cuda_struct__(self) -> tuple[str, bytes]:
        """``(struct name, packed bytes)``: how kernels take the value."""
        return self.struct.name, self.packed

    def __cuda_args__(self) -> tuple[Any, ...]:
        """The packed value as one kernel argument: a :class:`CudaStructRecord` (one per value,
        so an unchanged ``CudaStructArguments`` passes the same object each launch)."""
        if self._record is None:
            self._record = CudaStructRecord(self)
        return (self._record,)

    def __getitem__(self, field: str) -> Any:
        return self.values[field]

    def __bytes__(self) -> bytes:
        return self.packed

    def __repr__(self) -> str:
        return f"<{self.struct.name} value, {len(self.packed)} bytes>"


class CudaStructRecord:
    """The packed bytes of a struct value as one kernel argument, read as a NumPy record of the
    struct's ``dtype`` (cunumpy 0.7 passed a ``numpy.void`` here, and programs read it):
    ``record["n"]`` is the scalar, a pointer field is the device address, an array-view field
    a record with ``data``, ``shape`` and ``strides``. It keeps the value, and so the arrays it
    points at, alive."""

    __slots__ = ("value",)

    def __init__(self, value: CudaStructValue) -> None:
        self.value = value

    @property
    def dtype(self) -> np.dtype:
        """The struct's NumPy dtype (its fields at their device offsets)."""
        return self.value.struct.dtype

    def item(self) -> np.void:
        """The packed bytes as a ``numpy.void`` record (a copy)."""
        return np.frombuffer(self.value.packed, dtype=self.dtype)[0].copy()

    def __getitem__(self, field: str) -> Any:
        names = self.dtype.names or ()
        if field not in names:
            raise CudaStructError(
                f"struct {self.value.struct.name} has no field {field!r}; its fields are "
                f"{list(names)}"
            )
        return self.item()[field]

    def __cuda_struct__(self) -> tuple[str, bytes]:
        return self.value.__cuda_struct__()

    def tobytes(self) -> bytes:
        """The packed bytes, as the kernel receives them."""
        return self.value.packed

    __bytes__ = tobytes

    def __eq__(self, other: object) -> bool:
        if isinstance(other, CudaStructRecord):
            return self.value.packed == other.value.packed
        if isinstance(other, np.void):
            return self.value.packed == other.tobytes()
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.value.packed)

    def __repr__(self) -> str:
        return f"<{self.value.struct.name} record {self.item()!r}>"


CudaStructValue.__module__ = "cunumpy.arguments"  # its public home
CudaStructRecord.__module__ = "cunumpy.arguments"
