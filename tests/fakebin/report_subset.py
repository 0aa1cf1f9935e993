"""The stand-in ncu's reports: real H200 reports cut down to the kernels of chosen NVTX ranges.

A plain `.ncu-rep` is `NVR\\0`, a FileHeader block, then BlockHeader blocks each followed by a
payload (ncu_classify/read/framing.py). ncu writes one ProfileResult (one profiled kernel) per
block, in launch order, so a report of a subset of the shapes is the same file with the blocks of
the other kernels emptied: the header stays (the first one also carries the session's string
table), its result count and payload size become 0. The kept bytes are real ncu's, unchanged;
ncu_report reads such a file, and every kernel row read from it equals the one read from the
whole report (tests/capture/test_stand_in.py). Reports of several captures are joined the same
way (block streams one after the other, one file header), as ncu appends results of several
processes.

`real_report(folders, groups)` picks, for the groups asked for, the committed capture folders'
reports (their manifests say which report holds which shape) and returns the cut bytes.
"""

from __future__ import annotations

import json
import lzma
import struct
import tempfile
from pathlib import Path

RESULTS, PAYLOAD = 2, 5  # BlockHeader fields: NumResults, PayloadSize


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[pos]
        value |= (byte & 0x7F) << shift
        pos, shift = pos + 1, shift + 7
        if not byte & 0x80:
            return value, pos


def _encode(value: int) -> bytes:
    out = bytearray()
    while True:
        low, value = value & 0x7F, value >> 7
        out.append(low | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _header_fields(header: bytes) -> dict[int, int]:
    """The integer fields of a BlockHeader."""
    out, pos = {}, 0
    while pos < len(header):
        key, pos = _varint(header, pos)
        wire = key & 7
        if wire == 0:
            out[key >> 3], pos = _varint(header, pos)
        elif wire == 2:
            size, pos = _varint(header, pos)
            pos += size
        else:
            pos += 8 if wire == 1 else 4
    return out


def _emptied(header: bytes) -> bytes:
    """The BlockHeader with no result and no payload (every other field as it was)."""
    out, pos = bytearray(), 0
    while pos < len(header):
        start = pos
        key, pos = _varint(header, pos)
        wire, number = key & 7, key >> 3
        if wire == 0:
            _, pos = _varint(header, pos)
            if number in (RESULTS, PAYLOAD):
                out += _encode(key) + _encode(0)
                continue
        elif wire == 2:
            size, pos = _varint(header, pos)
            pos += size
        else:
            pos += 8 if wire == 1 else 4
        out += header[start:pos]
    return bytes(out)


def split(data: bytes) -> tuple[bytes, list[tuple[bytes, bytes, bool]]]:
    """(magic + file header, [(block header, payload, is a result)]) of a plain report."""
    (size,) = struct.unpack("<I", data[4:8])
    pos = 8 + size
    head, blocks = data[:pos], []
    while pos < len(data):
        (size,) = struct.unpack("<I", data[pos : pos + 4])
        header = data[pos + 4 : pos + 4 + size]
        fields = _header_fields(header)
        end = pos + 4 + size + fields.get(PAYLOAD, 0)
        blocks.append((header, data[pos + 4 + size : end], bool(fields.get(RESULTS))))
        pos = end
    return head, blocks


def innermost_ranges(data: bytes) -> list[str]:
    """The innermost NVTX push/pop range of every kernel of a report, in file order, as
    ncu_report reads them."""
    import ncu_report

    with tempfile.NamedTemporaryFile(suffix=".ncu-rep") as handle:
        handle.write(data)
        handle.flush()
        context = ncu_report.load_report(handle.name)
        found = []
        for r in range(context.num_ranges()):
            kernels = context.range_by_idx(r)
            for a in range(kernels.num_actions()):
                stack = kernels.action_by_idx(a).nvtx_state().domain_by_id(0).push_pop_ranges()
                names = [str(name) for name in stack]
                found.append(names[-1] if names else "")
        return found


def cut(data: bytes, keep: set[str]) -> bytes:
    """The block stream of `data` (no file header) with the kernels outside `keep` emptied."""
    ranges = iter(innermost_ranges(data))
    _, blocks = split(data)
    out = bytearray()
    for header, payload, result in blocks:
        if result and next(ranges) not in keep:
            header, payload = _emptied(header), b""
        out += struct.pack("<I", len(header)) + header + payload
    return bytes(out)


def report_bytes(path: Path) -> bytes:
    """A committed report, uncompressed."""
    raw = path.read_bytes()
    return lzma.decompress(raw) if path.name.endswith(".xz") else raw


def holders(folders: list[Path]) -> dict[str, Path]:
    """Group -> the committed report that holds its kernels, from each capture's manifest."""
    found: dict[str, Path] = {}
    for folder in folders:
        manifest = json.loads((folder / "manifest.json").read_text())
        for shape in manifest["shapes"]:
            if shape["status"] == "ok" and shape.get("report"):
                path = folder / shape["report"]
                found.setdefault(
                    shape["group"], path if path.exists() else folder / (shape["report"] + ".xz")
                )
    return found


def real_report(folders: list[Path], groups: set[str]) -> bytes:
    """One report holding exactly the kernels of `groups`, cut from the committed captures;
    KeyError naming the groups no capture holds."""
    where = holders(folders)
    missing = sorted(groups - set(where))
    if missing:
        raise KeyError(f"no committed capture holds {missing}")
    sources = sorted({where[g] for g in groups})
    head = b""
    body = bytearray()
    for path in sources:
        data = report_bytes(path)
        head = head or split(data)[0]
        body += cut(data, groups)
    return head + bytes(body)
