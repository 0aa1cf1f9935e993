"""Compressed reports (`.ncu-rep.xz`, `.gz`, `.bz2`) inflated into a temporary file, since
ncu_report reads only from a path: checked at their first bytes and capped in size while they
are inflated, so that a compression bomb or a compressed non-report fails early and alone."""

from __future__ import annotations

import bz2
import contextlib
import gzip
import lzma
import tempfile
import zlib
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any, BinaryIO

from ..core.errors import ReportError
from .framing import BAD_BYTES, REPORT_MAGIC

_DECOMPRESSORS: dict[str, ModuleType] = {".xz": lzma, ".gz": gzip, ".bz2": bz2}
# What a damaged compressed report raises (gzip: zlib.error on bad deflate data)
_UNREADABLE: tuple[type[Exception], ...] = (OSError, lzma.LZMAError, zlib.error, *BAD_BYTES)


ZSTD_MAGIC_BYTES = b"\x28\xb5\x2f\xfd"


# Inflated reports may grow this many times their compressed size (xz shrinks real reports
# about 16x), and always to MIN_INFLATE_CAP: more is a compression bomb, not a report.
INFLATE_RATIO = 200


MIN_INFLATE_CAP = 256 << 20


CHUNK = 1 << 20


def inflated_size(path: Path) -> int | None:
    """The uncompressed size a compressed report declares (xz: its streams' indexes; gzip: its
    trailer, modulo 4 GiB), read from its last bytes without inflating it; None where it
    declares none (bz2) or cannot be read: its reader reports that."""
    try:
        with path.open("rb") as handle:
            if path.suffix == ".xz":
                return _xz_size(handle)
            if path.suffix == ".gz":
                handle.seek(-4, 2)
                return int.from_bytes(handle.read(4), "little")
    except (OSError, ValueError, IndexError):
        return None
    return None


def _xz_size(handle: BinaryIO) -> int | None:
    """Sum of the uncompressed sizes in the indexes of every stream of an xz file, walking
    back from its end (stream padding, footer, index, blocks, header); None if malformed."""
    end = handle.seek(0, 2)
    total = 0
    while end > 0:
        start = max(0, end - 4096)
        handle.seek(start)
        tail = handle.read(end - start).rstrip(b"\0")  # stream padding
        end = start + len(tail)
        if end < 24 or tail[-2:] != b"YZ":
            return None
        index_size = (int.from_bytes(tail[-8:-4], "little") + 1) * 4
        handle.seek(end - 12 - index_size)
        index = handle.read(index_size)
        if not index or index[0] != 0:
            return None
        pos, records = _varint(index, 1)
        blocks = 0
        for _ in range(records):
            pos, unpadded = _varint(index, pos)
            pos, size = _varint(index, pos)
            blocks += (unpadded + 3) // 4 * 4
            total += size
        end -= 12 + index_size + blocks + 12  # footer, index, blocks, header
    return total if end == 0 else None


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    """xz's multibyte integer at `pos`: the position after it and its value."""
    value = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return pos, value
        if shift > 63:
            raise ValueError("xz integer too long")


@contextlib.contextmanager
def plain_file(path: Path, scratch: Path | None = None) -> Iterator[Path]:
    """The report as an uncompressed file on disk: a temporary copy for compressed ones, in
    `scratch` when given (the caller then owns its clean-up, also when this process is killed),
    checked at its first bytes and capped in size while it is inflated."""
    module = _DECOMPRESSORS.get(path.suffix)
    if module is None:
        yield path
        return
    with tempfile.TemporaryDirectory(prefix="ncu-classify-", dir=scratch) as tmp:
        plain = Path(tmp) / path.name.removesuffix(path.suffix)
        try:
            with _opened(module, path) as src, plain.open("wb") as dst:
                _inflate(src, dst, path, plain.name)
        except _UNREADABLE as exc:
            raise ReportError(f"{path}: cannot decompress: {exc}") from None
        yield plain


def _opened(module: ModuleType, path: Path) -> Any:
    """A reader of the decompressed bytes: xz through `XzStreams` (Python's own reader refuses
    the stream padding that `xz` writes and accepts), the others through their module."""
    return XzStreams(path) if module is lzma else module.open(path, "rb")


class XzStreams:
    """The decompressed bytes of an xz file of one or more streams, with or without stream
    padding (null bytes, a multiple of four, after a stream), read in chunks."""

    def __init__(self, path: Path) -> None:
        self._raw = path.open("rb")
        self._decoder: lzma.LZMADecompressor | None = lzma.LZMADecompressor(lzma.FORMAT_XZ)
        self._pending = b""  # compressed bytes read but not yet decoded

    def __enter__(self) -> XzStreams:
        return self

    def __exit__(self, *_: object) -> None:
        self._raw.close()

    def read(self, size: int) -> bytes:
        """Up to `size` decompressed bytes; b"" at the end of the file."""
        while self._decoder is not None:
            if self._decoder.eof:  # a stream ended: padding, then the next stream or the end
                self._pending = self._decoder.unused_data + self._pending
                self._pending = self._pending.lstrip(b"\0") or self._raw.read(CHUNK).lstrip(b"\0")
                while not self._pending and (more := self._raw.read(CHUNK)):
                    self._pending = more.lstrip(b"\0")
                self._decoder = lzma.LZMADecompressor(lzma.FORMAT_XZ) if self._pending else None
                continue
            if not self._pending and self._decoder.needs_input:
                self._pending = self._raw.read(CHUNK)
                if not self._pending:
                    raise EOFError("compressed file ended before the end-of-stream marker")
            data = self._decoder.decompress(self._pending, max_length=size)
            self._pending = b""
            if data:
                return data
        return b""


def _inflate(src: Any, dst: Any, path: Path, inner: str) -> None:
    """Copy `src` to `dst`, refusing a wrong header at once and a bomb before the disk fills."""
    cap = max(MIN_INFLATE_CAP, INFLATE_RATIO * path.stat().st_size)
    expected = ZSTD_MAGIC_BYTES if inner.endswith(".ncu-repz") else REPORT_MAGIC
    first = src.read(CHUNK)
    if first[:4] not in (REPORT_MAGIC, ZSTD_MAGIC_BYTES):
        raise ReportError(
            f"{path}: not an Nsight Compute report (bad file header once decompressed;"
            f" expected {expected!r})"
        )
    written = 0
    chunk = first
    while chunk:
        written += len(chunk)
        if written > cap:
            raise ReportError(
                f"{path}: inflates to more than {cap:,} bytes ({INFLATE_RATIO}x its size):"
                " not a report (a compression bomb?)"
            )
        dst.write(chunk)
        chunk = src.read(CHUNK)
