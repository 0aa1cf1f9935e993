"""The batch/status protocol between capture and the replay target that runs under ncu.

Capture writes a batch file (the shapes one ncu process replays) and starts ncu on a target
that reads it; the target appends one JSON line per event to a status file, flushed and synced
at once, so that what finished is known even when the target dies: first an `env` line (its
PID and what it runs on), then one `shape` line per shape. The same loop runs the real torch
replay (replay.target), the stand-in target of the tests and the benches.

The target stops between two shapes when it receives SIGTERM (capture's graceful stop: ncu then
writes the report of everything replayed so far) or when the capture process that started it is
gone (nothing would read its results).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from ..shapes.file import ShapeEntry

# The generators of seeded inputs (replay.inputs says how each draws).
InputDraws = Literal["hashed_normal_v1", "torch_cpu_randn"]


class BatchFile(BaseModel):
    """What one ncu process replays, and how."""

    model_config = ConfigDict(extra="forbid")
    seed: int
    warmup: int
    cudnn_benchmark: bool
    entries: list[ShapeEntry]
    parent_pid: int | None = None  # the capture process; the target stops if it is gone
    launches: int = 1  # measured launches per shape, each in its own `repeat#N` range if > 1
    first_repeat: int = 1  # the repeat number of the first of them
    device_inputs: bool = False  # torch_cpu_randn only: the repeats draw on the GPU, no hashes
    input_draws: InputDraws = "hashed_normal_v1"
    # Where to write a sample of each shape's output (replay.outputs), for `try`'s numerics
    outputs_dir: str | None = None

    def repeat_numbers(self) -> list[int] | None:
        """The repeat number of each launch, None for a single launch of the first repeat (no
        nested range: the reports of a capture without --repeat keep their old form)."""
        if self.launches == 1 and self.first_repeat == 1:
            return None
        return list(range(self.first_repeat, self.first_repeat + self.launches))


class EnvLine(BaseModel):
    """First status line: the target's PID and the facts of its machine and libraries."""

    model_config = ConfigDict(extra="allow")
    kind: Literal["env"] = "env"
    pid: int


class ReplayPhases(BaseModel):
    """Where a shape's replay time went, in seconds: building its inputs (draw, hash, copy to
    the GPU), the warm-up launches (unprofiled), the measured launches (under ncu: every replay
    pass of every kernel)."""

    model_config = ConfigDict(extra="forbid")
    inputs: float
    warmup: float
    measured: float


class ShapeLine(BaseModel):
    """One replayed shape: ok, or failed with the reason."""

    model_config = ConfigDict(extra="forbid")
    kind: Literal["shape"] = "shape"
    group: str
    status: Literal["ok", "failed"]
    error: str | None = None
    input_sha256: str | None = None
    backend_used: str | None = None
    seconds: float | None = None
    launches: int | None = None  # measured launches, where there were several
    phases: ReplayPhases | None = None


Replay = Callable[[ShapeEntry, "BatchFile"], dict[str, Any]]  # entry, its batch -> line fields
Describe = Callable[[Exception], str]  # a failed shape's exception -> its error text


def write_batch(path: Path, batch: BatchFile) -> None:
    """Write a batch file for the target."""
    path.write_text(batch.model_dump_json(by_alias=True))


def read_batch(path: Path) -> BatchFile:
    """Read a batch file written by `write_batch`."""
    return BatchFile.model_validate_json(path.read_text(encoding="utf-8"))


class StatusTail:
    """Reads the status lines appended since the last call; a torn last line waits for more,
    and a line that is not a status line is kept as text for the log, never raised."""

    def __init__(self, path: Path) -> None:
        self.path, self.offset = path, 0
        self.env: EnvLine | None = None
        self.shapes: list[ShapeLine] = []
        self.garbage: list[str] = []

    def poll(self) -> list[ShapeLine]:
        """New shape lines since the last poll (the env line is kept in `env`)."""
        try:
            with self.path.open("rb") as handle:
                handle.seek(self.offset)
                data = handle.read()
        except FileNotFoundError:
            return []
        end = data.rfind(b"\n") + 1
        self.offset += end
        new = []
        for raw in data[:end].splitlines():
            line = _parse(raw)
            if isinstance(line, EnvLine):
                self.env = line
            elif isinstance(line, ShapeLine):
                new.append(line)
            elif raw.strip():
                self.garbage.append(raw.decode("utf-8", "replace"))
        self.shapes.extend(new)
        return new


def _parse(raw: bytes) -> EnvLine | ShapeLine | None:
    try:
        doc = json.loads(raw)
        if doc.get("kind") == "env":
            return EnvLine.model_validate(doc)
        return ShapeLine.model_validate(doc)
    except (ValueError, AttributeError):  # pydantic's ValidationError is a ValueError
        return None


class _Stop:
    """Set by SIGTERM: finish the shape in hand, then stop."""

    requested = False

    @classmethod
    def handler(cls, signum: int, frame: object) -> None:
        cls.requested = True


@contextmanager
def stop_on_sigterm() -> Iterator[type[_Stop]]:
    """SIGTERM asks the loop to stop after the current shape; the old handler comes back."""
    _Stop.requested = False
    previous = signal.signal(signal.SIGTERM, _Stop.handler)
    try:
        yield _Stop
    finally:
        signal.signal(signal.SIGTERM, previous)


def alive(pid: int | None) -> bool:
    """True unless `pid` is given and no such process exists."""
    if pid is None:
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def serve_batch(
    batch_path: Path,
    status_path: Path,
    replay: Replay,
    environment: Callable[[], dict[str, Any]],
    describe: Describe,
) -> int:
    """Replay every entry of a batch, one status line each; a failing shape is recorded and the
    batch goes on; SIGTERM or a vanished capture process stops it between two shapes."""
    batch = read_batch(batch_path)
    with status_path.open("a", encoding="utf-8") as status, stop_on_sigterm() as stop:
        _write(status, EnvLine(pid=os.getpid(), **environment()))
        for index, entry in enumerate(batch.entries, 1):
            if stop.requested or not alive(batch.parent_pid):
                print(f"stopping before {entry.group}: asked to stop", file=sys.stderr)
                break
            line = _replay_one(entry, batch, replay, describe)
            _write(status, line)
            print(f"[{index}/{len(batch.entries)}] {entry.group}: {line.status}", file=sys.stderr)
    return 0


def _replay_one(
    entry: ShapeEntry, batch: BatchFile, replay: Replay, describe: Describe
) -> ShapeLine:
    started = time.monotonic()
    try:
        fields = replay(entry, batch)
        line = ShapeLine(group=entry.group, status="ok", **fields)
    except Exception as exc:  # a failing shape must not stop the batch
        line = ShapeLine(group=entry.group, status="failed", error=describe(exc))
    line.seconds = round(time.monotonic() - started, 3)
    return line


def _write(status: Any, line: BaseModel) -> None:
    status.write(json.dumps(line.model_dump(), sort_keys=True) + "\n")
    status.flush()
    os.fsync(status.fileno())


def sample_stem(group: str) -> str:
    """The file stem of a shape's output sample (replay.outputs) for its group id: readable
    characters and a short hash, so that two ids never share a file."""
    import hashlib
    import re

    readable = re.sub(r"[^A-Za-z0-9_.+-]", "_", group)[:80]
    return f"{readable}.{hashlib.sha256(group.encode()).hexdigest()[:8]}"
