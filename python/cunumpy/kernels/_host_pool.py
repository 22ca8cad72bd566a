"""The host memory pool that large results of fused CPU calls are allocated from."""

from __future__ import annotations

from .. import _core


def host_memory_pool() -> _core.HostMemoryPool:
    """The process-wide pool of host memory for the results of fused NumPy-backend calls.

    A fused call on NumPy arrays whose result is at least 1 MiB
    (``cunumpy._core.HOST_POOL_MIN_BYTES``) writes it into a buffer of this pool rather than
    a fresh ``numpy.empty`` array. When the last array using the buffer dies, the buffer
    goes back to the pool and the next call of that size reuses it, so its pages are
    already mapped: fresh large allocations page-fault and are zeroed by the kernel on every
    call. The result is an ordinary C-contiguous, writable ``numpy.ndarray`` whose ``base``
    is the buffer's owner (a ``cunumpy._core.PooledHostBuffer``).

    The methods follow CuPy's ``MemoryPool`` (bytes are counted in 64 KiB size classes):

    - ``used_bytes()``: bytes in buffers held by live arrays;
    - ``free_bytes()``: bytes in idle buffers kept for reuse; ``total_bytes()``: both;
    - ``n_free_blocks()``: how many idle buffers are kept;
    - ``free_all_blocks()``: frees the idle buffers;
    - ``set_limit(size)`` / ``get_limit()``: the most idle bytes kept (default 1 GiB, or
      ``CUNUMPY_HOST_POOL_LIMIT`` in bytes when set at the first use); above it the oldest
      idle buffers are freed, and ``set_limit(0)`` keeps nothing.

    >>> from cunumpy.kernels import host_memory_pool
    >>> pool = host_memory_pool()
    >>> pool.free_all_blocks()
    >>> pool.free_bytes()
    0
    """
    return _core.host_memory_pool()
