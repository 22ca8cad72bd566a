"""Shared output helpers of the subcommands: sizes and JSON."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


def human_bytes(n: int) -> str:
    """``1536`` -> ``1.5 KiB``."""
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{int(value)} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"


def folder_size(path: str | os.PathLike[str] | None) -> tuple[int, int]:
    """``(files, bytes)`` under ``path`` (``(0, 0)`` when it does not exist)."""
    if path is None or not Path(path).is_dir():
        return 0, 0
    files = size = 0
    for entry in Path(path).rglob("*"):
        if entry.is_file():
            files += 1
            size += entry.stat().st_size
    return files, size


def print_json(data: Any) -> None:
    """Indented JSON on stdout (paths and other objects as text)."""
    print(json.dumps(data, indent=2, default=str))
