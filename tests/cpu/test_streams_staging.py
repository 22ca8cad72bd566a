"""Streams, events, staged and async copies on NumPy and on the emulated device: the values,
the ordering rules a GPU program relies on, the errors, and the counts in the ledger (async
copies are ``to_host`` with ``blocking=False``)."""

from __future__ import annotations

import numpy as np
import pytest

import cunumpy as xp
from cunumpy.cuda import HostEvent, HostStream
from cunumpy.exceptions import StagingError, StagingTypeError
from cunumpy.memory import DeviceMirror, HostStaging


@pytest.fixture
def fake():
    from cunumpy.kernel_testing import install_fake_cupy, uninstall_fake_cupy

    cupy = install_fake_cupy()
    try:
        with xp.use_backend("cupy", strict=True):
            yield cupy
    finally:
        uninstall_fake_cupy()


def test_host_streams_and_events_on_numpy():
    s, e = xp.cuda.create_stream(), xp.cuda.create_event(timing=True)
    assert isinstance(s, HostStream) and isinstance(e, HostEvent)
    assert e.done and s.done
    with xp.cuda.stream(s) as selected:
        assert selected is s
        y = xp.ones(3) * 2
    assert xp.cuda.record_event(e, stream=s) is e
    xp.cuda.wait_event(xp.cuda.record_event(stream=s), stream=xp.cuda.create_stream())
    s.synchronize()
    np.testing.assert_array_equal(y, [2.0, 2.0, 2.0])
    with xp.cuda.stream() as none:
        assert none is None
    with pytest.raises(StagingTypeError, match="HostStream.wait_event: event must be a HostEvent"):
        s.wait_event(object())
    with pytest.raises(StagingTypeError, match="HostEvent.record: stream must be a HostStream"):
        e.record(object())


def test_cuda_streams_on_the_emulated_device(fake):
    s = xp.cuda.create_stream()
    assert isinstance(s, fake.cuda.Stream) and s.non_blocking
    e = xp.cuda.record_event(stream=s)
    assert isinstance(e, fake.cuda.Event) and e.done
    xp.cuda.wait_event(e, stream=xp.cuda.create_stream())
    with pytest.raises(StagingTypeError, match="record_event: stream is a HostStream"):
        xp.cuda.record_event(stream=HostStream())
    with pytest.raises(StagingTypeError, match="wait_event: event is a HostEvent"):
        xp.cuda.wait_event(HostEvent())
    with pytest.raises(StagingTypeError, match="cuda.stream: existing is a HostStream"):
        with xp.cuda.stream(HostStream()):
            pass
    pinned = xp.cuda.pin_memory(np.arange(4.0))
    np.testing.assert_array_equal(pinned, [0.0, 1.0, 2.0, 3.0])
    with pytest.raises(StagingTypeError, match="pin_memory: array is on the device"):
        xp.cuda.pin_memory(fake.zeros(2))


def test_host_staging_on_numpy_copies_at_once_and_detects_reuse():
    staging = HostStaging((2, 3), np.float64, buffers=2)
    assert (staging.shape, staging.dtype, staging.buffers) == ((2, 3), np.float64, 2)
    with xp.profiling.count_transfers() as counter:
        first = staging.copy(np.ones((2, 3)))
        second = staging.copy(np.full((2, 3), 2.0))
    assert counter.total == 0  # host to host: no transfer
    assert first.ready() and second.ready()
    np.testing.assert_array_equal(first.result(), np.ones((2, 3)))
    staging.copy(np.zeros((2, 3)))  # reuses the first buffer
    with pytest.raises(StagingError, match="reused by a later copy"):
        first.result()
    with pytest.raises(StagingError, match="reused"):
        first.ready()
    np.testing.assert_array_equal(second.result(), np.full((2, 3), 2.0))
    with pytest.raises(ValueError, match=r"expected shape \(2, 3\) and dtype float64"):
        staging.copy(np.ones((3, 2)))
    with pytest.raises(ValueError, match="buffers must be an int >= 1"):
        HostStaging(3, np.float64, buffers=0)
    with pytest.raises(TypeError, match="holds Python objects"):
        HostStaging(3, object)


def test_host_staging_on_the_emulated_device_snapshots_and_counts(fake):
    staging = HostStaging(4, np.float64)
    a = fake.arange(4.0)
    with xp.profiling.count_transfers() as counter:
        copy = staging.copy(a, stream=xp.cuda.create_stream())
        a += 10.0  # later work does not change the staged value: the copy read a snapshot
        value = copy.result()
    np.testing.assert_array_equal(value, [0.0, 1.0, 2.0, 3.0])
    assert isinstance(value, np.ndarray)
    assert counter.to_host == 1 and counter.bytes_to_host == 32
    assert [e.blocking for e in counter.events if e.kind == "to_host"] == [False]
    with pytest.raises(ValueError, match="at most one of stream and event"):
        staging.copy(a, stream=xp.cuda.create_stream(), event=xp.cuda.create_event())
    with pytest.raises(StagingTypeError, match="stream is a HostStream"):
        staging.copy(a, stream=HostStream())
    staging.synchronize()


def test_to_host_async(fake):
    pending = xp.to_host_async(np.float64(3.5))
    assert pending.ready() and pending.result() == 3.5
    residual = fake.asarray(2.25)
    with xp.profiling.count_transfers() as counter:
        pending = xp.to_host_async(residual)
        residual *= 4.0  # the copy already holds the value of the queued work
    assert pending.ready()
    assert pending.result() == 2.25 and isinstance(pending.result(), np.float64)
    assert counter.to_host == 1 and counter.events[0].blocking is False
    array = xp.to_host_async(fake.ones(3)).result()
    assert isinstance(array, np.ndarray) and array.tolist() == [1.0, 1.0, 1.0]


def test_device_mirror_to_host_with_stream_or_event(fake):
    data = np.zeros(3)
    mirror = DeviceMirror(data)
    mirror.device[...] = fake.asarray([1.0, 2.0, 3.0])
    producer = xp.cuda.create_stream()
    with xp.profiling.count_transfers() as counter:
        assert mirror.to_host(stream=producer).host is data
        mirror.to_host(event=xp.cuda.record_event(stream=producer))
    assert counter.to_host == 2
    np.testing.assert_array_equal(data, [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="at most one of stream and event"):
        mirror.to_host(stream=producer, event=xp.cuda.create_event())
    with pytest.raises(StagingTypeError, match="event is a HostEvent"):
        mirror.to_host(event=HostEvent())


def test_device_mirror_to_host_keywords_on_numpy():
    data = np.ones(2)
    mirror = DeviceMirror(data)
    assert mirror.to_host(stream=HostStream()) is mirror  # a no-op on NumPy
