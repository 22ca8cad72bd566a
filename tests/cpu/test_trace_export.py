"""The ledger and the kernel profile exported as a Chrome/Perfetto trace, validated against the
trace event format's schema (tests/data/trace_event_schema.json), and ``KernelProfile.plot()``.
"""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path

import jsonschema
import numpy as np
import pytest

from cunumpy import _core, _ledger
from cunumpy.exceptions import CunumpyError
from cunumpy.kernels import Kernel
from cunumpy.profiling import (
    TransferCounter,
    chrome_trace,
    count_transfers,
    kernel_profile,
    write_chrome_trace,
)

SCHEMA = json.loads((Path(__file__).parents[1] / "data/trace_event_schema.json").read_text())


def double(x, n):
    x[:n] *= 2.0


def test_schema_rejects_what_perfetto_would_not_read():
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    bad = [
        {"traceEvents": [{"ph": "X", "name": "k", "pid": 1, "tid": 1, "ts": 0, "cat": "c"}]},
        {"traceEvents": [{"ph": "i", "name": "k", "pid": 1, "tid": 1, "ts": 0, "dur": 1}]},
        {"traceEvents": [{"ph": "X", "name": "k", "pid": -1, "tid": 1, "ts": 0, "dur": 1}]},
        {"traceEvents": [{"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {}}]},
        {"events": []},
    ]
    for trace in bad:
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(trace, SCHEMA)


def test_trace_of_calls_and_copies_on_threads(tmp_path):
    kernel = Kernel(double, missing_cuda="fallback", host_options={"outputs": ("x",)})
    x = np.ones(1000)
    before = _core.clock_ns()
    with kernel_profile() as profile, count_transfers(all_threads=True) as counter:
        kernel(x, 1000)
        _ledger.record("to_host", "copy of 8000 bytes", 8000)
        worker = threading.Thread(target=kernel, args=(x, 1000))
        worker.start()
        worker.join()
    after = _core.clock_ns()
    np.testing.assert_array_equal(x, 4.0)

    path = write_chrome_trace(tmp_path / "t.json", counter, profile)
    trace = json.loads(Path(path).read_text())
    jsonschema.validate(trace, SCHEMA)
    assert trace == chrome_trace(counter, profile) | {"traceEvents": trace["traceEvents"]}

    events = trace["traceEvents"]
    calls = [e for e in events if e["ph"] == "X"]
    copies = [e for e in events if e["ph"] == "i"]
    assert [e["name"] for e in calls] == ["double", "double"]
    assert all(e["cat"] == "kernel.host" and e["args"]["path"] == "host" for e in calls)
    # the main thread's call and the worker's are on two tracks, both named
    assert calls[0]["tid"] != calls[1]["tid"]
    names = {(e["pid"], e["tid"]) for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    assert {(1, calls[0]["tid"]), (1, calls[1]["tid"])} <= names
    # the copy sits between the two calls, on the main thread's track, with its size and line
    (copy,) = copies
    assert copy["tid"] == calls[0]["tid"] and copy["args"]["bytes"] == 8000
    assert calls[0]["ts"] + calls[0]["dur"] <= copy["ts"] <= calls[1]["ts"]
    assert copy["args"]["source"].startswith(__file__)
    assert calls[0]["args"]["source"].startswith(__file__ + ":")
    assert before / 1e3 <= calls[0]["ts"] and calls[1]["ts"] + calls[1]["dur"] <= after / 1e3
    # the profile's own totals agree with the trace's durations
    total_us = sum(e["dur"] for e in calls)
    assert total_us == pytest.approx(profile["double"]["host"].seconds * 1e6, rel=1e-6)


def test_trace_refuses_other_objects():
    with pytest.raises(TypeError, match="TransferCounter and KernelProfile"):
        chrome_trace(TransferCounter(), object())


def test_plot_writes_a_png(tmp_path):
    pytest.importorskip("matplotlib")
    kernel = Kernel(double, missing_cuda="fallback", host_options={"outputs": ("x",)})
    with kernel_profile() as profile, count_transfers() as counter:
        kernel(np.ones(10), 10)
        _ledger.record("to_device", "copy of 80 bytes", 80)
    figure = profile.plot(tmp_path / "p.png", transfers=counter)
    assert (tmp_path / "p.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    kernels_axis, split_axis, copies_axis = figure.axes[:3]
    assert [t.get_text() for t in kernels_axis.get_yticklabels()] == ["double"]
    heights = {p.get_x(): p.get_height() for p in copies_axis.patches}
    assert sorted(heights.values())[-1] == pytest.approx(80 / 2**20)


def test_plot_without_matplotlib_names_it(monkeypatch):
    # a None entry in sys.modules makes the import fail as an absent package does
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    with kernel_profile() as profile:
        pass
    with pytest.raises(CunumpyError, match="needs matplotlib"):
        profile.plot()
