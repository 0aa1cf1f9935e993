"""The reader pool cannot deadlock on shutdown (hardening item 1).

The suite once hung for 12 minutes in multiprocessing.Pool.terminate: a CLI test had left a
SIGTERM handler installed, a freshly forked pool worker inherited it, lost the one SIGTERM that
terminate sends, and blocked on the task queue while the parent waited for it forever.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import pytest
from helpers import SMOKE

from ncu_classify.read import parallel
from ncu_classify.read.workers import WorkerFailure, run_in_children
from ncu_classify.verdicts.judge import kernel_card
from ncu_classify.verdicts.rules import LoadedRules


def _double(x: int) -> int:
    return 2 * x


def _misbehave(x: int) -> int:
    if x == 1:
        os.kill(os.getpid(), signal.SIGSEGV)
    if x == 2:
        raise ValueError("bad input 2")
    if x == 3:
        os._exit(3)
    return x


def test_no_hang_with_a_caught_sigterm_inherited() -> None:
    """The condition that hung Pool.terminate: a Python SIGTERM handler in the parent. 25
    rounds of short tasks (Pool hung within seconds this way) each finish in bounded time."""
    previous = signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        for _ in range(25):
            began = time.monotonic()
            assert sorted(run_in_children(_double, [1, 2, 3, 4], 2)) == [
                (0, 2), (1, 4), (2, 6), (3, 8),
            ]  # fmt: skip
            # a hang never ends; a round takes ~0.1 s idle and ~1 s on a loaded 2-core machine
            assert time.monotonic() - began < 30
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_children_that_die_are_reported_not_waited_for() -> None:
    results = dict(run_in_children(_misbehave, [0, 1, 2, 3, 4], 3))
    assert results[0] == 0 and results[4] == 4
    assert results[1] == WorkerFailure("worker process died of signal 11 (SIGSEGV)")
    assert results[2] == WorkerFailure("ValueError: bad input 2")
    assert results[3] == WorkerFailure("worker process exited with code 3 without a result")


def _sleep(x: int) -> int:
    if x:
        time.sleep(600)
    return os.getpid()


def test_leaving_early_kills_every_child() -> None:
    results = run_in_children(_sleep, [0, 1, 1], 3)
    index, _ = next(results)
    assert index == 0
    started = time.monotonic()
    results.close()  # like an exception or Ctrl-C in the caller
    assert time.monotonic() - started < 5
    children = Path(f"/proc/{os.getpid()}/task/{os.getpid()}/children")
    assert children.read_text().split() == []  # all killed and reaped: no zombie, no orphan


def test_a_report_that_crashes_its_reader_is_pinned_on_it(
    rules: LoadedRules, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A native crash while reading one report fails that report alone, also after the child
    sent part of its rows; the batch it was in is read again one report per child."""
    real = parallel._read_parts

    def crashing(unit):  # type: ignore[no-untyped-def]
        parts = real(unit)
        if unit.label.name == "vae.ncu-rep.xz":
            yield next(parts)  # sent to the parent and unpickled there, then the crash
            os.kill(os.getpid(), signal.SIGSEGV)
        yield from parts

    monkeypatch.setattr(parallel, "_read_parts", crashing)
    monkeypatch.setattr(parallel, "_threaded", lambda: False)  # torch may be loaded here
    paths = sorted(SMOKE.glob("*.ncu-rep.xz"))
    results = parallel.read_all(paths, 2, partial(kernel_card, rules=rules))
    for path, result in zip(paths, results, strict=True):
        if path.name == "vae.ncu-rep.xz":
            assert result == (
                f"{path}: the report reader failed on it: worker process died of signal 11"
                " (SIGSEGV)"
            )
        else:
            assert isinstance(result, list) and result


def test_progress_counts_every_report(rules: LoadedRules, monkeypatch: pytest.MonkeyPatch) -> None:
    paths = sorted(SMOKE.glob("*.ncu-rep.xz")) * 2
    monkeypatch.setattr(parallel, "_threaded", lambda: False)
    for jobs in (1, 3):
        seen: list[tuple[int, int]] = []
        parallel.read_all(
            paths,
            jobs,
            partial(kernel_card, rules=rules),
            lambda d, t, seen=seen: seen.append((d, t)),
        )
        assert seen[-1] == (8, 8) and [d for d, _ in seen] == sorted(d for d, _ in seen)


def _touch(path: str) -> str:
    """Made when the parent unpickles a _Marker: leaves a file the child can see."""
    Path(path).touch()
    return "marker"


class _Marker:
    def __init__(self, path: Path) -> None:
        self.path = str(path)

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return _touch, (self.path,)


def _streams(folder: Path) -> Iterator[object]:
    """Yields a marker, then waits (up to 20 s) for the parent to have unpickled it."""
    seen = folder / "seen"
    yield _Marker(seen)
    deadline = time.monotonic() + 20
    while not seen.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    yield "the parent had it" if seen.exists() else "the parent had nothing yet"


def _fails_midway(x: int) -> Iterator[int]:
    yield x
    raise ValueError(f"bad after {x}")


def test_an_iterators_items_reach_the_parent_while_the_child_runs(tmp_path: Path) -> None:
    [(index, items)] = list(run_in_children(_streams, [tmp_path], 1))
    assert (index, items) == (0, ["marker", "the parent had it"])


def test_an_iterator_that_fails_midway_fails_its_task() -> None:
    results = dict(run_in_children(_fails_midway, [1, 2], 2))
    assert results == {
        0: WorkerFailure("ValueError: bad after 1"),
        1: WorkerFailure("ValueError: bad after 2"),
    }


def _leaves_midway(x: int) -> Iterator[int]:
    yield x
    os._exit(0)  # as native code can: a clean exit, no end of items


def test_a_child_that_leaves_midway_fails_without_its_items_as_the_reason() -> None:
    [(index, outcome)] = list(run_in_children(_leaves_midway, [7], 1))
    assert (index, outcome) == (
        0,
        WorkerFailure("worker process exited with code 0 without a result"),
    )
