"""A dependency-free PNG of the walk-through's result: the deposited charge density as a
heat map with the trajectories of a few particles drawn over it."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import numpy as np


def write_png(path: Path, rgb: np.ndarray) -> None:
    """Writes an (h, w, 3) uint8 image as an 8-bit RGB PNG."""
    h, w, _ = rgb.shape
    raw = b"".join(b"\x00" + rgb[row].tobytes() for row in range(h))

    def chunk(tag: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(tag + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)
    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
    png += chunk(b"IDAT", zlib.compress(raw, 6)) + chunk(b"IEND", b"")
    path.write_bytes(png)


def heat(values: np.ndarray) -> np.ndarray:
    """Maps values to a blue-white-red colour scale (uint8 RGB)."""
    v = values - values.min()
    v = v / v.max() if v.max() > 0 else v
    rgb = np.empty((*values.shape, 3), dtype=np.float64)
    rgb[..., 0] = np.clip(2 * v, 0, 1)
    rgb[..., 1] = np.clip(1 - np.abs(2 * v - 1), 0, 1) * 0.8 + 0.2 * v
    rgb[..., 2] = np.clip(2 - 2 * v, 0, 1)
    return (rgb * 255).astype(np.uint8)


def render(
    path: Path, rho: np.ndarray, trajectories: np.ndarray, lx: float, ly: float, scale: int = 8
) -> None:
    """rho: (nx, ny) density; trajectories: (steps, k, 2) positions of k particles."""
    image = np.kron(heat(rho.T[::-1]), np.ones((scale, scale, 1), dtype=np.uint8))
    h, w, _ = image.shape
    colours = np.array([[0, 0, 0], [255, 255, 0], [0, 160, 0], [255, 0, 255]], dtype=np.uint8)
    for k in range(trajectories.shape[1]):
        cols = np.clip((trajectories[:, k, 0] / lx * w).astype(int), 0, w - 1)
        rows = np.clip(((1 - trajectories[:, k, 1] / ly) * h).astype(int), 0, h - 1)
        image[rows, cols] = colours[k % len(colours)]
    write_png(path, image)
