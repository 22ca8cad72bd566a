"""MPI with NumPy or device arrays, and serial runs without MPI (``xp.mpi``).

``get_mpi()`` gives ``mpi4py.MPI`` when the process was started by an MPI launcher and the
serial stand-in ``SerialMPI`` otherwise (its ``COMM_WORLD`` has size 1), so one program runs
both ways. These names come from the ``maybempi`` package and are re-exported unchanged, so
user objects keep their types; ``MAYBEMPI=1``/``0`` (``OVERRIDE_VARIABLE``) overrides the
launcher detection::

    MPI = xp.mpi.get_mpi()
    comm = MPI.COMM_WORLD
    xp.mpi.mpi_is_cuda_aware(comm)          # once, on every rank
    with xp.mpi.mpi_buffer(rho, send=True, recv=True) as buf:
        comm.Allreduce(MPI.IN_PLACE, buf, op=MPI.SUM)

:func:`mpi_buffer` hands an array to MPI: a host array as it is; a device array as it is
(after its pending work is synchronized) when MPI is CUDA-aware, and otherwise through a
reused host staging buffer, each copy counted in the transfer ledger of this rank. mpi4py is
imported only by the functions that need it. Guide: ``docs/mpi.md``.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import operator
import sys
import time
from collections.abc import Generator, Iterable
from typing import Any

import maybempi
import numpy as np
from maybempi import (
    OVERRIDE_VARIABLE,
    SerialComm,
    SerialMPI,
    SerialRequest,
    SerialStatus,
    get_mpi,
    is_serial,
    launched_under_mpi,
    local_rank,
)

from . import _backend
from ._conversions import is_cupy_array
from ._ledger import record, recorded_by_caller
from ._mpi_staging import POOL, HostBuffer
from .exceptions import (
    InvalidArgumentError,
    InvalidArgumentTypeError,
    MPIBufferError,
    MPIStagingBusyError,
    MPIStagingError,
)

#: The documentation of names re-exported from maybempi that cannot carry a docstring.
__attribute_docs__ = {
    "OVERRIDE_VARIABLE": "The environment variable (``MAYBEMPI``) whose ``1``/``0`` overrides "
    "the detection of an MPI launcher by ``get_mpi()``.",
}

__all__ = [
    "OVERRIDE_VARIABLE",
    "MPIStaging",
    "SerialComm",
    "SerialMPI",
    "SerialRequest",
    "SerialStatus",
    "exchange",
    "get_mpi",
    "get_mpi_cuda_aware",
    "is_serial",
    "launched_under_mpi",
    "local_rank",
    "mpi_buffer",
    "mpi_is_cuda_aware",
    "require_cuda_aware_mpi",
    "set_mpi_cuda_aware",
    "staging_pool_info",
    "synchronize_for_mpi",
]

_logger = logging.getLogger(__name__)

# What mpi_is_cuda_aware() found or set_mpi_cuda_aware() said; None until one of them ran.
_cuda_aware: bool | None = None


def _describe(a: Any) -> str:
    return f"{a.dtype} array of shape {tuple(a.shape)}"


def _count_serial_copy(kind: str, array: Any) -> None:
    """Counts the host/device copies that the serial stand-in's collectives make (the
    emulated device counts its own copies already)."""
    if not _emulated_device():
        record(kind, f"SerialComm receive ({kind.replace('_', ' ')})", int(array.nbytes))


maybempi.set_copy_hook(_count_serial_copy)


# -- synchronizing ---------------------------------------------------------------------------
def synchronize_for_mpi(*arrays: Any, stream: Any = None, event: Any = None) -> None:
    """Waits for the device work that writes ``arrays`` before MPI reads or writes them.

    Kernels run asynchronously and MPI knows nothing of CUDA streams: a device buffer still
    being written would be sent as it is. Call this before each MPI call that takes device
    buffers (:func:`mpi_buffer` does it for you). ``None`` and host arrays are ignored, so on
    NumPy it costs nothing. ``stream`` or ``event`` (at most one) narrows the wait to that
    producer; by default every device that owns one of the arrays is synchronized.

    Raises :class:`~cunumpy.exceptions.MPIBufferError` for a device array when MPI was found
    not CUDA-aware (:func:`mpi_is_cuda_aware`/:func:`set_mpi_cuda_aware`): such an MPI would
    read the device address as host memory; pass the array through :func:`mpi_buffer`.
    """
    if stream is not None and event is not None:
        raise InvalidArgumentError("synchronize_for_mpi: pass at most one of stream= and event=")
    devices = sorted({int(a.device.id) for a in arrays if is_cupy_array(a)})
    if not devices:
        return
    if _cuda_aware is False:
        raise MPIBufferError(
            "synchronize_for_mpi: a device array is about to go to an MPI that is not "
            "CUDA-aware (recorded by mpi_is_cuda_aware/set_mpi_cuda_aware); wrap the MPI call "
            "in `with xp.mpi.mpi_buffer(array, send=..., recv=...) as buf:` and pass `buf`, "
            "which stages it through host memory"
        )
    _synchronize(devices, stream, event, "synchronize_for_mpi()")


def _synchronize(devices: list[int], stream: Any, event: Any, what: str) -> None:
    record("sync", what)
    if event is not None:
        event.synchronize()
        return
    if stream is not None:
        stream.synchronize()
        return
    cupy = sys.modules["cupy"]
    for device in devices:
        cupy.cuda.Device(device).synchronize()


# -- CUDA-awareness --------------------------------------------------------------------------
def set_mpi_cuda_aware(value: bool | None) -> None:
    """Tells :func:`mpi_buffer` whether MPI takes device buffers (``None`` forgets it).

    :func:`mpi_is_cuda_aware` records its own answer; use this when the answer is known
    otherwise, or to force host staging (``False``) in a test."""
    global _cuda_aware
    _cuda_aware = None if value is None else bool(value)


def get_mpi_cuda_aware() -> bool | None:
    """What was recorded by :func:`mpi_is_cuda_aware` or :func:`set_mpi_cuda_aware`, or
    ``None`` if nothing was."""
    return _cuda_aware


def _device_buffers_in_use() -> bool:
    return _backend.get_backend() == "cupy" and _backend.cupy_available()


def _library_cuda_support() -> bool | None:
    """What the loaded MPI library says of its CUDA support (``MPIX_Query_cuda_support``, an
    extension of MPICH and Open MPI that mpi4py does not wrap), or ``None`` if it cannot say.
    Probing a library without CUDA support with a device pointer can crash it, so ask first."""
    try:
        with open("/proc/self/maps") as maps:
            paths = sorted({line.split()[-1] for line in maps if "/libmpi" in line})
    except OSError:
        return None
    for path in paths:
        try:
            query = getattr(ctypes.CDLL(path), "MPIX_Query_cuda_support", None)
        except OSError:
            continue
        if query is not None:
            query.restype = ctypes.c_int
            return bool(query())
    return None


def _emulated_device() -> bool:
    return bool(getattr(sys.modules.get("cupy"), "__cunumpy_fake__", False))


def mpi_is_cuda_aware(comm: Any = None, *, method: str = "probe") -> bool:
    """Finds out whether MPI can send and receive device buffers, and records the answer.

    Collective: every rank of ``comm`` (default ``get_mpi().COMM_WORLD``) calls it, and all
    get the same answer. On the NumPy backend, or without a working CuPy, the answer is
    ``False`` and MPI is not touched. Otherwise, unless the MPI library reports that it has no
    CUDA support (``MPIX_Query_cuda_support``; then the answer is ``False`` without sending a
    device pointer that could crash it), each rank sends a small device array to the next rank
    with ``Sendrecv``, checks what it received, and the ranks agree with
    ``allreduce(op=LAND)``; any exception counts as "no". On the emulated device arrays live
    in host memory, so any MPI takes them and the answer is ``True``. Only ``method="probe"``
    exists.
    """
    if method != "probe":
        raise InvalidArgumentError(f"mpi_is_cuda_aware: method must be 'probe', got {method!r}")
    if not _device_buffers_in_use():
        return False
    mpi = get_mpi()
    if comm is None:
        comm = mpi.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    ok = False
    # The emulated device's arrays are host memory: every MPI takes them, so only probe.
    if _emulated_device() or _library_cuda_support() is not False:
        cupy = sys.modules["cupy"]
        try:
            send = cupy.arange(4, dtype=cupy.float64) + rank
            recv = cupy.zeros(4, dtype=cupy.float64)
            cupy.cuda.get_current_stream().synchronize()
            comm.Sendrecv(send, (rank + 1) % size, recvbuf=recv, source=(rank - 1) % size)
            source = (rank - 1) % size
            got = recv.get()
            ok = bool(np.array_equal(got, np.arange(4, dtype=np.float64) + source))
        except Exception as exc:  # noqa: BLE001 - any failure means "not CUDA-aware"
            _logger.debug("CUDA-aware MPI probe failed on rank %d: %r", rank, exc)
    result = bool(comm.allreduce(ok, op=mpi.LAND))
    set_mpi_cuda_aware(result)
    return result


def require_cuda_aware_mpi(comm: Any = None) -> None:
    """Raises :class:`~cunumpy.exceptions.MPIBufferError` (a ``RuntimeError``) with what to do
    when device buffers cannot go to MPI directly. Collective, like :func:`mpi_is_cuda_aware`;
    returns at once on the NumPy backend or without a working CuPy."""
    if not _device_buffers_in_use():
        return
    if mpi_is_cuda_aware(comm):
        return
    raise MPIBufferError(
        "require_cuda_aware_mpi: this MPI library cannot take device (CuPy) buffers. Use a "
        "CUDA-aware build (Open MPI configured --with-cuda and a CUDA-enabled UCX, or MPICH "
        "with ch4:ucx on a CUDA-enabled UCX; on clusters load the site's CUDA-aware MPI module "
        "and rebuild mpi4py against it), or keep this MPI and pass every device buffer through "
        "`with xp.mpi.mpi_buffer(array, ...) as buf:`, which stages it through host memory"
    )


# -- staging ---------------------------------------------------------------------------------
def _shape_of(shape: int | tuple[int, ...]) -> tuple[int, ...]:
    if isinstance(shape, (int, np.integer)):
        return (operator.index(shape),)
    return tuple(operator.index(n) for n in shape)


class MPIStaging:
    """Host storage of its own for :func:`mpi_buffer` staging of one buffer at a time.

    Bound to one ``shape`` and ``dtype`` (and, at first use, one device); pinned when CuPy can
    pin. Make one per buffer in use at the same time (one for sending, one for receiving). Host
    arrays pass through :meth:`buffer` unchanged. Without an ``MPIStaging``, :func:`mpi_buffer`
    reuses buffers of a per-process pool instead (see :func:`staging_pool_info`).
    """

    def __init__(self, shape: int | tuple[int, ...], dtype: Any) -> None:
        self._shape = _shape_of(shape)
        if any(n < 0 for n in self._shape):
            raise MPIStagingError(f"MPIStaging: shape must be non-negative, got {self._shape}")
        self._dtype = np.dtype(dtype)
        if self._dtype.hasobject:
            raise InvalidArgumentTypeError("MPIStaging: an object dtype cannot be sent through MPI")
        self._host: HostBuffer | None = None
        self._device: int | None = None
        self._active = False

    @property
    def shape(self) -> tuple[int, ...]:
        """The fixed staging shape."""
        return self._shape

    @property
    def dtype(self) -> np.dtype:
        """The fixed staging dtype."""
        return self._dtype

    def buffer(self, array: Any, **kwargs: Any) -> Any:
        """``mpi_buffer(array, staging=self, **kwargs)``."""
        return mpi_buffer(array, staging=self, **kwargs)

    @contextlib.contextmanager
    def _lease(self, array: Any) -> Generator[np.ndarray, None, None]:
        if self._active:
            raise MPIStagingBusyError("MPIStaging: this buffer is already in use by mpi_buffer")
        if tuple(array.shape) != self._shape or np.dtype(array.dtype) != self._dtype:
            raise MPIStagingError(
                f"MPIStaging: bound to shape {self._shape} and dtype {self._dtype}, got an "
                f"array of shape {tuple(array.shape)} and dtype {array.dtype}"
            )
        device = int(array.device.id)
        if self._device is not None and device != self._device:
            raise MPIStagingError(
                f"MPIStaging: bound to device {self._device}, got an array on device {device}"
            )
        self._device = device
        if self._host is None:
            self._host = POOL.acquire(self._shape_nbytes(), device)  # owned, never released
        self._active = True
        try:
            yield self._host.view(self._shape, self._dtype)
        finally:
            self._active = False

    def _shape_nbytes(self) -> int:
        return int(np.prod(self._shape, dtype=np.int64)) * self._dtype.itemsize


@contextlib.contextmanager
def _pool_lease(array: Any) -> Generator[np.ndarray, None, None]:
    dtype = np.dtype(array.dtype)
    buffer = POOL.acquire(int(array.nbytes), int(array.device.id))
    try:
        yield buffer.view(tuple(array.shape), dtype)
    finally:
        POOL.release(buffer)


def staging_pool_info() -> dict[str, Any]:
    """This process's staging pool: ``allocations``, ``reuses``, ``allocated_bytes``,
    ``free_buffers`` and ``copy_seconds`` (wall time of the staging copies) (a cunumpy
    addition)."""
    return POOL.info()


@contextlib.contextmanager
def mpi_buffer(
    array: Any,
    *,
    send: bool = True,
    recv: bool = False,
    cuda_aware: bool | None = None,
    staging: MPIStaging | None = None,
    stream: Any = None,
    event: Any = None,
) -> Generator[Any, None, None]:
    """Yields what to hand to MPI for ``array``: the array itself, or a host copy.

    - A host array is yielded unchanged.
    - A device array, MPI CUDA-aware: yielded unchanged after :func:`synchronize_for_mpi`
      (``stream``/``event`` narrow the wait).
    - A device array, MPI not CUDA-aware: copied into a host staging buffer before the block
      when ``send`` (MPI reads it), and back into the array after it when ``recv`` (MPI writes
      it); the copy back has finished when the block ends. The buffer is ``staging``'s or one
      reused from this process's pool; each copy is one ``to_host``/``to_device`` event in
      the transfer ledger (``xp.profiling.count_transfers``).

    ``cuda_aware=None`` uses the recorded answer (:func:`mpi_is_cuda_aware`,
    :func:`set_mpi_cuda_aware`); when nothing is recorded a device array raises
    :class:`~cunumpy.exceptions.MPIBufferError` saying what to call. With nonblocking MPI,
    wait for the request inside the block.
    """
    if not is_cupy_array(array):
        yield array
        return
    if cuda_aware is None:
        cuda_aware = _cuda_aware
    if cuda_aware is None:
        raise MPIBufferError(
            f"mpi_buffer: a device {_describe(array)}, and it is not known whether MPI takes "
            "device buffers; call xp.mpi.mpi_is_cuda_aware(comm) once at startup on every "
            "rank, or xp.mpi.set_mpi_cuda_aware(True/False), or pass cuda_aware="
        )
    devices = [int(array.device.id)]
    if cuda_aware:
        _synchronize(devices, stream, event, "mpi_buffer(): device work before MPI")
        yield array
        return
    cupy = sys.modules["cupy"]
    lease = staging._lease(array) if staging is not None else _pool_lease(array)
    with cupy.cuda.Device(devices[0]), lease as host:
        # Receive-only buffers too: a kernel may still be writing the array.
        _synchronize(devices, stream, event, "mpi_buffer(): device work before staging")
        start = time.perf_counter()
        contiguous = array.flags.c_contiguous
        # recorded_by_caller: the emulated device would count these copies a second time.
        with recorded_by_caller():
            packed = array if contiguous else cupy.ascontiguousarray(array)
            if send:
                packed.get(out=host)
        if not contiguous:
            record(
                "device_copy",
                f"mpi_buffer: packing a strided {_describe(array)}",
                int(array.nbytes),
            )
        if send:
            record(
                "to_host",
                f"mpi_buffer: staging a {_describe(array)} for MPI to send",
                int(array.nbytes),
            )
        POOL.add_copy_time(time.perf_counter() - start)
        yield host
        if recv:
            start = time.perf_counter()
            with recorded_by_caller():
                packed.set(host)
                if not contiguous:
                    array[...] = packed
                # The host buffer goes back to the pool (or the next block) after this.
                cupy.cuda.get_current_stream().synchronize()
            record(
                "to_device",
                f"mpi_buffer: a {_describe(array)} received from MPI",
                int(array.nbytes),
            )
            if not contiguous:
                record(
                    "device_copy",
                    f"mpi_buffer: unpacking into a strided {_describe(array)}",
                    int(array.nbytes),
                )
            POOL.add_copy_time(time.perf_counter() - start)


# -- exchanges -------------------------------------------------------------------------------
def exchange(
    comm: Any,
    *,
    sends: Iterable[tuple[Any, int, int]] = (),
    receives: Iterable[tuple[Any, int, int]] = (),
    cuda_aware: bool | None = None,
) -> None:
    """Posts every receive and send (``(array, rank, tag)`` triples) and waits for all.

    Each array goes through :func:`mpi_buffer` (staged when MPI is not CUDA-aware); on return
    received data is in place, device arrays included. All buffers are prepared before any
    request is posted, so preparation errors propagate normally; once posting has started, a
    failure calls ``comm.Abort(1)``, because outstanding requests may still use the buffers.
    Receive buffers must not overlap each other or the send buffers.
    """
    with contextlib.ExitStack() as buffers:
        posted_receives = [
            (
                buffers.enter_context(mpi_buffer(a, send=False, recv=True, cuda_aware=cuda_aware)),
                source,
                tag,
            )
            for a, source, tag in receives
        ]
        posted_sends = [
            (buffers.enter_context(mpi_buffer(a, cuda_aware=cuda_aware)), dest, tag)
            for a, dest, tag in sends
        ]
        requests = []
        try:
            for buf, source, tag in posted_receives:
                requests.append(comm.Irecv(buf, source=source, tag=tag))
            for buf, dest, tag in posted_sends:
                requests.append(comm.Isend(buf, dest=dest, tag=tag))
            for request in requests:
                request.Wait()
        except BaseException:
            comm.Abort(1)
            raise
