"""The fusion guide's examples run (NumPy backend)."""

from __future__ import annotations

import re
from pathlib import Path

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "kernel-fusion.md"


def test_kernel_fusion_guide_runs(capsys):
    blocks = re.findall(r"```python\n(.*?)```", GUIDE.read_text(), flags=re.S)
    assert blocks
    for code in blocks:
        exec(compile(code, str(GUIDE), "exec"), {})
    assert "2 kernel(s)" in capsys.readouterr().out
