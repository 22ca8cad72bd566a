"""Writes ``tests/data/typical_programs_0.7.1.json``: what each short program of typical cunumpy
0.7 use (``tests/programs/typical_0_7/``) prints under cunumpy 0.7.1, on NumPy and on the emulated
device. ``tests/cpu/test_typical_programs_0_7.py`` runs the same programs on this checkout and
compares. Run it with a Python that has cunumpy 0.7.1 (and SciPy) installed:

    /path/to/venv-0.7.1/bin/python scripts/gen_typical_programs_0_7_1.py \
        > tests/data/typical_programs_0.7.1.json
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROGRAMS = ROOT / "tests" / "programs" / "typical_0_7"
BACKENDS = {
    "numpy": {"CUNUMPY_BACKEND": "numpy"},
    "emulated": {"CUNUMPY_BACKEND": "cupy", "CUNUMPY_FAKE_CUPY": "1"},
}
# Variables of an outer MPI launcher or of cunumpy itself must not reach the programs.
_DROP = ("CUNUMPY_", "PMI_", "PMIX_", "OMPI_", "HYDRA_", "MAYBEMPI")


def programs() -> list[Path]:
    return sorted(PROGRAMS.glob("p*.py"))


def run_program(python: str, program: Path, backend: str) -> subprocess.CompletedProcess[str]:
    """Runs ``program`` with ``python`` on ``backend``, plainly (no MPI launcher), in an empty
    folder, and returns the finished process (stdout is what gets compared)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(_DROP)}
    env.update(BACKENDS[backend], MAYBEMPI="0", OMP_NUM_THREADS="1")
    with tempfile.TemporaryDirectory() as tmp:
        return subprocess.run(
            [python, str(program)],
            capture_output=True,
            text=True,
            timeout=600,
            cwd=tmp,
            env=env,
        )


def main() -> None:
    import cunumpy

    if cunumpy.__version__ != "0.7.1":
        raise SystemExit(f"run this with cunumpy 0.7.1 installed (found {cunumpy.__version__})")
    out: dict[str, dict[str, dict]] = {}
    for program in programs():
        for backend in BACKENDS:
            result = run_program(sys.executable, program, backend)
            if result.returncode != 0:
                raise SystemExit(f"{program.name} on {backend} failed on 0.7.1:\n{result.stderr}")
            out.setdefault(program.name, {})[backend] = {"stdout": result.stdout}
    json.dump(
        {"cunumpy": cunumpy.__version__, "programs": out}, sys.stdout, indent=1, sort_keys=True
    )
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
