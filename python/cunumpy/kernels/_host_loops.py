"""Compiled CPU loops of fused functions: settings and status."""

from __future__ import annotations

from typing import Literal, TypedDict

from .. import _core

Mode = Literal["off", "background", "sync"]


class HostLoopStatus(TypedDict):
    mode: Mode
    min_points: int
    ready: int
    building: int
    failed: list[str]
    runs: int


def set_host_loops(mode: Mode = "background", min_points: int = 4096) -> tuple[Mode, int]:
    """Chooses how fused calls on NumPy arrays run their kernels; returns the previous
    ``(mode, min_points)``.

    A fused kernel over at least ``min_points`` points is compiled into one C++ loop by the
    host compiler (``$CXX``, else ``c++``, ``g++`` or ``clang++``), cached on disk beside the
    emulator's libraries, and run on all cores. Only kernels whose every operation gives the
    interpreter's result bit for bit are compiled (arithmetic, comparisons, ``where``,
    ``minimum``/``maximum``/``clip``, ``sqrt``, ``floor``/``ceil``/``trunc``, logical and bit
    operations, casts other than float to integer; no ``exp``, ``sin``, ... whose library
    versions may differ in the last place; sums, products, means, ``any``/``all`` folded in
    the interpreter's order), so results never depend on which path ran (a NaN result is a
    NaN either way; its sign bit may differ).

    - ``"background"`` (default; ``CUNUMPY_HOST_LOOPS`` sets the initial mode): the first
      large call starts the build on a thread and runs interpreted; later calls use the loop
      once it is loaded.
    - ``"sync"``: the first large call waits for the build (benchmarks, tests).
    - ``"off"``: every kernel runs in the interpreter.

    Without a host compiler, or if a build fails (see :func:`host_loop_status`), the
    interpreter runs the kernel.
    """
    return _core._set_host_loops(mode, int(min_points))


def host_loop_status() -> HostLoopStatus:
    """The mode, ``min_points``, how many loops are ``ready`` or ``building``, the messages of
    ``failed`` builds, and how many kernel ``runs`` went through a compiled loop."""
    return _core._host_loop_status()


def wait_for_host_loops(timeout: float = 60.0) -> bool:
    """Waits until no build is running, at most ``timeout`` seconds; whether none is."""
    return _core._wait_for_host_loops(float(timeout))
