"""Capture: replay every shape under ncu and keep a manifest that says what really happened.

Batches run one ncu process each (ncu_runner); with several GPUs, one queue per GPU runs in its
own thread (ncu serialises profiling per GPU through a lock file named after the GPU's UUID, so
one ncu per GPU is the most that helps), and the main thread only waits, so that Ctrl-C or
SIGTERM reaches it and winds every queue down. The manifest is rewritten after every batch and
after an interrupt: shapes whose kernels are in a report are `ok`, shapes that failed say why,
shapes never started stay `pending` for --resume.
"""

from __future__ import annotations

import itertools
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from .._version import __version__
from ..core.clock import utc_now
from ..core.text import unicode_safe
from .batch import Batch
from .drill import capture_metrics
from .folder import capture_lock, writing
from .host import Host, counters_refused, probe
from .jobs import check_job_script
from .manifest import (
    HostInfo,
    Manifest,
    ManifestShape,
    below_target,
    manifest_shape,
    report_kept,
    write_manifest,
)
from .ncu import BatchRun, Stop, run_ncu_batch
from .outcome import apply_status, count_kernels
from .plan import CaptureOptions, Plan, batch_argv, on_host, plan_capture
from .shards import input_units, unit_cost

CaptureProgress = Callable[[int, int, str, str], None]  # done, total, group, status

__all__ = ["CaptureOptions", "Plan", "apply_status", "capture", "count_kernels", "plan_capture"]


def capture(
    shapes_path: Path,
    out: Path,
    options: CaptureOptions | None = None,
    progress: CaptureProgress | None = None,
) -> Manifest:
    """Replay the shapes of `shapes_path` under ncu into `out`; return the written manifest.
    KeyboardInterrupt (Ctrl-C, or SIGTERM under the CLI) winds down, writes the manifest and
    is raised again."""
    options = options or CaptureOptions()
    with writing(out):  # the one plan: a bad file fails before the host is probed
        plan = plan_capture(shapes_path, out, options)
    check_job_script()  # under a Slurm job script's shell, scancel would lose the shard
    # (a --resume with nothing left to capture needs no ncu and no GPU: the host stays as it was)
    host = probe(options.ncu, options.gpus) if plan.batches else Host("", "", [])
    with writing(out), capture_lock(out):
        return _capture(
            on_host(plan, host.ncu_path, host.memory_bytes(options.gpus)), host, progress
        )


def _capture(plan: Plan, host: Host, progress: CaptureProgress | None) -> Manifest:
    """capture() once the host is known and the folder is this process's alone."""
    out, options = plan.out, plan.options
    records = {r.group: r for r in plan.kept}
    # shapes to capture start afresh (marked if with the light list); shapes only to time
    # again keep their record (--resume)
    records.update(
        {
            e.group: manifest_shape(e).model_copy(update={"light": b.kind == "light"})
            for b in plan.batches
            if b.kind != "times"
            for e in b.entries
        }
    )
    # a shape captured light that is captured again in full (--resume --light-after 0, or one
    # that now covers it) keeps its light record until its new capture ends: a capture stopped
    # (SIGTERM, SIGKILL) before that shape was replayed loses nothing
    earlier = {r.group: r for r in plan.previous.shapes} if plan.previous else {}
    light_kept = {
        e.group: earlier[e.group]
        for b in plan.batches
        if b.kind not in ("light", "times")
        for e in b.entries
        if e.group in earlier
        and earlier[e.group].light
        and earlier[e.group].status == "ok"
        and report_kept(out, earlier[e.group].report)
    }
    fresh = {group: records[group] for group in light_kept}  # (pending: its capture in full)
    records.update({group: rec.model_copy(deep=True) for group, rec in light_kept.items()})
    manifest = plan.previous or _new_manifest(plan)
    # the shapes file's order, whatever order they run in: --order time and --order file
    # give the same manifest, cards and summaries (a resumed older capture keeps its order)
    place = {e.group: i for i, e in enumerate(plan.shapes.entries())}
    manifest.shapes = sorted(
        (records[e.group] for e in plan.entries if e.group in records),
        key=lambda record: place.get(record.group, len(place)),
    )
    manifest.shard = f"{options.shard[0]}/{options.shard[1]}"
    manifest.coverage_target_pct = options.coverage_pct
    manifest.light_after_pct = options.light_after_pct
    manifest.below_target = [below_target(e) for e in plan.below]
    if plan.batches:  # (a --resume with nothing to capture keeps the host that captured)
        manifest.host = _with(
            manifest.host,
            gpus=host.gpus,
            ncu=host.ncu_version,
            ncu_path=host.ncu_path,
            python=sys.version.split()[0],
            clock_control="none",
            pipeline_boost_state=host.pipeline_boost_state,
        )
    for batch in plan.batches:  # repeats to measure: pending until their batch says
        if batch.kind == "times":
            for entry in batch.entries:
                records[entry.group].times_status = "pending"
    write_manifest(out, manifest)
    run = _Run(out, plan, options, records, manifest, progress, (light_kept, fresh))
    try:
        run.all_queues()
    finally:
        reports = sorted({b.report for b in manifest.batches if b.report and b.name in run.started})
        count_kernels(out, records, reports)
        write_manifest(out, manifest)
    return manifest


def _overwrite(record: ManifestShape, source: ManifestShape) -> None:
    """`record` (the object the manifest lists) made a copy of `source`, in place."""
    copy = source.model_copy(deep=True)
    for name in type(record).model_fields:
        setattr(record, name, getattr(copy, name))


def _new_manifest(plan: Plan) -> Manifest:
    """The manifest of a new capture: the shapes file's settings, the options, no shape yet."""
    options = plan.options
    return Manifest(
        tool_version=__version__,
        created_at=utc_now(),
        shapes_file=unicode_safe(plan.shapes_path.name),  # the same from any folder; UTF-8 alone
        shapes_sha256=plan.shapes_sha256,
        seed=plan.shapes.seed,
        warmup=plan.shapes.warmup,
        cudnn_benchmark=plan.shapes.cudnn_benchmark,
        input_draws=plan.input_draws,
        metrics=capture_metrics(plan.drill),
        shapes=[],
        drill_down=plan.drill,
        repeat=options.repeat,
        repeat_counters=options.repeat_counters,
        recorded_totals=plan.shapes.recorded.totals if plan.shapes.recorded else None,
        shard_method=plan.shard_method,
    )


class _Run:
    """One capture in progress: queues of batches per GPU, each in a thread, and the manifest
    they update under one lock."""

    def __init__(
        self,
        out: Path,
        plan: Plan,
        options: CaptureOptions,
        records: dict[str, ManifestShape],
        manifest: Manifest,
        progress: CaptureProgress | None,
        light: tuple[dict[str, ManifestShape], dict[str, ManifestShape]] = ({}, {}),
    ) -> None:
        self.out, self.plan, self.options = out, plan, options
        # group -> its light record, kept until replaced by the record of its capture in full
        self.light_kept, self.fresh = light
        self.records, self.manifest = records, manifest
        self.notify = progress or (lambda *_: None)
        self.lock = threading.Lock()
        self.stop = Stop()
        self.total = sum(len(b.entries) for b in plan.batches)
        self.done = 0
        self.errors: list[BaseException] = []  # the first is raised (KeyboardInterrupt: a
        # batch whose ncu was signalled by someone else, e.g. a scheduler)
        self.started: set[str] = set()  # batches that ran

    def on_shape(self, group: str, status: str) -> None:
        with self.lock:
            self.done += 1
            self.notify(self.done, self.total, group, status)

    def queue(self, gpu: int | None, batches: list[Batch]) -> None:
        """Run one GPU's batches in turn, until done or told to stop."""
        try:
            for planned in batches:
                if self.stop.graceful.is_set():
                    return
                batch = self.runnable(planned)
                if batch is None:
                    continue
                outcome = run_ncu_batch(
                    batch, self.out, self.plan, self.options, gpu, self.on_shape, self.stop
                )
                refused = counters_refused(self.out / outcome.record.log)
                if refused:  # nothing was replayed: the shapes stay pending
                    outcome.record.ended_by = "refused"
                self.record(outcome)
                if refused:
                    raise refused
                if outcome.ended_by == "interrupted" and not self.stop.graceful.is_set():
                    raise KeyboardInterrupt  # ncu was stopped from outside: so is the capture
        except BaseException as exc:  # re-raised by the main thread
            self.errors.append(exc)
            self.stop.graceful.set()  # the others stop too: e.g. counters not permitted

    def runnable(self, batch: Batch) -> Batch | None:
        """The batch as it runs now: a times batch keeps the shapes whose counters are ok (its
        command line names only them); None when nothing is left to run."""
        with self.lock:
            self.started.add(batch.name)
            if batch.kind != "times":
                return batch
            entries = [e for e in batch.entries if self.records[e.group].status == "ok"]
            for entry in batch.entries:
                if self.records[entry.group].status != "ok":
                    self.records[entry.group].times_status = None
            if not entries:
                return None
            batch = replace(batch, entries=entries)
            self.plan.argv[batch.name] = batch_argv(batch, self.out, self.options)
            return batch

    def record(self, outcome: BatchRun) -> None:
        """A batch's outcome into the manifest, which is written again. This run's batches
        stay in the plan's order after the earlier runs' (with several GPUs they end in an
        order that depends on timing: the manifest would not be the same twice)."""
        with self.lock:
            batches = self.manifest.batches
            batches.append(outcome.record)
            place = {b.name: i for i, b in enumerate(self.plan.batches)}
            ours = [b for b in batches if b.name in place]
            batches[len(batches) - len(ours) :] = sorted(ours, key=lambda b: place[b.name])
            env = outcome.tail.env.model_dump(exclude={"kind", "pid"}) if outcome.tail.env else {}
            kept = {g: self.light_kept[g] for g in outcome.record.groups if g in self.light_kept}
            if outcome.record.kind not in ("light", "times"):  # captured again in full
                for group in kept:
                    _overwrite(self.records[group], self.fresh[group])
            env = apply_status(self.records, outcome.record, outcome.tail.shapes, env)
            for group, light in kept.items():  # not captured again (stopped, failed): light
                record = self.records[group]
                if record.status in ("pending", "failed"):
                    failure = record.error if record.status == "failed" else None
                    _overwrite(record, light)
                    if failure:
                        record.error = f"its capture in full failed ({failure}): still light"
            self.manifest.host = _with(self.manifest.host, **env)
            write_manifest(self.out, self.manifest)

    def all_queues(self) -> None:
        """Start one thread per queue and wait; an interrupt winds them down (a second one
        kills) before it is raised again."""
        threads = [
            threading.Thread(target=self.queue, args=item, name=f"capture-gpu-{item[0]}")
            for item in _schedule(self.plan.batches, self.options.gpus, self.plan.by_time).items()
        ]
        for thread in threads:
            thread.start()
        try:
            _join(threads)
        except KeyboardInterrupt:
            self.stop.graceful.set()
            try:
                _join(threads)
            except KeyboardInterrupt:
                self.stop.hard.set()
                _join(threads)
            raise
        if self.errors:
            raise self.errors[0]


def _join(threads: list[threading.Thread]) -> None:
    """Wait for every thread by sleeping in slices, so that a signal reaches the main thread
    at once. Not Thread.join(timeout): on CPython 3.11, a KeyboardInterrupt inside it marks
    the still-running thread as stopped (bpo-45274's cleanup), and the interpreter then exits
    without waiting for it, orphaning its ncu process."""
    while any(thread.is_alive() for thread in threads):
        time.sleep(0.2)
    for thread in threads:
        thread.join()


def _schedule(
    batches: list[Batch], gpus: tuple[int, ...], keep_order: bool = False
) -> dict[int | None, list[Batch]]:
    """Batches per GPU: those planned for a device on it, the others largest first to the GPU
    with the fewest shapes queued. With `keep_order` (capture by time), in the plan's order to
    the GPU whose queue ends first by capture's cost model, so that every GPU works on the
    stages' largest shapes first: dealt by size, then each GPU's put in the plan's order, one
    GPU of the Wan recording at --coverage 99.5 held the decode's 90-99 % bands alone and ran
    them while the other ran the largest shapes (the decode at half time: 59.0 %, not 92.1)."""
    if not gpus:
        return {None: list(batches)}
    queues: dict[int | None, list[Batch]] = {g: [] for g in gpus}
    loads = dict.fromkeys(gpus, 0.0)
    follows = _times_of(batches)
    firsts = [b for b in batches if b.kind != "times" or b not in follows.values()]
    for batch in firsts if keep_order else sorted(firsts, key=lambda b: -len(b.entries)):
        if batch.device in queues:
            gpu = batch.device
        elif keep_order:
            gpu = min(gpus, key=lambda g: loads[g])
        else:
            gpu = min(gpus, key=lambda g: sum(len(b.entries) for b in queues[g]))
        queues[gpu] += [batch] + ([follows[batch.name]] if batch.name in follows else [])
        if gpu is not None:
            loads[gpu] += sum(unit_cost(unit) for unit in input_units(batch.entries))
    return {gpu: queue for gpu, queue in queues.items() if queue}


def _times_of(batches: list[Batch]) -> dict[str, Batch]:
    """The times batch that follows each counters (or light) batch in the plan (it must run
    after it, on the same GPU: it times the shapes that batch captured)."""
    return {
        first.name: then
        for first, then in itertools.pairwise(batches)
        if first.kind != "times" and then.kind == "times"
    }


def _with(host: HostInfo, **facts: Any) -> HostInfo:
    """`host` with `facts` added (a later fact of the same name wins)."""
    return HostInfo.model_validate({**host.model_dump(), **facts})
