"""A minimal PNG reader for tests (8-bit RGB/RGBA, not interlaced: what Chromium writes), so
that a screenshot's pixels can be checked without an imaging library."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path


def read_png(path: Path) -> tuple[int, int, list[bytes]]:
    """(width, height, rows of RGB bytes)."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, chunks, header = 8, [], b""
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            chunks.append(body)
        pos += 12 + length
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", header)
    assert depth == 8 and colour in (2, 6) and interlace == 0, (depth, colour, interlace)
    channels = 3 if colour == 2 else 4
    raw = zlib.decompress(b"".join(chunks))
    stride = width * channels
    rows: list[bytes] = []
    previous = bytearray(stride)
    for y in range(height):
        kind = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        for x in range(stride):
            left = line[x - channels] if x >= channels else 0
            up = previous[x]
            corner = previous[x - channels] if x >= channels else 0
            line[x] = (line[x] + _predict(kind, left, up, corner)) & 0xFF
        previous = line
        rgb = bytes(b for i, b in enumerate(line) if i % channels < 3)
        rows.append(rgb)
    return width, height, rows


def _predict(kind: int, left: int, up: int, corner: int) -> int:
    if kind == 0:
        return 0
    if kind == 1:
        return left
    if kind == 2:
        return up
    if kind == 3:
        return (left + up) // 2
    estimate = left + up - corner
    pa, pb, pc = abs(estimate - left), abs(estimate - up), abs(estimate - corner)
    return left if pa <= pb and pa <= pc else (up if pb <= pc else corner)


def colour_counts(rows: list[bytes], box: tuple[int, int, int, int]) -> dict[str, int]:
    """Pixels per `#rrggbb` colour inside box (left, top, right, bottom)."""
    left, top, right, bottom = box
    counts: dict[str, int] = {}
    for row in rows[top:bottom]:
        for x in range(left, min(right, len(row) // 3)):
            key = "#" + row[3 * x : 3 * x + 3].hex()
            counts[key] = counts.get(key, 0) + 1
    return counts
