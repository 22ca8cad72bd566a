"""Finds the user's call site (``file:line``) for ledger events."""

from __future__ import annotations

import contextlib
import os
import sys

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
# Frames of @contextmanager blocks are the library's, not the user's.
_SKIPPED_FILES = {os.path.abspath(contextlib.__file__)}


def call_site() -> str:
    """``file:line`` of the innermost frame outside the cunumpy package."""
    frame = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        path = os.path.abspath(filename)
        if not path.startswith(_PACKAGE_DIR) and path not in _SKIPPED_FILES:
            return f"{filename}:{frame.f_lineno}"
        frame = frame.f_back
    return "<unknown>:0"
