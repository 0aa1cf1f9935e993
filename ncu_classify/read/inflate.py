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
from typing import Any

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
            with module.open(path, "rb") as src, plain.open("wb") as dst:
                _inflate(src, dst, path, plain.name)
        except _UNREADABLE as exc:
            raise ReportError(f"{path}: cannot decompress: {exc}") from None
        yield plain


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
