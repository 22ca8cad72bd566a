"""Indexing in fused functions on the emulated device (``CUNUMPY_FAKE_CUPY=1``): every case of
tests/fusion_index_cases.py runs its generated CUDA C in the CPU emulator, every pointer
parameter bounds-checked, against NumPy; an out-of-range gather traps as it does on a GPU."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from cunumpy.kernel_testing import emulation_compiler

pytestmark = [
    pytest.mark.cxx,
    pytest.mark.skipif(emulation_compiler() is None, reason="needs a host C++ compiler"),
]

TESTS = Path(__file__).resolve().parents[1]


def run_fake(code):
    env = {**os.environ, "CUNUMPY_FAKE_CUPY": "1", "OMP_NUM_THREADS": "1"}
    env.pop("CUNUMPY_BACKEND", None)
    result = subprocess.run(
        # the fake is installed by `import cunumpy`, before anything imports cupy
        [sys.executable, "-c", "import cunumpy\n" + textwrap.dedent(code)],
        env=env,
        capture_output=True,
        text=True,
        timeout=1800,
        cwd=TESTS,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result.stdout


def test_index_cases_on_the_emulated_device():
    out = run_fake(
        f"""
        import json, sys, traceback
        sys.path.insert(0, {str(TESTS)!r})
        import cupy
        from fusion_corpus import run_case
        from fusion_index_cases import INDEX_CASES
        assert cunumpy._core._fake_backend_active()
        report = {{}}
        for case in INDEX_CASES:
            if case.name == "stencil_1d_large":
                continue  # the same kernel as stencil_1d; the emulator is slow at that size
            try:
                run_case(case, cupy.asarray, cupy.asnumpy, cupy.empty)
                report[case.name] = "ok"
            except Exception:
                report[case.name] = traceback.format_exc()[-1500:]
        print(json.dumps(report))
        """
    )
    report = json.loads(out.strip().splitlines()[-1])
    assert len(report) >= 30
    failed = {k: v for k, v in report.items() if v != "ok"}
    assert not failed, "\n\n".join(f"{k}:\n{v}" for k, v in failed.items())


def test_out_of_range_gather_traps_on_the_emulated_device():
    out = run_fake(
        """
        import json
        import numpy as np
        import cupy
        from cunumpy.exceptions import EmulatedKernelFault
        from cunumpy.kernels import fuse

        f = fuse(lambda a, i: a[i] * 2.0, kernel_name="emu_take")
        a = cupy.asarray(np.arange(10.0))
        ok = cupy.asnumpy(f(a, cupy.asarray(np.array([-1, 0, 9]))))
        try:
            f(a, cupy.asarray(np.array([3, 10])))
            fault = None
        except EmulatedKernelFault as e:
            fault = [e.fault, str(e)]
        print(json.dumps({"ok": ok.tolist(), "fault": fault}))
        """
    )
    info = json.loads(out.strip().splitlines()[-1])
    assert info["ok"] == [18.0, 0.0, 18.0]
    assert info["fault"] is not None and info["fault"][0] == "trap"
    assert "emu_take" in info["fault"][1]


def test_out_views_on_the_emulated_device():
    out = run_fake(
        """
        import json
        import numpy as np
        import cupy
        from cunumpy.kernels import fuse

        f = fuse(lambda u: u[2:] - 2 * u[1:-1] + u[:-2], kernel_name="emu_out_view")
        u = np.linspace(0.0, 1.0, 40) ** 2
        v = cupy.zeros(40)
        w = cupy.zeros((40, 2))
        f(cupy.asarray(u), out=v[1:-1])
        f(cupy.asarray(u), out=w[1:-1, 1])
        print(json.dumps({"v": cupy.asnumpy(v).tolist(), "w": cupy.asnumpy(w).tolist()}))
        """
    )
    info = json.loads(out.strip().splitlines()[-1])
    u = np.linspace(0.0, 1.0, 40) ** 2
    expected = np.zeros(40)
    expected[1:-1] = u[2:] - 2 * u[1:-1] + u[:-2]
    np.testing.assert_array_equal(info["v"], expected)
    w = np.asarray(info["w"])
    np.testing.assert_array_equal(w[:, 1], expected)
    np.testing.assert_array_equal(w[:, 0], 0.0)
