"""One GPU per MPI rank: picking this process's device from its rank.

Both functions read the launcher's environment (through ``maybempi``), so they work before
``MPI_Init``, which is when a CUDA-aware MPI wants the device chosen. Ranks sharing a device
stay allowed (several ranks per GPU is a valid way to fill a big GPU) but are reported once.
"""

from __future__ import annotations

import os
import warnings

import maybempi

from .. import _backend
from ..exceptions import DeviceSelectionError, SharedDeviceWarning

__all__ = ["bind_local_device", "set_device_for_rank", "local_size"]

# The number of ranks on this node, as launchers export it before MPI_Init (the same
# launchers whose local-rank variables maybempi reads).
LOCAL_SIZE_VARIABLES: tuple[str, ...] = (
    "OMPI_COMM_WORLD_LOCAL_SIZE",  # Open MPI
    "MPI_LOCALNRANKS",  # MPICH and Intel MPI (Hydra)
    "MV2_COMM_WORLD_LOCAL_SIZE",  # MVAPICH2
    "PMI_LOCAL_SIZE",  # PMI
    "PALS_LOCAL_SIZE",  # Cray PALS
    "LOCAL_WORLD_SIZE",  # torchrun
)


def local_size() -> int | None:
    """The number of ranks on this node from the launcher's environment, or ``None`` when no
    known launcher variable is set (then sharing cannot be detected)."""
    for variable in LOCAL_SIZE_VARIABLES:
        value = os.environ.get(variable)
        if value is None:
            continue
        try:
            size = int(value)
        except ValueError:
            continue
        if size > 0:
            return size
    return None


def _device_count() -> int:
    from . import device_count

    return device_count()


def _use(device_id: int) -> None:
    import cupy

    cupy.cuda.Device(device_id).use()
    cupy.cuda.Stream.null.synchronize()  # creates the CUDA context now, before MPI_Init


def _warn_shared(sharing: list[int], this: int, device_id: int, kind: str, stacklevel: int) -> None:
    # One line per shared device: only the lowest rank of the group speaks.
    if len(sharing) > 1 and this == sharing[0]:
        names = ", ".join(str(r) for r in sharing)
        warnings.warn(
            f"{kind} {names} share CUDA device {device_id} (more ranks than devices on this "
            "node); pass warn_shared=False to silence this",
            SharedDeviceWarning,
            stacklevel=stacklevel,
        )


def bind_local_device(*, warn_shared: bool = True) -> int | None:
    """Binds this process to device ``local_rank() % device_count()`` of its node.

    Call it before ``MPI_Init`` (before importing ``mpi4py.MPI``, or before
    ``xp.mpi.get_mpi()`` under a launcher) so that a CUDA-aware MPI sees the right device; it
    also creates the CUDA context. Needs no MPI rank: the node-local rank comes from the
    launcher's environment (``xp.mpi.local_rank()``), 0 for a serial run.

    When a node runs more ranks than it has devices, several ranks share one; that stays
    allowed, and the lowest of them issues one
    :class:`~cunumpy.exceptions.SharedDeviceWarning` naming the local ranks and the device
    (``warn_shared=False`` silences it). Sharing is detected only when the launcher exports
    the node's rank count (Open MPI, MPICH/Hydra, MVAPICH2, PMI, PALS, torchrun).

    Returns the selected device id, or ``None`` on the NumPy backend or without devices.
    """
    if _backend.get_backend() != "cupy":
        return None
    count = _device_count()
    if count == 0:
        return None
    rank = maybempi.local_rank()
    device_id = rank % count
    _use(device_id)
    size = local_size()
    if warn_shared and size is not None:
        sharing = [r for r in range(size) if r % count == device_id]
        _warn_shared(sharing, rank, device_id, "local ranks", stacklevel=3)
    return device_id


def set_device_for_rank(
    rank: int, devices_per_node: int | None = None, *, warn_shared: bool = True
) -> int:
    """Selects device ``rank % devices_per_node`` for MPI rank ``rank`` and returns its id.

    For one-rank-per-GPU codes whose ranks fill each node in contiguous blocks; otherwise use
    :func:`bind_local_device`. ``devices_per_node`` defaults to :func:`device_count`. On the
    NumPy backend the id is returned and nothing is selected; when the number of devices is
    0 the answer is 0, nothing selected.

    Ranks of this node that land on the same device are reported once, as in
    :func:`bind_local_device` (``warn_shared=False`` silences it).
    """
    if not isinstance(rank, int) or isinstance(rank, bool) or rank < 0:
        raise DeviceSelectionError(f"set_device_for_rank: rank is a non-negative int, got {rank!r}")
    if devices_per_node is not None and (
        not isinstance(devices_per_node, int)
        or isinstance(devices_per_node, bool)
        or devices_per_node < 0
    ):
        raise DeviceSelectionError(
            "set_device_for_rank: devices_per_node is a non-negative int or None, got "
            f"{devices_per_node!r}"
        )
    count = devices_per_node if devices_per_node is not None else _device_count()
    if count == 0:
        return 0
    device_id = rank % count
    if _backend.get_backend() != "cupy":
        return device_id
    from . import set_device

    set_device(device_id)
    size = local_size()
    if warn_shared and size is not None:
        # Contiguous blocks of `size` ranks per node: this node holds ranks first..first+size-1.
        first = rank - maybempi.local_rank()
        sharing = [r for r in range(first, first + size) if r % count == device_id]
        _warn_shared(sharing, rank, device_id, "ranks", stacklevel=3)
    return device_id
