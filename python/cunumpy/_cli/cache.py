"""``cunumpy cache list|size|clear``: the disk caches of compiled CUDA kernels
(``CUNUMPY_CACHE_DIR``) and of emulator libraries (``CUNUMPY_EMULATION_CACHE``)."""

from __future__ import annotations

import argparse
import shutil
import time
from pathlib import Path
from typing import Any

from ._output import folder_size, human_bytes, print_json


def add_parser(subparsers: Any) -> None:
    """Adds ``cache``."""
    parser = subparsers.add_parser("cache", help="list, size or clear the compile caches")
    parser.add_argument("action", choices=("list", "size", "clear"))
    parser.add_argument(
        "--which",
        choices=("all", "kernels", "emulation"),
        default="all",
        help="which cache (default: both)",
    )
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.set_defaults(func=run)


def cache_dirs(which: str) -> dict[str, str | None]:
    """``{"kernels": path, "emulation": path}`` (``None``: no folder, or the cache is off)."""
    from cunumpy import _core
    from cunumpy.kernel_testing import emulation_cache_dir

    kernels = _core.kernel_cache_dir()
    dirs = {
        "kernels": None if kernels is None else str(kernels),
        "emulation": emulation_cache_dir(),
    }
    return {k: v for k, v in dirs.items() if which in ("all", k)}


def run(args: argparse.Namespace) -> int:
    """Runs the action; exit status 0 (1 when a folder cannot be removed)."""
    dirs = cache_dirs(args.which)
    out: dict[str, Any] = {}
    status = 0
    for label, path in dirs.items():
        files, size = folder_size(path)
        entry: dict[str, Any] = {"path": path, "files": files, "bytes": size}
        if args.action == "list" and path is not None and Path(path).is_dir():
            entry["entries"] = [
                {
                    "name": str(p.relative_to(path)),
                    "bytes": p.stat().st_size,
                    "modified": time.strftime(
                        "%Y-%m-%d %H:%M:%S", time.localtime(p.stat().st_mtime)
                    ),
                }
                for p in sorted(Path(path).rglob("*"))
                if p.is_file()
            ]
        if args.action == "clear" and path is not None and Path(path).is_dir():
            try:
                shutil.rmtree(path)
                entry["removed"] = {"files": files, "bytes": size}
            except OSError as exc:
                entry["error"] = str(exc)
                status = 1
        out[label] = entry
    if args.json:
        print_json(out)
        return status
    for label, entry in out.items():
        where = entry["path"] or "off (no folder)"
        if args.action == "clear":
            if "error" in entry:
                print(f"{label} cache: {where}: cannot remove: {entry['error']}")
            else:
                print(
                    f"{label} cache: {where}: removed {entry['files']} file(s),"
                    f" {human_bytes(entry['bytes'])}"
                )
            continue
        print(f"{label} cache: {where}: {entry['files']} file(s), {human_bytes(entry['bytes'])}")
        for e in entry.get("entries", []):
            print(f"  {e['modified']}  {human_bytes(e['bytes']):>10}  {e['name']}")
    return status
