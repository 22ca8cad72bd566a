"""Streams, events, HostStaging, to_host_async and DeviceMirror.to_host(stream=/event=) on a
real GPU: values, ordering against later kernels on other streams, and the ledger counts."""

from __future__ import annotations

import numpy as np
import pytest

import cunumpy as xp
from cunumpy.memory import DeviceMirror, HostStaging

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def cp():
    import cupy

    return cupy


def test_streams_events_are_cupy_and_order_work(cp):
    with xp.use_backend("cupy", strict=True):
        producer, consumer = xp.cuda.create_stream(), xp.cuda.create_stream()
        assert isinstance(producer, cp.cuda.Stream)
        a = cp.zeros(1 << 22)
        with producer:
            for _ in range(20):
                a += 1.0
        event = xp.cuda.record_event(stream=producer)
        xp.cuda.wait_event(event, stream=consumer)
        with xp.cuda.stream(consumer):
            b = a * 2.0
        consumer.synchronize()
        assert float(b[0]) == 40.0 and float(b[-1]) == 40.0
        pinned = xp.cuda.pin_memory(np.arange(5.0))
        np.testing.assert_array_equal(pinned, np.arange(5.0))


def test_host_staging_snapshots_before_later_kernels(cp):
    with xp.use_backend("cupy", strict=True):
        n = 1 << 22
        staging = HostStaging(n, np.float64, buffers=2)
        a = cp.zeros(n)
        copies = []
        with xp.profiling.count_transfers() as counter:
            for _ in range(5):
                a += 1.0
                copies.append(staging.copy(a))
            a += 100.0  # must not leak into the staged values
            last = copies[-1].result()
        assert last[0] == 5.0 and last[-1] == 5.0
        np.testing.assert_array_equal(copies[-2].result(), np.full(n, 4.0))
        assert counter.to_host == 5 and counter.bytes_to_host == 5 * n * 8
        assert all(not e.blocking for e in counter.events if e.kind == "to_host")
        with pytest.raises(RuntimeError, match="reused"):
            copies[0].result()
        producer = xp.cuda.create_stream()
        with producer:
            a.fill(7.0)
        np.testing.assert_array_equal(staging.copy(a, stream=producer).result(), np.full(n, 7.0))
        staging.synchronize()


def test_to_host_async_and_mirror_with_streams(cp):
    with xp.use_backend("cupy", strict=True):
        x = cp.ones(1 << 20)
        norm = cp.sum(x)
        with xp.profiling.count_transfers() as counter:
            pending = xp.to_host_async(norm)
            norm *= 3.0
        assert pending.result() == float(1 << 20)
        assert pending.ready()
        assert counter.to_host == 1 and not counter.events[0].blocking
        data = np.zeros(1 << 20)
        mirror = DeviceMirror(data)
        producer = xp.cuda.create_stream()
        with producer:
            mirror.device.fill(3.0)
        mirror.to_host(stream=producer)
        assert data[0] == 3.0 and data[-1] == 3.0
        with producer:
            mirror.device.fill(4.0)
        mirror.to_host(event=xp.cuda.record_event(stream=producer))
        assert data[0] == 4.0 and data[-1] == 4.0
