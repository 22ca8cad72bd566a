"""The shipped headers compiled and run as host C++ (needs a C++ compiler)."""

import shutil
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).parent / "headers" / "check_headers.sh"


@pytest.mark.cxx
@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")
def test_headers_compile_and_behave_as_host_cpp():
    result = subprocess.run(["bash", str(SCRIPT)], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
