"""Transfer counting on a GPU: every copy that goes through cunumpy (xp.asarray/xp.array of
host data, to_numpy, to_cupy, as_device_array, DeviceMirror) is one event with its bytes,
device-only work is none. The emulated device's full list is tests/cpu/test_fake_transfers.py."""

from __future__ import annotations

import numpy as np
import pytest

import cunumpy as xp
from cunumpy.memory import DeviceMirror
from cunumpy.profiling import assert_no_transfers, count_transfers

pytestmark = pytest.mark.gpu


@pytest.fixture
def on_cupy():
    xp.set_backend("cupy", strict=True)
    yield
    xp.set_backend("numpy")


PATHS = [
    ("xp.asarray", lambda h, d: xp.asarray(h), "to_device"),
    ("xp.array", lambda h, d: xp.array(h), "to_device"),
    ("to_cupy", lambda h, d: xp.to_cupy(h), "to_device"),
    ("as_device_array", lambda h, d: xp.as_device_array(h, name="h"), "to_device"),
    ("to_numpy", lambda h, d: xp.to_numpy(d), "to_host"),
]


@pytest.mark.parametrize(("name", "copy", "kind"), PATHS, ids=[p[0] for p in PATHS])
def test_each_path_is_one_event_with_its_bytes(on_cupy, name, copy, kind):
    h = np.arange(12.0)
    d = xp.to_cupy(h)
    with count_transfers() as c:
        copy(h, d)
    assert [e.kind for e in c.events if e.kind != "launch"] == [kind], c.report()
    assert c.bytes(kind) == 96, c.report()


def test_device_mirror_and_device_work(on_cupy):
    host = np.zeros(10)
    with count_transfers() as c:
        m = DeviceMirror(host)
        m.to_device()
        m.to_host()
    assert (c.to_device, c.to_host, c.bytes_to_device, c.bytes_to_host) == (1, 1, 80, 80)
    d = xp.asarray(np.ones(10))
    with assert_no_transfers():
        e = xp.asarray(d)
        e = xp.sin(d) + d
        e = np.sqrt(d)
    assert e.shape == (10,)
