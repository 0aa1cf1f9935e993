"""Run one ncu process over a batch: started in its own process group, logged to a file (never
a pipe we could block on), watched through the replay status file, and stopped without losing
what it has profiled.

Stopping (Ctrl-C, SIGTERM, the deadline) is graceful first: the replay target gets SIGTERM and
stops after the shape in hand, so ncu writes the report of every shape replayed so far; if the
target does not end within the grace time it is killed, and if ncu does not end either, it and
everything below it are (procs.py). A second interrupt kills at once. Reports are written under
a temporary name and renamed when ncu has ended.

ncu may also be signalled by someone else (a scheduler that signals every process of a job, a
`kill -TERM` of the process tree): real ncu then ends its target, writes the report of the shapes
it finished and dies of the signal. That batch was interrupted, not crashed: it says so, and its
unfinished shapes stay `pending`.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.errors import EnvironmentProblem
from ..replay.protocol import BatchFile, StatusTail, write_batch
from .batch import Batch
from .host import device_of
from .manifest import EndedBy, ManifestBatch
from .plan import CaptureOptions, Plan
from .procs import kill_leftover, own_group, runs_under, signal_tree
from .slim import drop_sources

PACKAGE_ROOT = Path(__file__).resolve().parents[2]
# how an ncu that was told to stop from outside ends: killed by, or exiting 128 + (a shell's way)
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
STOPPED_CODES = frozenset(code for sig in STOP_SIGNALS for code in (-sig, 128 + sig))
POLL_S = 0.2
KILL_WAIT_S = 30.0  # after killing the target: time for ncu to write its report


@dataclass
class Stop:
    """Shared by the threads of one capture: `graceful` winds every batch down, `hard` kills."""

    graceful: threading.Event = field(default_factory=threading.Event)
    hard: threading.Event = field(default_factory=threading.Event)


@dataclass
class BatchRun:
    """One ncu process's outcome: its record and the status lines its target wrote."""

    record: ManifestBatch
    tail: StatusTail
    ended_by: EndedBy


def replay_env(gpu: int | None, parallel: int) -> dict[str, str]:
    """Environment of one ncu process: this package importable, its GPU alone visible (`gpu`
    counts within the allocation's CUDA_VISIBLE_DEVICES where that is set), and,
    when `parallel` processes share the host, torch's CPU threads split between them (unless
    OMP_NUM_THREADS is set) so that their input generation does not oversubscribe the cores."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(
            p for p in (str(PACKAGE_ROOT), os.environ.get("PYTHONPATH", "")) if p
        ),
    }
    if gpu is not None:
        env["CUDA_VISIBLE_DEVICES"] = device_of(gpu)
    if parallel > 1:
        env.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // parallel)))
    return env


def run_ncu_batch(
    batch: Batch,
    out: Path,
    plan: Plan,
    options: CaptureOptions,
    gpu: int | None,
    on_shape: Callable[[str, str], None],
    stop: Stop,
) -> BatchRun:
    """Run one ncu process over `batch` until it ends, the deadline passes or `stop` is set."""
    work = out / ".work"
    work.mkdir(parents=True, exist_ok=True)
    status_file = work / f"{batch.name}.status.jsonl"
    status_file.unlink(missing_ok=True)
    for stale in (".ncu-rep", ".ncu-repz"):  # a killed run's leftovers must not pass for ours
        (work / f"{batch.name}.partial{stale}").unlink(missing_ok=True)
    for stale_copy in work.glob("*.slim"):  # --drop-sources' copies, of any killed run
        stale_copy.unlink(missing_ok=True)
    write_batch(
        work / f"{batch.name}.batch.json",
        BatchFile(
            seed=plan.shapes.seed,
            warmup=plan.shapes.warmup,
            cudnn_benchmark=plan.shapes.cudnn_benchmark,
            input_draws=plan.input_draws,
            entries=batch.entries,
            parent_pid=os.getpid(),
            **launch_plan(batch, options),
        ),
    )
    argv = plan.argv[batch.name]
    log = out / f"{batch.name}.ncu.log"
    tail = StatusTail(status_file)
    started = time.monotonic()
    grouped = own_group()
    with log.open("wb") as log_handle:
        proc = _start(argv, log_handle, replay_env(gpu, len(options.gpus)), grouped)
        watch = _Watch(proc, tail, stop, grouped)
        try:
            ended_by = _supervise(watch, on_shape, started + options.timeout_s, options)
        except BaseException:
            watch.kill()
            raise
        watch.sweep(status_file)  # ncu has ended: kill anything of its run still there
    for line in tail.poll():
        on_shape(line.group, line.status)
    report, dropped = _move_report(out, work, batch.name, options.drop_sources)
    record = ManifestBatch(
        name=batch.name,
        report=report.name if report else "",
        argv=argv,
        exit_code=proc.returncode,
        wall_seconds=round(time.monotonic() - started, 2),
        log=log.name,
        groups=[e.group for e in batch.entries],
        gpu=gpu,
        ended_by=ended_by,
        kind=batch.kind,
        dropped_source_bytes=dropped if isinstance(dropped, int) else None,
        sources_kept=dropped if isinstance(dropped, str) else None,
    )
    return BatchRun(record, tail, ended_by)


def launch_plan(batch: Batch, options: CaptureOptions) -> dict[str, Any]:
    """How the target measures each shape of `batch`: a counters batch launches once (N times
    with --repeat-counters), a times batch the other N - 1 times on inputs drawn on the GPU."""
    if batch.kind == "times":
        return {"launches": options.repeat - 1, "first_repeat": 2, "device_inputs": True}
    launches = options.repeat if options.repeat_counters else 1
    if options.keep_outputs is None:
        return {"launches": launches}
    return {"launches": launches, "outputs_dir": str(options.keep_outputs.resolve())}


def _start(
    argv: list[str], log: Any, env: dict[str, str], grouped: bool
) -> subprocess.Popen[bytes]:
    """ncu, in a new session (its own process group) unless inside a job, output to the log."""
    try:
        return subprocess.Popen(
            argv,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            stdin=subprocess.DEVNULL,
            start_new_session=grouped,
        )
    except OSError as exc:
        raise EnvironmentProblem(f"cannot start {argv[0]}: {exc.strerror or exc}") from None


@dataclass
class _Watch:
    """One running ncu, the status tail of its target, and how to signal them."""

    proc: subprocess.Popen[bytes]
    tail: StatusTail
    stop: Stop
    grouped: bool  # ncu leads a process group of its own (procs.own_group)

    def kill(self) -> None:
        """Kill ncu and everything below it, and reap ncu."""
        signal_tree(self.proc.pid, signal.SIGKILL, self.grouped)
        self.proc.wait()

    def sweep(self, status_file: Path) -> None:
        """After ncu ended: kill what is left of its run (its group; inside a job, its target)."""
        signal_tree(self.proc.pid, signal.SIGKILL, self.grouped)
        if not self.grouped:
            kill_leftover(self.tail.env.pid if self.tail.env else None, status_file)

    def wait(self, seconds: float) -> bool:
        """True if ncu ended within `seconds`; False at once on a hard stop."""
        end = time.monotonic() + seconds
        while time.monotonic() < end and not self.stop.hard.is_set():
            if self.proc.poll() is not None:
                return True
            time.sleep(POLL_S)
        return self.proc.poll() is not None


def _supervise(
    watch: _Watch,
    on_shape: Callable[[str, str], None],
    deadline: float,
    options: CaptureOptions,
) -> EndedBy:
    """Wait for ncu, reporting shapes as they finish; wind down on a stop or the deadline. An
    ncu that died of SIGTERM/SIGINT/SIGHUP (or exited 128 + one) was stopped from outside."""
    proc, stop = watch.proc, watch.stop
    while proc.poll() is None:
        for line in watch.tail.poll():
            on_shape(line.group, line.status)
        if stop.hard.is_set():
            watch.kill()
            return "interrupted"
        if stop.graceful.is_set():
            _wind_down(watch, options.stop_grace_s)
            return "interrupted"
        if time.monotonic() > deadline:
            _wind_down(watch, min(options.stop_grace_s, 15.0))
            return "timeout"
        time.sleep(POLL_S)
    if proc.returncode in STOPPED_CODES or stop.graceful.is_set():
        return "interrupted"
    return "finished"


def _wind_down(watch: _Watch, grace: float) -> None:
    """Ask the target to stop after its current shape; kill it, then ncu and what is below
    it, if it does not end in time (a second interrupt kills at once)."""
    watch.tail.poll()
    proc = watch.proc
    target = watch.tail.env.pid if watch.tail.env else None
    if target is None or not runs_under(target, proc.pid, watch.grouped):
        signal_tree(proc.pid, signal.SIGTERM, watch.grouped)  # no target yet: nothing to keep
    else:
        _signal(target, signal.SIGTERM)
        if watch.wait(grace):
            return
        _signal(target, signal.SIGKILL)
    if not watch.wait(KILL_WAIT_S):
        watch.kill()


def _signal(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)


def _move_report(
    out: Path, work: Path, name: str, drop: bool
) -> tuple[Path | None, int | str | None]:
    """Rename ncu's finished report into the capture folder (with `drop`, rewritten without
    its source blocks first); (None, None) if it wrote none, else the report and the bytes
    dropped or why none were. ncu 2026.3 and later write `.ncu-repz` by default, older ones
    `.ncu-rep`."""
    for suffix in (".ncu-rep", ".ncu-repz"):
        produced = work / f"{name}.partial{suffix}"
        report = out / f"{name}{suffix}"
        if produced.exists():
            dropped = drop_sources(produced) if drop else None
            os.replace(produced, report)
            return report, dropped
    return None, None
