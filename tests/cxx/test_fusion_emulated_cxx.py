"""The fusion corpus (tests/fusion_corpus.py) on the emulated device: with
``CUNUMPY_FAKE_CUPY=1`` a fused function on (fake) CuPy arrays runs its generated CUDA C in
the CPU emulator, kernel by kernel, with every pointer parameter bounds-checked; the results
are checked against NumPy. Each chunk of the corpus runs in its own process so the fake never
leaks into other tests."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from cunumpy.kernel_testing import emulation_compiler

pytestmark = [
    pytest.mark.cxx,
    pytest.mark.skipif(emulation_compiler() is None, reason="needs a host C++ compiler"),
]

TESTS = Path(__file__).resolve().parents[1]
CHUNKS = 4


def run_fake(code):
    env = {**os.environ, "CUNUMPY_FAKE_CUPY": "1", "OMP_NUM_THREADS": "1"}
    env.pop("CUNUMPY_BACKEND", None)
    result = subprocess.run(
        # the fake is installed by `import cunumpy`, before anything imports cupy
        [sys.executable, "-c", "import cunumpy\n" + textwrap.dedent(code)],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        cwd=TESTS,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result.stdout


CHUNK_CODE = """
import json, sys, traceback
sys.path.insert(0, {tests!r})
import cupy
from fusion_corpus import CASES, run_case
assert cupy.__name__ == "cupy" and cunumpy._core._fake_backend_active()
report = {{}}
for case in CASES[{chunk}::{chunks}]:
    try:
        run_case(case, cupy.asarray, cupy.asnumpy, cupy.empty)
        report[case.name] = "ok"
    except Exception:
        report[case.name] = traceback.format_exc()[-1500:]
print(json.dumps(report))
"""


@pytest.fixture(scope="module")
def corpus_runs():
    """All chunks started at once (each compiles its kernels with the host compiler, one
    process per core keeps the machine busy); each test then waits for its own chunk."""
    env = {**os.environ, "CUNUMPY_FAKE_CUPY": "1", "OMP_NUM_THREADS": "1"}
    env.pop("CUNUMPY_BACKEND", None)
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                "import cunumpy\n"
                + CHUNK_CODE.format(tests=str(TESTS), chunk=chunk, chunks=CHUNKS),
            ],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=TESTS,
        )
        for chunk in range(CHUNKS)
    ]
    yield procs
    for proc in procs:
        if proc.poll() is None:
            proc.kill()


@pytest.mark.parametrize("chunk", range(CHUNKS))
def test_corpus_on_the_emulated_device(corpus_runs, chunk):
    stdout, stderr = corpus_runs[chunk].communicate(timeout=1800)
    assert corpus_runs[chunk].returncode == 0, stdout[-3000:] + stderr[-3000:]
    report = json.loads(stdout.strip().splitlines()[-1])
    assert report, "no cases ran"
    failed = {k: v for k, v in report.items() if v != "ok"}
    assert not failed, "\n\n".join(f"{k}:\n{v}" for k, v in failed.items())


def test_fused_kernels_run_in_the_emulator_and_are_recorded():
    out = run_fake(
        """
        import json
        import numpy as np
        import cupy
        from cunumpy.kernels import fuse

        f = fuse(lambda a: a - np.mean(a), kernel_name="emu_center")
        a = np.arange(5000, dtype=np.float64)
        d = cupy.asarray(a)
        plan = f.plan(d)
        assert not plan.is_compiled
        r = f(d)
        assert isinstance(r, cupy.ndarray) and plan.is_compiled
        with cunumpy.profiling.count_transfers() as counter:
            f(d)
        names = [e.description for e in counter.events if e.kind == "launch"]
        print(json.dumps({
            "ok": bool(np.allclose(cupy.asnumpy(r), a - a.mean())),
            "launches": counter.launches,
            "planned": sum(len(k["launches"]) for k in plan.kernels),
            "names": names,
            "hit": plan.compile(),
        }))
        """
    )
    info = json.loads(out.strip().splitlines()[-1])
    assert info["ok"]
    assert info["launches"] == info["planned"] >= 2
    assert all("emu_center" in n for n in info["names"])
    assert info["hit"] in (True, False)


SM_COUNT_CODE = """
import json
import numpy as np
import cupy
from cunumpy.kernels import fuse

total = fuse(lambda a: np.sum(a), kernel_name="emu_total")
a = np.linspace(-1.0, 1.0, 1 << 19)
d = cupy.asarray(a)
plan = total.plan(d)
with cunumpy.profiling.count_transfers() as counter:
    r = total(d)
print(json.dumps({
    "ok": bool(np.isclose(float(cupy.asnumpy(r)), a.sum())),
    "strategy": plan.kernels[0]["strategy"],
    "planned": [l["grid"] for l in plan.kernels[0]["launches"]],
    "launched": [e.description for e in counter.events if e.kind == "launch"],
    "workspace": plan.workspace_bytes,
}))
"""


@pytest.mark.parametrize("sm_count", [None, 20])
def test_a_fused_plan_gets_the_grid_of_the_emulated_devices_sm_count(monkeypatch, sm_count):
    # sum over 2^19 points: a split reduction, 16 blocks of partials per SM (at most one per
    # 1024 points: 512 here), so an H200 (132 SMs, the default) and a 20-SM device differ
    if sm_count is None:
        monkeypatch.delenv("CUNUMPY_EMULATED_SM_COUNT", raising=False)
    else:
        monkeypatch.setenv("CUNUMPY_EMULATED_SM_COUNT", str(sm_count))
    info = json.loads(run_fake(SM_COUNT_CODE).strip().splitlines()[-1])
    blocks = min(16 * (sm_count or 132), (1 << 19) // 1024)
    assert info["ok"]
    assert info["strategy"] == "split"
    assert info["planned"][0] == blocks
    assert f"kernel 'emu_total_k0_partial' grid [{blocks}, 1, 1]" in info["launched"][0]
    assert info["workspace"] == -(-blocks * 8 // 256) * 256  # the partials, 256-aligned


def test_a_bad_emulated_sm_count_is_refused(monkeypatch):
    monkeypatch.setenv("CUNUMPY_EMULATED_SM_COUNT", "many")
    out = run_fake(
        """
        import numpy as np
        import cupy
        from cunumpy.exceptions import BackendError
        from cunumpy.kernels import fuse

        try:
            fuse(lambda a: a + 1)(cupy.asarray(np.ones(4)))
        except BackendError as e:
            print("refused:", e)
        """
    )
    assert "refused: CUNUMPY_EMULATED_SM_COUNT" in out and '"many"' in out
