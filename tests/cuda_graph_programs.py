"""The programs of the `xp.cuda.graph` tests (issue 25), shared by the emulated device
(tests/cpu/test_cuda_graph_cpu.py) and the GPU (tests/gpu/test_cuda_graph_gpu.py): each runs
in its own process, checks its results against NumPy and prints ``ok`` last."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

WALKTHROUGH_DIR = Path(__file__).resolve().parents[1] / "examples" / "particle_pusher"

PRELUDE = '''
import os
import numpy as np
import cunumpy
import cupy
import cunumpy as xp
from cunumpy.exceptions import GraphCaptureError, GraphRecaptureError, KernelArgumentTypeError
from cunumpy.kernels import CudaKernel, Kernel, PyccelKernel
from cunumpy.profiling import assert_no_transfers, count_transfers, kernel_profile

SRC = r"""
extern "C" __global__ void axpy(double* y, const double* x, double a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = y[i] + a * x[i];
}
extern "C" __global__ void scale(double* y, double s, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = y[i] * s;
}
"""
axpy = CudaKernel(SRC, "axpy")
scale = CudaKernel(SRC, "scale")
N = 37
x_h = np.linspace(-1.0, 2.0, N)
x = cupy.asarray(x_h)
'''

PROGRAMS: dict[str, str] = {}

PROGRAMS["capture_and_replay"] = """
y = cupy.zeros(N)
def step(y, x, a):
    axpy(y, x, a, N, n_threads=N)
    scale(y, 0.5, N, n_threads=N)
    return y
g = xp.cuda.graph(step, y, x, 0.25)
assert np.array_equal(y.get(), np.zeros(N)), "the capture ran a kernel"
assert g.kernels == 2
assert g.emulated == (os.environ.get("CUNUMPY_FAKE_CUPY") == "1"), "the device the graph runs on"
assert [k for k, _ in g.launches] == ["axpy", "scale"]
ref = np.zeros(N)
for _ in range(3):
    assert g() is y  # a replay returns what the step returned at capture
    ref = (ref + 0.25 * x_h) * 0.5
np.testing.assert_allclose(y.get(), ref, rtol=1e-15)
print("ok")
"""

PROGRAMS["new_scalars_and_arrays"] = """
y = cupy.zeros(N)
def step(y, x, a):
    axpy(y, x, a, N, n_threads=N)
    axpy(y, x, a, N, n_threads=N)
g = xp.cuda.graph(step, y, x, 1.0)
assert [p["bound"] for p in g.parameters] == [True, True, True]
g(y, x, 0.5)
ref_y = 2 * 0.5 * x_h
np.testing.assert_allclose(y.get(), ref_y, rtol=1e-15)
# other arrays of the same shape and dtype, another scalar: written into both launches
y2, x2_h = cupy.full(N, 3.0), np.cos(np.arange(N))
g(y2, cupy.asarray(x2_h), -2.0)
np.testing.assert_allclose(y2.get(), 3.0 + 2 * -2.0 * x2_h, rtol=1e-15)
np.testing.assert_allclose(y.get(), ref_y, rtol=1e-15)  # untouched
# no arguments: the last ones again
g()
np.testing.assert_allclose(y2.get(), 3.0 + 4 * -2.0 * x2_h, rtol=1e-15)
# a NumPy scalar parameter keeps its dtype and is cast as a launch casts it
z = cupy.zeros(N)
g2 = xp.cuda.graph(lambda y, s: scale(y, s, N, n_threads=N), z, np.float32(2.0))
z[...] = 1.0
g2(z, np.float32(3.0))
np.testing.assert_array_equal(z.get(), np.full(N, 3.0))
print("ok")
"""

PROGRAMS["recapture_refusals"] = """
y = cupy.zeros(N)
def step(y, x, a, t):
    axpy(y, x, a, N, n_threads=N)
    axpy(y, x, t * 2.0, N, n_threads=N)  # a value computed from t: a constant
g = xp.cuda.graph(step, y, x, 1.0, 0.0)
def refused(*args, words):
    try:
        g(*args)
    except GraphRecaptureError as e:
        assert all(w in str(e) for w in words), (words, str(e))
    else:
        raise AssertionError(f"accepted {args!r}")
refused(y, x, 2, 0.0, words=["2 (a)", "Python float", "Python int", "capture"])
refused(cupy.zeros(N + 1), x, 1.0, 0.0, words=["0 (y)", "[37]", "[38]"])
refused(y, cupy.zeros(N, dtype=np.float32), 1.0, 0.0, words=["float64", "float32"])
refused(y, x, words=["all 4 argument(s)", "got 2"])
refused(y, x, 1.0, 5.0, words=["3 (t)", "computed from it", "kernel 'axpy'", "recompute"])
# a parameter that sets a launch shape cannot change (a replay changes arguments only)
gn = xp.cuda.graph(lambda y, n: scale(y, 2.0, n, n_threads=n), y, N)
try:
    gn(y, N - 1)
except GraphRecaptureError as e:
    assert "1 (n)" in str(e) and "launch shape of kernel 'scale'" in str(e), str(e)
else:
    raise AssertionError("a launch shape parameter was changed")
# a view of an array parameter reaching a kernel fixes the parameter: a replay could not
# make the view of a new array
gv = xp.cuda.graph(lambda y: scale(y[1:], 2.0, N - 1, n_threads=N - 1), y)
try:
    gv(cupy.zeros(N))
except GraphRecaptureError as e:
    assert "0 (y)" in str(e) and "a view of it" in str(e), str(e)
else:
    raise AssertionError("a parameter used through a view was changed")
# a launch shape computed from a parameter fixes it too
gd = xp.cuda.graph(lambda y, n: scale(y, 1.0, n, n_threads=n - 1), y, N)
try:
    gd(y, N + 3)
except GraphRecaptureError as e:
    assert "computed from it" in str(e) and "launch shape" in str(e), str(e)
else:
    raise AssertionError("a parameter setting a launch shape through arithmetic was changed")
# a parameter no kernel takes at all (only Python code of the step reads it) cannot change
gu = xp.cuda.graph(lambda y, flag: scale(y, 1.0, N, n_threads=N), y, 3)
try:
    gu(y, 4)
except GraphRecaptureError as e:
    assert "1 (flag)" in str(e) and "no kernel" in str(e), str(e)
else:
    raise AssertionError("an unused parameter was changed")
# all or nothing: a good value next to a refused one changes neither
refused(y, x, 7.0, 5.0, words=["3 (t)"])
g()
np.testing.assert_allclose(y.get(), x_h, rtol=1e-15)  # a = 1.0 and t * 2 = 0.0
# a replay's array is checked like a launch's (the kernel refuses a non-contiguous one)
wide = cupy.zeros((N, 2))
g3 = xp.cuda.graph(lambda v: scale(v, 2.0, 2 * N, n_threads=2 * N), cupy.zeros((2, N)))
try:
    g3(wide.T)
except (GraphRecaptureError, KernelArgumentTypeError) as e:
    assert "strides" in str(e) or "contiguous" in str(e), str(e)
else:
    raise AssertionError("a transposed view was accepted")
print("ok")
"""

PROGRAMS["capture_refusals"] = """
def host_axpy(y, x, a):
    y += a * x
host = PyccelKernel(host_axpy)
unported = Kernel(host_axpy, None, name="host_axpy", missing_cuda="fallback")
y = cupy.zeros(N)
def expect(step, words):
    try:
        xp.cuda.graph(step, y)
    except GraphCaptureError as e:
        assert all(w in str(e) for w in words), (words, str(e))
        print("refused:", str(e))
    else:
        raise AssertionError("captured")
    assert not cunumpy._core._graph_capturing()
expect(lambda y: host(y, x, 1.0), ["'host_axpy'", "PyccelKernel"])  # HOST-LINE
expect(lambda y: unported(y, x, 1.0), ["'host_axpy'", "fallback"])  # FALLBACK-LINE
expect(lambda y: xp.to_numpy(y), ["to_numpy", "host"])  # COPY-LINE
expect(lambda y: xp.synchronize(), ["synchronize()"])  # SYNC-LINE
expect(lambda y: xp.cuda.graph(lambda: None), ["do not nest"])
expect(lambda y: axpy(y, x, 1.0, N, n_threads=N, stream=cupy.cuda.Stream()), ["axpy"])
# a fused function cannot take a graph parameter (a replay could not update it)
double = xp.fuse(lambda v: v * 2.0)
expect(lambda y: double(y), ["fused function", "graph parameter 0"])
# nothing ran, and a capture after a refusal works
assert np.array_equal(y.get(), np.zeros(N))
g = xp.cuda.graph(lambda y: axpy(y, x, 1.0, N, n_threads=N), y)
g()
np.testing.assert_allclose(y.get(), x_h, rtol=1e-15)
print("ok")
"""

PROGRAMS["ledger_and_profile"] = """
y = cupy.zeros(N)
def step(y):
    axpy(y, x, 1.0, N, n_threads=N)
    scale(y, 1.5, N, n_threads=N)
    axpy(y, x, -1.0, N, n_threads=N)
axpy(y, x, 0.0, N, n_threads=N)  # compiled before the capture
scale(y, 1.0, N, n_threads=N)
with count_transfers() as at_capture:
    g = xp.cuda.graph(step, y)
assert at_capture.launches == 0 and at_capture.graph_launches == 0, at_capture.report()
with count_transfers() as c, kernel_profile() as profile:
    for _ in range(4):
        g()
assert c.graph_launches == 4 and c.graph_kernels == 12, c.report()
assert c.launches == 0 and c.total == 0, c.report()
assert "4 graph launch(es) running 12 kernel(s)" in c.report(), c.report()
with assert_no_transfers():
    g()
entry = profile.as_dict()["graph:step"]["graph"]
assert entry["calls"] == 4 and entry["kernels"] == 12, entry
assert entry["saved_seconds"] >= 0.0
assert "graph replays: 4 launch(es) ran 12 kernel(s)" in profile.report()
assert g.launch_seconds_saved(10) >= 0.0
ref = np.zeros(N)
for _ in range(5):
    ref = (ref + x_h) * 1.5 - x_h
np.testing.assert_allclose(y.get(), ref, rtol=1e-14)
print("ok")
"""

PROGRAMS["fused_and_allocations"] = """
shift = xp.fuse(lambda v, w: v + 2.0 * w)
y = cupy.asarray(np.arange(N, dtype=np.float64))
def step():
    out = shift(y, x)       # allocated at capture, kept and rewritten by every replay
    scale(out, 3.0, N, n_threads=N)
    return out
g = xp.cuda.graph(step)
out = g()
np.testing.assert_allclose(out.get(), (np.arange(N) + 2.0 * x_h) * 3.0, rtol=1e-15)
y[...] = 1.0  # the step reads y's memory at each replay
assert g() is out
np.testing.assert_allclose(out.get(), (1.0 + 2.0 * x_h) * 3.0, rtol=1e-15)
assert g.kernels >= 2, g.launches
print("ok")
"""

PROGRAMS["walkthrough_equals_eager"] = """
import sys
sys.path.insert(0, {walkthrough})
import walkthrough as w
n, steps = 300, 12
with xp.use_backend("numpy"):
    host = w.Simulation(w.load_catalog("fallback", ported=set()), n)
    for _ in range(steps):
        host.step()
    reference = host.state()
eager = w.Simulation(w.load_catalog("fallback"), n)
graphed = w.Simulation(w.load_catalog("fallback"), n)
push = xp.cuda.graph(graphed.push)
assert push.kernels == 2, push.launches
for _ in range(steps):
    eager.step()
    push()
    graphed.track()
a, b = eager.state(), graphed.state()
for k in a:
    assert np.array_equal(a[k], b[k]), k
    np.testing.assert_allclose(b[k], reference[k], rtol=1e-10, atol=1e-12)
assert np.array_equal(eager.trajectories(), graphed.trajectories())
print("ok")
"""

PROGRAMS["walkthrough_equals_eager"] = PROGRAMS["walkthrough_equals_eager"].replace(
    "{walkthrough}", repr(str(WALKTHROUGH_DIR))
)

#: Markers on the lines of `capture_refusals` whose refusal must name that line.
REFUSAL_LINES = ("HOST-LINE", "FALLBACK-LINE", "COPY-LINE", "SYNC-LINE")


def run(tmp_path: Path, name: str, *, emulated: bool) -> str:
    """Runs program `name` as `tmp_path/program.py` (call sites are `program.py:LINE`) on the
    emulated device or the GPU; returns its stdout."""
    program = tmp_path / "program.py"
    program.write_text(PRELUDE + PROGRAMS[name])
    env = {**os.environ, "CUNUMPY_BACKEND": "cupy", "OMP_NUM_THREADS": "1"}
    if emulated:
        env["CUNUMPY_FAKE_CUPY"] = "1"
    else:
        env.pop("CUNUMPY_FAKE_CUPY", None)
    result = subprocess.run(
        [sys.executable, str(program)], env=env, capture_output=True, text=True, timeout=900
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result.stdout


def check_output(tmp_path: Path, name: str, out: str) -> None:
    """What every program's output must show: ``ok`` last; the refusals naming their lines."""
    lines = out.splitlines()
    assert lines and lines[-1].startswith("ok"), out[-3000:]
    if name == "capture_refusals":
        refusals = [line for line in lines if line.startswith("refused:")]
        assert len(refusals) == 7, refusals
        source = (tmp_path / "program.py").read_text().splitlines()
        for marker, message in zip(REFUSAL_LINES, refusals, strict=False):
            line = next(i + 1 for i, text in enumerate(source) if marker in text)
            assert f"program.py:{line}" in message, message
