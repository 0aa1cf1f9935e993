"""Where a compiled region's graph breaks are: dynamo logs each break with its place in the
user's code (`graph_breaks` artifact: "Graph break in user code at FILE:LINE"), which its
counters (the reasons) do not keep. While recording, that log is read by a handler of its
own (and not printed, unless the program's `TORCH_LOGS=graph_breaks` asked for it), so the
shapes file can say where each break is and why."""

from __future__ import annotations

import logging
import os
import re

LOGGER = "torch._dynamo.symbolic_convert.__graph_breaks"  # torch's artifact logger
_SITE = re.compile(r"in user code at (.+?):(\d+)\nGraph Break Reason: (.*)", re.S)
_FRAME = re.compile(r'File "(.+?)", line (\d+)')  # a frame of the break's user stack
_WRAPPED = "Encountered graph break when attempting"  # dynamo's frame around the real reason


class BreakSites(logging.Handler):
    """dynamo's graph-break log, read while recording: `sites` is `file:line` -> the reason's
    first line (the place relative to the current folder, or to `site-packages`)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.sites: dict[str, str] = {}
        self._kept: tuple[int, bool] | None = None

    def start(self) -> BreakSites:
        """The handler on dynamo's logger, enabled (quiet) where the program had not."""
        log = logging.getLogger(LOGGER)
        if not log.isEnabledFor(logging.DEBUG):
            self._kept = (log.level, log.propagate)
            log.setLevel(logging.DEBUG)
            log.propagate = False
        log.addHandler(self)
        return self

    def stop(self) -> None:
        """The logger as it was."""
        log = logging.getLogger(LOGGER)
        log.removeHandler(self)
        if self._kept is not None:
            log.setLevel(self._kept[0])
            log.propagate = self._kept[1]
            self._kept = None

    def emit(self, record: logging.LogRecord) -> None:
        """One break: its place (the innermost frame of its stack outside torch: a break at a
        `torch.compiler.disable`d forward is where the program calls it, not torch's module
        call) and reason kept (the first reason seen at a place)."""
        try:
            found = _SITE.search(record.getMessage())
        except (TypeError, ValueError):  # (a record that cannot be formatted: not ours to fix)
            return
        if found is None:
            return
        path, line, reason = found.groups()
        reason, _, stack = reason.partition("\nUser code traceback:")
        frames = [f for f in _FRAME.findall(stack) if "/torch/" not in f[0].replace("\\", "/")]
        path, line = frames[-1] if frames else (path, line)  # the program's, not torch's own
        parts = [p.strip() for p in reason.split("\n\n")]
        parts = [p for p in parts if p]
        if len(parts) > 1 and parts[0].startswith(_WRAPPED):
            parts = parts[1:]
        lines = [x.strip() for x in "\n".join(parts).splitlines() if x.strip()] or [""]
        why = lines[1] if lines[0].endswith("encountered:") and len(lines) > 1 else lines[0]
        why = re.sub(r" at 0x[0-9a-fA-F]+", "", why)[:200]
        self.sites.setdefault(f"{_short(path)}:{line}", why)


def _short(path: str) -> str:
    """A source path as the user reads it: relative to the current folder when inside it, else
    from `site-packages/` on (a library's file), else as it is."""
    try:
        relative = os.path.relpath(path)
    except ValueError:  # (another drive)
        relative = path
    if not relative.startswith(".."):
        return relative
    return path.split("site-packages/", 1)[-1]
