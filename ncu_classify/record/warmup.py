"""`record --start-at MODULE:N`: the program's warm-up, everything it runs before the Nth call
of a module (compiling, tuning, a first inference), runs as it would without the recorder and
counts as model building (its kernels in `setup_kernel_us`); the recording starts at that call.
A compiled program's first inference runs other graphs or tunes, so without it the recording
mixes two inferences, and the plain program's time per inference cannot be checked against it.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass
from typing import Any

from ..core.errors import UsageError

WARMUP = "ncu_classify warm-up"  # the profiler range around the warm-up: its kernels are setup


@dataclass
class StartAt:
    """Where the recording starts: the `call`th call of a module whose path matches `pattern`
    (fnmatch, as `--stage`), counted from the program's start."""

    pattern: str
    call: int
    seen: int = 0  # the calls of matching modules so far
    _range: Any = None

    @property
    def text(self) -> str:
        return f"{self.pattern}:{self.call}"

    @property
    def started(self) -> bool:
        return self.seen >= self.call

    def begin(self, clock: Any) -> None:
        """The warm-up starts with the recording: its range opens (`timing.KernelClock`'s, when
        kernels are timed)."""
        if self._range is None:
            self._range = clock.open_range(WARMUP)

    def entered(self, path: str) -> bool:
        """A module at `path` is called: whether the recording starts with this call."""
        if self.started or not fnmatch.fnmatchcase(path, self.pattern):
            return False
        self.seen += 1
        if self.started:
            self.end()
        return self.started

    def end(self) -> None:
        """The warm-up's range closes (at the cut, or when the recording ends before it)."""
        if self._range is not None:
            self._range.__exit__(None, None, None)
            self._range = None

    def never(self) -> str:
        """Why nothing was recorded, when the program ended before the cut."""
        ran = "never ran" if not self.seen else f"ran {self.seen} time{'s' * (self.seen > 1)}"
        return (
            f"--start-at {self.text}: a module matching '{self.pattern}' {ran}, so the program"
            " ended before the recording would start: nothing was recorded, no shapes file"
            " written (the module paths are those of --stage: `transformer`, `vae.decoder`)"
        )


def parse_start_at(text: str) -> StartAt:
    """`MODULE:N`: a module path pattern and the call (1 or more) the recording starts at."""
    match = re.fullmatch(r"(.+):(\d{1,9})", text.strip())
    if match is None or int(match.group(2)) < 1:
        raise UsageError(
            f"--start-at {text!r}: expected MODULE:N, the Nth call (1 or more) of a module"
            " path pattern, e.g. 'transformer:3' or 'vae*:2'"
        )
    return StartAt(match.group(1), int(match.group(2)))
