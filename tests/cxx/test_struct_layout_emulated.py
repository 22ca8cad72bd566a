"""Struct layouts in the emulator: the same probe kernel as on the GPU, compiled by the host
C++ compiler, agrees with the computed layout for the struct set of tests/gpu (complex<double>,
char before double, nested structs, views, arrays), and a wrong one is reported."""

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, {gpu_tests!r})
    import pytest
    import cunumpy as xp
    xp.set_backend("cupy", strict=True)
    from cunumpy.arguments import CudaStruct
    from test_structs_gpu import struct_set

    for s in struct_set():
        got = s.verify_layout()
        assert got == s.expected_layout(), (s.name, got)
        print(s.name, got)
    m = CudaStruct("M", [("n", "int"), ("z", "complex<double>")])
    header = {tmp!r} + "/m.cuh"
    open(header, "w").write(
        "template <typename T> struct complex {{ T re, im; }};\\n" + m.declaration
    )
    with pytest.raises(ValueError, match="z: computed 16, device 8"):
        m.verify_layout("m.cuh", include_dirs=[{tmp!r}])
    print("mismatch reported")
    """
)


@pytest.mark.cxx
@pytest.mark.skipif(
    shutil.which("c++") is None and shutil.which("g++") is None, reason="needs a C++ compiler"
)
def test_layouts_agree_in_the_emulator(tmp_path):
    code = SCRIPT.format(gpu_tests=str(ROOT / "tests" / "gpu"), tmp=str(tmp_path))
    env = {**os.environ, "CUNUMPY_FAKE_CUPY": "1"}
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=900, env=env
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "WithComplex" in result.stdout and "mismatch reported" in result.stdout
