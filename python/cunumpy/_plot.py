"""``KernelProfile.plot()``: where the time went, drawn with matplotlib (an optional
dependency, imported only here)."""

from __future__ import annotations

import os
from typing import Any

from .exceptions import CunumpyError


def plot_profile(
    profile: Any, path: str | os.PathLike[str] | None = None, *, transfers: Any = None
) -> Any:
    """Three panels: total time per kernel (one bar per path), host against device time, and
    the bytes each kind of transfer moved (from ``transfers``). Returns the figure; saves it to
    ``path`` when given."""
    try:
        import matplotlib

        if path is not None:
            matplotlib.use("Agg", force=False)
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise CunumpyError("KernelProfile.plot() needs matplotlib: pip install matplotlib") from exc
    stats = profile.stats()
    fig, (kernels, split, copies) = plt.subplots(1, 3, figsize=(15, 4.5))

    names = sorted(
        {s.name for s in stats}, key=lambda n: -sum(s.seconds for s in stats if s.name == n)
    )
    order = ("cuda", "graph", "metal", "host", "fallback")
    paths = [p for p in order if any(s.path == p for s in stats)]
    height = 0.8 / max(len(paths), 1)
    for i, p in enumerate(paths):
        ms = [sum(s.seconds for s in stats if s.name == n and s.path == p) * 1e3 for n in names]
        kernels.barh([k + i * height for k in range(len(names))], ms, height, label=p)
    kernels.set_yticks([k + 0.4 - height / 2 for k in range(len(names))], names)
    kernels.invert_yaxis()
    kernels.set_xlabel("total time (ms)")
    kernels.set_title("time per kernel")
    if paths:
        kernels.legend(title="path")

    device = sum(s.seconds for s in stats if s.path in ("cuda", "metal")) * 1e3
    host = sum(s.seconds for s in stats if s.path not in ("cuda", "metal")) * 1e3
    split.bar(
        ["device (cuda, metal)", "host (host + fallback)"],
        [device, host],
        color=["tab:green", "tab:orange"],
    )
    split.set_ylabel("total time (ms)")
    split.set_title("host vs device")

    kinds = ["to_host", "to_device", "device_copy", "kernel_conversion", "fallback"]
    if transfers is not None:
        mib = [transfers.bytes(k) / 2**20 for k in kinds]
        counts = [transfers.count(k) for k in kinds]
        bars = copies.bar(kinds, mib, color="tab:red")
        for bar, n in zip(bars, counts, strict=True):
            copies.annotate(
                f"{n}x",
                (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                ha="center",
                va="bottom",
            )
        copies.tick_params(axis="x", labelrotation=30)
        copies.set_ylabel("MiB copied")
    else:
        copies.text(
            0.5,
            0.5,
            "pass transfers=counter\nto see the copies",
            ha="center",
            va="center",
            transform=copies.transAxes,
        )
    copies.set_title("transfers")
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=100)
    return fig
