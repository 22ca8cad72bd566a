"""Short programs of typical cunumpy 0.7 use run unchanged and print what they printed on 0.7.1.

Each program in ``tests/programs/typical_0_7/`` is written against 0.7.1's documented API only
(backend switching, conversions, kernels and their dispatch, structs and headers, transfer
counting, random numbers, algorithms, SciPy, host calls, serial MPI, streams and staging). Its
output under cunumpy 0.7.1, on NumPy and on the emulated device, is stored in
``tests/data/typical_programs_0.7.1.json`` (``scripts/gen_typical_programs_0_7_1.py`` run in a
venv with 0.7.1); here each runs on this checkout in its own process and must print the same.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

_ROOT = Path(__file__).resolve().parents[2]
_DATA = json.loads((_ROOT / "tests" / "data" / "typical_programs_0.7.1.json").read_text())


def _generator():
    spec = importlib.util.spec_from_file_location(
        "gen_typical_programs_0_7_1", _ROOT / "scripts" / "gen_typical_programs_0_7_1.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_GEN = _generator()
_PROGRAMS = _GEN.programs()

# Deliberate differences from 0.7.1 (each a MIGRATING.md row): the program still runs, and the
# lines 0.7.1 printed are replaced by these.
_DELIBERATE = {
    ("p12_device_mirror.py", "emulated"): (
        "0.7's fake shared the host array's memory",
        {
            "[0.0, 0.0, 0.0, 0.0] [0.0, 0.0, 0.0, 0.0]": (
                "[0.0, 10.0, 20.0, 30.0] [0.0, 0.0, 0.0, 0.0]"
            )
        },
    ),
    ("p13_count_transfers.py", "emulated"): (
        "count `xp.asarray(host_array)` on the device",
        {
            "0 1 0 64 [2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0]": (
                "1 1 64 64 [2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0]"
            )
        },
    ),
}


def _expected(program: str, backend: str) -> list[str]:
    lines = _DATA["programs"][program][backend]["stdout"].splitlines()
    row, replaced = _DELIBERATE.get((program, backend), ("", {}))
    for old in replaced:
        assert old in lines, f"{program}: 0.7.1 no longer printed {old!r}"
    return [replaced.get(line, line) for line in lines]


def test_deliberate_differences_are_in_migrating():
    migrating = (_ROOT / "MIGRATING.md").read_text()
    for (program, _backend), (row, _lines) in _DELIBERATE.items():
        assert row in migrating, program


def test_every_program_has_its_0_7_1_output():
    assert _DATA["cunumpy"] == "0.7.1"
    assert sorted(_DATA["programs"]) == [p.name for p in _PROGRAMS]
    for name, runs in _DATA["programs"].items():
        assert sorted(runs) == sorted(_GEN.BACKENDS), name
        assert all(run["stdout"].strip() for run in runs.values()), name


@pytest.mark.parametrize("backend", sorted(_GEN.BACKENDS))
@pytest.mark.parametrize("program", _PROGRAMS, ids=lambda p: p.stem)
def test_program_prints_what_0_7_1_printed(program, backend):
    result = _GEN.run_program(sys.executable, program, backend)
    assert result.returncode == 0, f"{program.name} on {backend} failed:\n{result.stderr[-4000:]}"
    assert result.stdout.splitlines() == _expected(program.name, backend), result.stderr[-2000:]
