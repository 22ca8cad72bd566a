import inspect
import threading

import pytest

import cunumpy as xp
from cunumpy import _ledger
from cunumpy.profiling import TransferEvent, assert_no_transfers, count_transfers


def test_counter_counts_kinds_bytes_and_reports_sites():
    with count_transfers() as counter:
        line = inspect.currentframe().f_lineno + 1
        _ledger.record("to_device", "upload x", 800)
        _ledger.record("to_host", "download y", 16, blocking=False)
        _ledger.record("sync", "wait")
    assert counter.to_device == 1 and counter.to_host == 1 and counter.syncs == 1
    assert counter.total == 2
    assert counter.bytes_to_device == 800 and counter.bytes_to_host == 16
    events = counter.events
    assert [e.kind for e in events] == ["to_device", "to_host", "sync"]
    assert events[0].where == f"{__file__}:{line}"
    assert events[1].label == "download y [async]"
    report = counter.report()
    assert report.startswith("2 transfer(s) through cunumpy (1 to_host, 1 to_device,")
    assert "upload x" in report
    assert repr(counter).startswith("TransferCounter(to_host=1, to_device=1,")


def test_nothing_recorded_outside_a_counter():
    _ledger.record("to_host", "unseen", 8)
    with count_transfers() as counter:
        pass
    assert counter.events == []


def test_counters_nest_and_decorator_form_works():
    calls = []

    @count_transfers()
    def step():
        _ledger.record("fallback", "host kernel")
        calls.append(1)

    with count_transfers() as outer:
        with count_transfers() as inner:
            _ledger.record("to_host", "a", 1)
        _ledger.record("to_host", "b", 2)
        step()
    assert inner.to_host == 1
    assert outer.to_host == 2 and outer.fallbacks == 1
    assert calls == [1]


def test_reentering_the_same_counter_does_not_double_count():
    with count_transfers() as counter:
        with count_transfers(into=counter):
            _ledger.record("to_host", "once", 4)
    assert counter.to_host == 1


def test_assert_no_transfers_raises_with_the_report():
    with pytest.raises(AssertionError, match="must not transfer:\n1 transfer"):
        with assert_no_transfers():
            _ledger.record("to_device", "sneaky copy", 8)
    with assert_no_transfers():
        _ledger.record("sync", "allowed by default")
        _ledger.record("device_copy", "always allowed", 8)
    with pytest.raises(AssertionError):
        with assert_no_transfers(syncs=True):
            _ledger.record("sync", "not allowed now")


def test_eight_threads_each_see_exactly_their_own_events():
    results: dict[int, list[TransferEvent]] = {}
    barrier = threading.Barrier(8)

    def work(i: int) -> None:
        with count_transfers() as counter:
            barrier.wait()  # all counters open at once
            for j in range(i + 1):
                _ledger.record("to_device", f"thread {i} copy {j}", 100 + i)
            barrier.wait()
        results[i] = counter.events

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i in range(8):
        assert len(results[i]) == i + 1
        assert all(e.nbytes == 100 + i for e in results[i])
        assert all(e.description.startswith(f"thread {i} ") for e in results[i])


def test_all_threads_counter_sees_other_threads():
    with count_transfers(all_threads=True) as counter:
        t = threading.Thread(target=lambda: _ledger.record("sync", "elsewhere"))
        t.start()
        t.join()
    assert counter.syncs == 1


def test_timed_region_and_nvtx_on_numpy():
    with xp.profiling.timed_region("step") as timing:
        sum(range(1000))
    assert timing.elapsed is not None and timing.elapsed >= 0
    assert not timing.synced
    with xp.profiling.nvtx_range("noop"):
        pass


def test_unknown_event_kind_is_rejected():
    with count_transfers():
        with pytest.raises(ValueError, match="unknown transfer event kind"):
            _ledger.record("teleport", "x")
