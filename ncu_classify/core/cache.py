"""Validated input files kept by content hash, so that a fresh process need not parse them
again: ruamel's round-trip loader takes 0.1-0.16 s for the packaged 4 KB rules file in a new
process, a tenth of classifying a 400-kernel report. An entry is the model's JSON, named by the
SHA-256 of the file's text, the model and the tool's version; it is read back only if it
validates as the model. Any problem reading or writing the cache is ignored: the file is then
parsed as before. `NCU_CLASSIFY_CACHE` names the folder (default: `$XDG_CACHE_HOME` or
`~/.cache`, then `ncu-classify`); `off` turns the cache off."""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from .._version import __version__
from .atomic import write_text_atomic

CACHE_ENV = "NCU_CLASSIFY_CACHE"
MAX_ENTRY_BYTES = 1 << 20
M = TypeVar("M", bound=BaseModel)


def cache_dir() -> Path | None:
    """The cache folder, or None when the cache is off."""
    chosen = os.environ.get(CACHE_ENV)
    if chosen is not None:
        return None if chosen.strip().lower() in ("", "off") else Path(chosen)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "ncu-classify"


def _entry(model: type[BaseModel], digest: str) -> Path | None:
    folder = cache_dir()
    return None if folder is None else folder / f"{model.__name__}-{__version__}-{digest}.json"


def cached(model: type[M], digest: str) -> M | None:
    """The model kept for the file whose text hashes to `digest`, or None (no entry, or one
    that is unreadable, too large or no longer valid)."""
    entry = _entry(model, digest)
    try:
        if entry is None:
            return None
        info = entry.stat()
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_ENTRY_BYTES:
            return None  # a FIFO or a device there would block or never end
        return model.model_validate_json(entry.read_bytes())
    except (OSError, ValidationError, ValueError):
        return None


def keep(value: BaseModel, digest: str) -> None:
    """Keep `value`, validated from the file whose text hashes to `digest` (best effort)."""
    entry = _entry(type(value), digest)
    if entry is None:
        return
    with contextlib.suppress(OSError):
        write_text_atomic(entry, value.model_dump_json())
