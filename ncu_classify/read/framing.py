"""Nsight Compute report files without ncu_report: whether a file is a whole report, and of what.

An `.ncu-rep` (and the `.nsight-cuprof-report` of Nsight Compute 2019.x) is `NVR\\0`, a FileHeader
block, then pairs of a BlockHeader block and its payload. A block is a little-endian uint32 size
and a protobuf message of that size; a BlockHeader's field 5 (PayloadSize) counts the payload that
follows it, itself a run of such blocks (SourceData, ProfileResult... messages, as many as the
header's counters say). The messages are those of `extras/FileFormat/ProfilerReport.proto` shipped
with Nsight Compute. A report written to the end stops exactly after a payload, so a file cut
anywhere else is caught here, by seeking from block to block without reading payloads.
FileHeader.Version was 7 in every report seen, from Nsight Compute 2019.x to 2025.3.

An `.ncu-repz` (the default of Nsight Compute 2026.3) is, as ncu_report 2026.3.1 reads it, that
same stream compressed whole with zstd (ncu_report picks zstd by the suffix alone); its zstd frame
and block headers are walked the same way, the report inside is not decompressed here.
"""

from __future__ import annotations

import contextlib
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from ..core.errors import ReportError

REPORT_MAGIC = b"NVR\x00"
ZSTD_MAGIC = 0xFD2FB528
SUPPORTED_FORMAT = 7  # FileHeader.Version of every report from Nsight Compute 2019.1 to 2025.3
MAX_HEADER_BYTES = 64 << 20  # largest BlockHeader seen: 135 KB (a --set full string table)
NCU_PROVIDER = "Nsight Compute Target"  # VersionInfo provider naming the ncu that profiled
# BlockHeader counters of the messages in the payload: NumSources, NumResults (kernels),
# NumRangeResults, NumCmdlistResults, NumGraphResults, NumGraphs.
_MESSAGE_COUNTERS = (1, 2, 7, 8, 9, 10)
_KERNEL_COUNTER = 2
_SOURCE_COUNTER = 1
_PAYLOAD_SIZE = 5  # BlockHeader.PayloadSize
# What parsing hostile bytes can raise besides ReportError (a bad varint, a cut struct, a
# count too large): the report's fault, never the reader's, so each becomes its ReportError.
BAD_BYTES: tuple[type[Exception], ...] = (
    ValueError,  # UnicodeDecodeError too
    IndexError,
    KeyError,
    struct.error,
    OverflowError,
    MemoryError,
    EOFError,
)


@dataclass
class ReportInfo:
    """What the framing of a report says: container kind, format version, tools, result count."""

    kind: str  # ".ncu-rep" (plain block stream) or ".ncu-repz" (zstd), from the content
    size: int
    format_version: int | None = None  # FileHeader.Version; None inside zstd
    tool_versions: dict[str, str] = field(default_factory=dict)  # VersionInfo provider -> version
    kernels: int | None = None  # ProfileResults (profiled kernels) the block headers announce
    # [start, end) of each block that holds source messages alone (SASS and CUDA source of the
    # profiled modules: 88 % of a capture's bytes, none of its counters)
    source_blocks: list[tuple[int, int]] = field(default_factory=list)
    # (offset, kernels) of each block header that announces kernels (ProfileResults), in order:
    # where an error about a kernel points. A lean copy keeps those of the user's file, which
    # the user can look at, so they are no part of comparing framings.
    kernel_blocks: list[tuple[int, int]] = field(default_factory=list, compare=False)

    def kernel_block(self, index: int) -> int | None:
        """Offset of the block header whose payload holds the report's kernel `index`."""
        seen = 0
        for offset, kernels in self.kernel_blocks:
            seen += kernels
            if index < seen:
                return offset
        return None

    @property
    def ncu_version(self) -> str | None:
        """`2025.3.1.0` for a report profiled by Nsight Compute 2025.3.1 (absent before 2020)."""
        version = self.tool_versions.get(NCU_PROVIDER)
        return version.split()[0] if version else None


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    """Decode one protobuf varint at `pos`; ValueError when it runs off the end."""
    if pos < len(data) and data[pos] < 0x80:  # one byte: most keys, sizes and counters
        return data[pos], pos + 1
    value = shift = 0
    while True:
        if pos >= len(data) or shift > 63:
            raise ValueError("varint runs off the message")
        byte = data[pos]
        value |= (byte & 0x7F) << shift
        pos, shift = pos + 1, shift + 7
        if not byte & 0x80:
            return value, pos


def _fields(data: bytes) -> list[tuple[int, int | bytes]]:
    """Top-level (field number, value) pairs of a protobuf message: ints and raw bytes."""
    out: list[tuple[int, int | bytes]] = []
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        wire = key & 7
        if wire == 0:
            value, pos = _varint(data, pos)
            out.append((key >> 3, value))
            continue
        if wire == 2:
            size, pos = _varint(data, pos)
        elif wire in (1, 5):
            size = 8 if wire == 1 else 4
        else:
            raise ValueError(f"unsupported wire type {wire}")
        if pos + size > len(data):
            raise ValueError("field runs off the message")
        out.append((key >> 3, data[pos : pos + size]))
        pos += size
    return out


def _versions(session: bytes) -> dict[str, str]:
    """VersionInfo entries (provider -> version) of a ReportSessionDetails message."""
    out: dict[str, str] = {}
    for number, value in _fields(session):
        if number == 8 and isinstance(value, bytes):
            info = {n: v for n, v in _fields(value) if isinstance(v, bytes)}
            out[info.get(1, b"").decode(errors="replace")] = info.get(2, b"").decode(
                errors="replace"
            )
    return out


class _Reader:
    """Seeks through one report file and raises ReportError naming it."""

    def __init__(self, handle: BinaryIO, size: int, label: str) -> None:
        self.handle, self.size, self.label = handle, size, label
        self.at = 0  # the offset last read from, for an error no check foresaw

    def fail(self, what: str) -> ReportError:
        """A one-line ReportError that starts with the file."""
        return ReportError(f"{self.label}: {what}")

    def read(self, pos: int, size: int, what: str) -> bytes:
        """`size` bytes at `pos`, or a truncation error naming `what` declared them."""
        if pos + size > self.size:
            raise self.fail(
                f"truncated: {what} at byte {pos} declares {size} bytes "
                f"but the file ends at byte {self.size}"
            )
        self.at = pos
        self.handle.seek(pos)
        return self.handle.read(size)

    def block(self, pos: int, what: str) -> tuple[int, int]:
        """(body start, body size) of the uint32-framed block at `pos`, checked to fit."""
        if pos + 4 > self.size:
            raise self.fail(
                f"truncated: the size of the {what} at byte {pos} is cut "
                f"(the file ends at byte {self.size})"
            )
        (size,) = struct.unpack("<I", self.read(pos, 4, what))
        if pos + 4 + size > self.size:
            raise self.fail(
                f"truncated: {what} at byte {pos} declares {size} bytes "
                f"but the file ends at byte {self.size}"
            )
        return pos + 4, size


def _file_header(reader: _Reader) -> tuple[int, int]:
    """(FileHeader.Version, offset of the first block header) of a plain report."""
    start, size = reader.block(4, "file header")
    try:
        fields = dict(_fields(reader.read(start, size, "file header")))
    except ValueError as exc:
        raise reader.fail(f"corrupt: file header at byte 4 is not a FileHeader ({exc})") from None
    version = fields.get(1)
    if not isinstance(version, int):  # ncu_report then logs a protobuf error and reads nothing
        raise reader.fail("corrupt: the file header at byte 4 holds no format version")
    return version, start + size


def _block_header(reader: _Reader, pos: int, info: ReportInfo) -> tuple[int, int, int]:
    """Parse the BlockHeader at `pos` into `info` (a block of sources alone is noted in
    `source_blocks`); (payload start, payload size, messages)."""
    start, size = reader.block(pos, "block header")
    if size == 0 or size > MAX_HEADER_BYTES:  # ncu always writes its counters: never empty
        zeroed = " (zero-filled from there?)" if size == 0 else ""
        raise reader.fail(f"corrupt: block header at byte {pos} declares {size} bytes{zeroed}")
    try:
        fields = _fields(reader.read(start, size, "block header"))
        for number, value in fields:  # the session details (field 3) name the tools
            if number == 3 and isinstance(value, bytes):
                info.tool_versions.update(_versions(value))
    except ValueError as exc:
        raise reader.fail(f"corrupt: block header at byte {pos} is unreadable ({exc})") from None
    counts = {n: v for n, v in fields if isinstance(v, int)}
    info.kernels = (info.kernels or 0) + counts.get(_KERNEL_COUNTER, 0)
    if counts.get(_KERNEL_COUNTER):
        info.kernel_blocks.append((pos, counts[_KERNEL_COUNTER]))
    messages = sum(counts.get(n, 0) for n in _MESSAGE_COUNTERS)
    payload = counts.get(_PAYLOAD_SIZE, 0)
    if messages and messages == counts.get(_SOURCE_COUNTER, 0):
        info.source_blocks.append((pos, start + size + payload))
    return start + size, payload, messages


def _payload(reader: _Reader, header: int, start: int, size: int, messages: int) -> None:
    """Check the payload after the block header at `header` holds exactly `messages` blocks
    (stepping at most that many, so that a zeroed region cannot make it crawl)."""
    if start + size > reader.size:
        raise reader.fail(
            f"truncated: block header at byte {header} announces a {size}-byte payload at "
            f"byte {start} but the file ends at byte {reader.size}"
        )
    pos, count = start, 0
    while count < messages and pos < start + size:
        body, length = reader.block(pos, "payload message")
        pos, count = body + length, count + 1
    if pos != start + size or count != messages:
        raise reader.fail(
            f"corrupt: payload at byte {start}: {count} messages end at byte {pos}; its header "
            f"at byte {header} announces {messages} ending at byte {start + size}"
        )


def _walk_blocks(reader: _Reader, pos: int, info: ReportInfo) -> None:
    """Walk every block from `pos`; ReportError at the first one that does not fit."""
    info.kernels = 0
    info.source_blocks, info.kernel_blocks = [], []
    while pos < reader.size:
        start, size, messages = _block_header(reader, pos, info)
        _payload(reader, pos, start, size, messages)
        pos = start + size


def _walk_plain(reader: _Reader) -> ReportInfo:
    """Walk a plain report: strictly in format 7; in any other, only to learn its tool versions
    (another format may frame differently, so ncu_report has the last word there)."""
    info = ReportInfo(kind=".ncu-rep", size=reader.size)
    info.format_version, pos = _file_header(reader)
    if info.format_version == SUPPORTED_FORMAT:
        _walk_blocks(reader, pos, info)
        return info
    with contextlib.suppress(ReportError):
        _walk_blocks(reader, pos, info)
    info.kernels = None
    return info


def _zstd_frame_header(reader: _Reader, pos: int) -> tuple[int, bool]:
    """(offset of the first block, has checksum) of the zstd frame whose magic is at `pos`."""
    (descriptor,) = reader.read(pos + 4, 1, "zstd frame header")
    if descriptor & 0x08:
        raise reader.fail(f"corrupt: zstd frame at byte {pos} sets a reserved bit")
    single = bool(descriptor & 0x20)
    content_size = (1 if single else 0, 2, 4, 8)[descriptor >> 6]
    header = 1 + (0 if single else 1) + (0, 1, 2, 4)[descriptor & 3] + content_size
    reader.read(pos + 4, header, "zstd frame header")
    return pos + 4 + header, bool(descriptor & 0x04)


def _zstd_frame(reader: _Reader, pos: int) -> int:
    """Walk the blocks of the zstd frame at `pos`; the offset just after it."""
    pos, checksum = _zstd_frame_header(reader, pos)
    last = False
    while not last:
        header = int.from_bytes(reader.read(pos, 3, "zstd block header"), "little")
        last, kind, size = bool(header & 1), (header >> 1) & 3, header >> 3
        if kind == 3:
            raise reader.fail(f"corrupt: zstd block at byte {pos} has the reserved type")
        body = 1 if kind == 1 else size  # an RLE block stores its one byte
        if pos + 3 + body > reader.size:
            raise reader.fail(
                f"truncated: zstd block at byte {pos} declares {body} bytes "
                f"but the file ends at byte {reader.size}"
            )
        pos += 3 + body
    if checksum:
        reader.read(pos, 4, "zstd frame checksum")
        pos += 4
    return pos


def _walk_zstd(reader: _Reader) -> ReportInfo:
    """Walk the zstd frames of an .ncu-repz (skippable frames included) to its last byte."""
    pos = 0
    while pos < reader.size:
        (magic,) = struct.unpack("<I", reader.read(pos, 4, "zstd frame magic"))
        if magic == ZSTD_MAGIC:
            pos = _zstd_frame(reader, pos)
        elif magic & 0xFFFFFFF0 == 0x184D2A50:  # skippable frame
            start, size = reader.block(pos + 4, "skippable zstd frame")
            pos = start + size
        else:
            raise reader.fail(f"corrupt: no zstd frame at byte {pos} (bytes after the report?)")
    return ReportInfo(kind=".ncu-repz", size=reader.size)


def check_report(path: Path, label: Path | str | None = None) -> ReportInfo:
    """Check that the report at `path` is whole before ncu_report, which takes a cut file for a
    shorter one, opens it; errors name `label` (default: `path`)."""
    with path.open("rb") as handle:
        reader = _Reader(handle, path.stat().st_size, str(label or path))
        head = handle.read(4)
        try:
            if head == REPORT_MAGIC:
                return _walk_plain(reader)
            if len(head) == 4 and struct.unpack("<I", head)[0] == ZSTD_MAGIC:
                return _walk_zstd(reader)
        except BAD_BYTES as exc:  # every check above missed it: still this report's error
            raise reader.fail(
                f"corrupt: unreadable at or after byte {reader.at} ({type(exc).__name__}: {exc})"
            ) from None
    raise reader.fail("not an Nsight Compute report (bad file header)")


def version_message(label: Path | str, info: ReportInfo, installed: str) -> str:
    """The one-line error for a report whose format the installed ncu-report does not read."""
    fmt = info.format_version
    ncu = info.ncu_version
    writer = f"Nsight Compute {ncu}" if ncu else "an unknown Nsight Compute"
    if fmt is not None and fmt < SUPPORTED_FORMAT:
        return (
            f"{label}: written by {writer} in report format {fmt}, older than format "
            f"{SUPPORTED_FORMAT}, the only one the installed ncu-report {installed} reads"
        )
    return (
        f"{label}: written by {writer} (report format {fmt}); the installed ncu-report "
        f"{installed} reads up to format {SUPPORTED_FORMAT}: upgrade with pip install -U ncu-report"
    )
