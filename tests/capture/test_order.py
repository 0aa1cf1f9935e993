"""Capture by time (issue 41, items 1 and 2), on the H200's recordings: the Wan 2.1 14B step +
decode recorded on the H200 (254 shapes, every one timed) for the order, the coverage cut and
the time bands; the compiled block (fixtures/compiled_h200) captured by the stand-in ncu from
the H200's reports for the manifest, the coverage lines and --resume with a higher target."""

from __future__ import annotations

import itertools
import json
import lzma
from pathlib import Path

import pytest
from helpers import ROOT

from ncu_classify.capture.order import largest_first, program_us, time_bands, wanted_groups
from ncu_classify.capture.plan import CaptureOptions, plan_capture
from ncu_classify.capture.shards import run_cost
from ncu_classify.shapes.file import ShapeEntry, ShapesFile, read_shapes

WAN = ROOT / "reports" / "record" / "wan_14b_480x832_h200_shapes.yaml.xz"
BLOCK = ROOT / "fixtures" / "compiled_h200"


@pytest.fixture(scope="module")
def wan(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The Wan 14B recording, decompressed."""
    path = tmp_path_factory.mktemp("wan") / "shapes.yaml"
    path.write_bytes(lzma.decompress(WAN.read_bytes()))
    return path


def _shares(shapes: ShapesFile, groups: set[str]) -> dict[str, tuple[int, int, float]]:
    """Per stage: its shapes, those among `groups`, and the percent of its time they hold."""
    found: dict[str, tuple[int, int, float]] = {}
    totals = shapes.recorded.totals.stages  # type: ignore[union-attr]
    for stage, total in totals.items():
        members = [e for e in shapes.entries() if e.stage == stage]
        kept = [e for e in members if e.group in groups]
        share = 100 * sum(program_us(e) or 0 for e in kept) / (total.kernel_us or 1)
        found[stage] = (len(members), len(kept), round(share, 3))
    return found


def covered_at_half(order: list[ShapeEntry], shapes: ShapesFile, digits: int) -> dict[str, float]:
    """Each stage's share of its recorded kernel time (percent) covered by the shapes of
    `order` done when a capture is stopped at half its estimated cost (capture's cost model)."""
    budget, spent, done = sum(run_cost(e) for e in order) / 2, 0.0, {}
    for entry in order:
        if spent >= budget:
            break
        spent += run_cost(entry)
        done[entry.stage] = done.get(entry.stage, 0.0) + (program_us(entry) or 0)
    whole = shapes.recorded.totals.stages  # type: ignore[union-attr]
    return {s: round(100 * t / (whole[s].kernel_us or 1), digits) for s, t in done.items()}


def test_shapes_go_largest_first(wan: Path) -> None:
    """By program time (real_us x recorded calls), largest first: the decode's 96-channel
    conv3d at 482x834 (84.2 ms), then the DiT's QKV-sized linear (71.5 ms); never a smaller
    shape before a larger one."""
    shapes, _ = read_shapes(wan)
    ordered = largest_first(shapes.entries())
    assert len(ordered) == 254
    assert [round(program_us(e) or 0) for e in ordered[:3]] == [84212, 71510, 46559]
    assert (
        ordered[0].group == "vae:conv3d:in1x96x6x482x834_w96x96x3x3x3_s1x1x1_p0x0x0:fp32:tf32:bias"
    )
    assert ordered[1].group == "dit:linear:M4680_N5120_K5120:bf16:bias"
    times = [program_us(e) or 0 for e in ordered]
    assert all(a >= b for a, b in itertools.pairwise(times))


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        (99.0, {"dit": (60, 27, 99.31), "output": (11, 10, 99.006), "vae": (183, 112, 99.039)}),
        (99.5, {"dit": (60, 29, 99.567), "output": (11, 11, 100.0), "vae": (183, 127, 99.517)}),
        (99.9, {"dit": (60, 36, 99.915), "output": (11, 11, 100.0), "vae": (183, 152, 99.9)}),
    ],
)
def test_the_target_takes_each_stage_s_largest_shapes_up_to_it(
    wan: Path, target: float, expected: dict[str, tuple[int, int, float]]
) -> None:
    """Per stage, the fewest largest shapes whose time reaches the target share of the
    stage's recorded kernel time: one shape fewer (the smallest taken) falls below it."""
    shapes, _ = read_shapes(wan)
    wanted = wanted_groups(shapes, target)
    assert _shares(shapes, wanted) == expected
    for stage in ("dit", "vae"):
        taken = [e for e in largest_first(shapes.entries()) if e.group in wanted]
        smallest = [e for e in taken if e.stage == stage][-1]
        assert _shares(shapes, wanted - {smallest.group})[stage][2] < target


def test_every_shard_cuts_at_the_same_place(wan: Path, tmp_path: Path) -> None:
    """The three shards of a job array at --coverage 99.5 capture, together, exactly the
    shapes the whole file's cut takes, and list the rest below the target, once each."""
    shapes, _ = read_shapes(wan)
    wanted = wanted_groups(shapes, 99.5)
    taken: list[str] = []
    below: list[str] = []
    for index in (1, 2, 3):
        options = CaptureOptions(coverage_pct=99.5, shard=(index, 3))
        plan = plan_capture(wan, tmp_path / f"s{index}", options)
        taken += [e.group for e in plan.entries]
        below += [e.group for e in plan.below]
    assert sorted(taken) == sorted(wanted) and len(taken) == 167
    assert sorted(below) == sorted({e.group for e in shapes.entries()} - wanted)


def test_every_stage_s_largest_shapes_come_before_any_stage_s_smallest(
    wan: Path, tmp_path: Path
) -> None:
    """One ncu process per stage would finish the decode's smallest shapes before the DiT's
    largest; cut at 50, 90 and 99 % of each stage's time (a band costing less than a process
    start joining the one before: the DiT's first three bands, the whole output stage), every
    stage's first piece goes first: 7 processes instead of 3 (12 without the joins). At half
    the capture's estimated cost, each stage is over 90 % covered (in file order, the decode
    was at 68.8 %)."""
    plan = plan_capture(wan, tmp_path / "raw", CaptureOptions())
    assert [(b.name, len(b.entries)) for b in plan.batches] == [
        ("vae-1", 4), ("dit-1", 27), ("output", 11), ("vae-2", 37), ("vae-3", 71),
        ("vae-4", 71), ("dit-2", 33),
    ]  # fmt: skip
    bands = time_bands(plan.entries)
    assert [bands[e.group] for e in plan.batches[0].entries] == [0] * len(plan.batches[0].entries)

    def at_half(batches: list) -> dict[str, float]:  # type: ignore[type-arg]
        return covered_at_half([e for b in batches for e in b.entries], plan.shapes, 2)

    assert at_half(plan.batches) == {"vae": 97.74, "dit": 99.31, "output": 100.0}
    by_file = plan_capture(wan, tmp_path / "raw", CaptureOptions(order="file"))
    assert at_half(by_file.batches)["vae"] == 68.78


def test_a_target_leaves_the_smallest_shapes_out_and_resume_takes_them(
    stand_in: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The block's recording at --coverage 60: the region (10.4 ms, its stage's all) and the
    cast (437.4 us of main's 640.9 us: 68.2 %) are captured, the draw (203.6 us) is below the
    target in the manifest and every coverage line says it; --resume without --coverage keeps
    the target (nothing to do), --resume --coverage 100 captures the draw alone."""
    from ncu_classify.cli.entry import run

    raw, shapes = tmp_path / "raw", str(BLOCK / "shapes.yaml")
    assert run(["capture", "--shapes", shapes, "-o", str(raw), "--coverage", "60"]) == 0
    manifest = json.loads((raw / "manifest.json").read_text())
    assert [s["group"] for s in manifest["shapes"]] == [
        "block:compiled:block:g0:compiled",
        "main:aten._to_copy.default:1x128x8x240x360:bf16",
    ]
    assert manifest["coverage_target_pct"] == 60.0
    assert manifest["below_target"] == [
        {"group": "main:aten.randn.default", "stage": "main", "calls": 1, "real_calls": 1,
         "real_us": 203.647}
    ]  # fmt: skip
    line = (
        "coverage main: 68.2 % of 0.641 ms of the program's kernel time (torch.profiler at"
        " record); replayed 0.437 ms; not covered: (1 shape below the coverage target)"
        " 0.204 ms (1 call)"
    )
    assert line in _summary(raw, tmp_path / "cards.json", capsys)
    assert "(1 shape below the coverage target) 0.204 ms" in _next(tmp_path / "cards.json", capsys)
    from ncu_classify.cli.app import read_cards
    from ncu_classify.present.frames import coverage_frame

    frame = coverage_frame(read_cards(tmp_path / "cards.json"))
    (row,) = frame[frame["item"] == "(1 shape below the coverage target)"].itertuples()
    assert (row.stage, row.calls) == ("main", 1)
    assert round(row.real_us_per_inference, 3) == 203.647
    assert run(["capture", "--shapes", shapes, "-o", str(raw), "--resume"]) == 0
    assert len(json.loads((raw / "manifest.json").read_text())["batches"]) == 2
    argv = ["capture", "--shapes", shapes, "-o", str(raw), "--resume", "--coverage", "100"]
    assert run(argv) == 0
    manifest = json.loads((raw / "manifest.json").read_text())
    assert manifest["below_target"] == [] and manifest["coverage_target_pct"] == 100.0
    assert manifest["batches"][-1]["groups"] == ["main:aten.randn.default"]
    assert "coverage main: 100.0 %" in _summary(raw, tmp_path / "cards2.json", capsys)


def _summary(raw: Path, cards: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """The capture folder classified, and its summary's text."""
    from ncu_classify.cli.entry import run

    assert run(["classify", str(raw), "-o", str(cards)]) == 0
    capsys.readouterr()
    assert run(["summary", str(cards)]) == 0
    return capsys.readouterr().out


def test_a_target_without_recorded_times_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A hand-written shapes file has no program times: one line naming it, exit 2, no folder."""
    from ncu_classify.cli.entry import run

    smoke = ROOT / "fixtures" / "shapes" / "smoke.yaml"
    argv = ["capture", "--shapes", str(smoke), "-o", str(tmp_path / "raw"), "--coverage", "99"]
    assert run(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f"ncu-classify: error: {smoke}: --coverage needs the recorded program's kernel time,"
        " and this shapes file has none (record it on a GPU with ncu-classify record)"
    ]
    assert not (tmp_path / "raw" / "manifest.json").exists()


def _next(cards: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """`next`'s text for a cards file."""
    from ncu_classify.cli.entry import run

    capsys.readouterr()
    run(["next", str(cards)])
    return capsys.readouterr().out


def test_the_progress_line_gives_each_stage_s_share_so_far(wan: Path) -> None:
    """After the decode's largest conv3d and the DiT's largest linear: the share of each of
    their stages' recorded kernel time (84.2 of 313.9 ms, 71.5 of 260.2 ms)."""
    from ncu_classify.capture.order import StageShares

    shapes, _ = read_shapes(wan)
    shares = StageShares.of(shapes)
    assert shares is not None
    done = [e.group for e in largest_first(shapes.entries())[:2]]
    assert {k: round(v, 2) for k, v in shares.covered(done).items()} == {
        "vae": 26.82,
        "dit": 27.48,
    }


def test_one_process_stays_one_process_in_time_order(wan: Path, tmp_path: Path) -> None:
    """--one-process on one GPU asks for one ncu process (each start costs 6-10 s): the Wan
    recording's 254 shapes in one batch, not cut at the time bands into four, by their share
    of their stage's time, largest first, each stage's shapes largest first. Stopped at half
    its estimated time, every stage is over 90 % covered (by time alone, across the stages,
    the 0.19 ms output stage ran last: 0 %, the decode 98.3 %)."""
    plan = plan_capture(wan, tmp_path / "raw", CaptureOptions(per_stage=False))
    assert [(b.name, len(b.entries)) for b in plan.batches] == [("all", 254)]
    order = plan.batches[0].entries
    whole = plan.shapes.recorded.totals.stages  # type: ignore[union-attr]
    shares = [(program_us(e) or 0) / (whole[e.stage].kernel_us or 1) for e in order]
    assert all(a >= b for a, b in itertools.pairwise(shares))
    for stage in whole:
        times = [program_us(e) or 0 for e in order if e.stage == stage]
        assert all(a >= b for a, b in itertools.pairwise(times))
    assert covered_at_half(order, plan.shapes, 1) == {"dit": 99.6, "vae": 97.6, "output": 100.0}


def _progress_text(
    monkeypatch: pytest.MonkeyPatch, wan: Path, calls: list[tuple[str, str]], before: list[str]
) -> str:
    """The progress line's last text on a 100-column terminal after `calls` (group, status),
    the shapes of `before` captured by an earlier run (--resume)."""
    import io
    import re

    from rich.console import Console

    from ncu_classify.capture.order import StageShares
    from ncu_classify.cli import terminal

    sink = io.StringIO()
    console = Console(file=sink, force_terminal=True, width=100, highlight=False, markup=False)
    monkeypatch.setattr(terminal, "err", console)
    shapes, _ = read_shapes(wan)
    with terminal.capture_progress(StageShares.of(shapes), before) as progress:
        for done, (group, status) in enumerate(calls, 1):
            progress(done, len(calls), group, status)
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", sink.getvalue()).splitlines()[-1]


def test_the_progress_line_counts_each_shape_once_and_shows_the_shares(
    monkeypatch: pytest.MonkeyPatch, wan: Path
) -> None:
    """Under --repeat the times batch reports a shape again (ok): it is counted once (it was
    counted twice: vae 53.6 %); a failed shape counts nothing; the shares come before the
    long group id, so a 100-column terminal shows them (after it, they were cut off); on
    --resume the shapes captured before count from the start; stages in the recording's
    order."""
    shapes, _ = read_shapes(wan)
    conv, linear = (e.group for e in largest_first(shapes.entries())[:2])
    calls = [(conv, "ok"), (linear, "failed"), (conv, "ok")]
    line = _progress_text(monkeypatch, wan, calls, [])
    assert "vae 26.8 % " in line and "dit" not in line.split("ok")[0]
    line = _progress_text(monkeypatch, wan, [(conv, "ok")], [linear])
    assert "dit 27.5 % | vae 26.8 % | ok " in line


def test_a_target_of_100_takes_every_shape_even_one_of_no_time(tmp_path: Path) -> None:
    """The block's recording with its draw edited to 0 us (the stage's total with it): at 99 %
    the cast alone reaches the target; at 100 % ("takes every shape") the draw too (it was
    left out once the cast had covered the whole stage)."""
    text = (BLOCK / "shapes.yaml").read_text()
    text = text.replace("real_us: 203.647", "real_us: 0.0").replace(
        '"kernel_us": 641.022', '"kernel_us": 437.375'
    )
    path = tmp_path / "shapes.yaml"
    path.write_text(text)
    shapes, _ = read_shapes(path)
    assert "main:aten.randn.default" not in wanted_groups(shapes, 99.0)
    assert wanted_groups(shapes, 100.0) == {e.group for e in shapes.entries()}


def test_each_gpu_runs_its_batches_largest_time_first(wan: Path, tmp_path: Path) -> None:
    """--gpus 0,1 (one process per stage piece): the pieces go in the plan's order, each to
    the GPU whose queue ends first by the cost model, so each GPU runs every stage's first
    band before its later ones (dealt by size, GPU 0 ran vae-3's 62 shapes of the decode's
    90-99 % band first and the decode's largest conv3d third; dealt by size and then put in
    the plan's order, GPU 0 held vae-3 and vae-4 alone: at half the estimated time the decode
    was 59.0 % covered, now 92.1 %). With --order file, today's order."""
    from ncu_classify.capture.run import _schedule

    plan = plan_capture(wan, tmp_path / "raw", CaptureOptions(gpus=(0, 1), coverage_pct=99.5))
    queues = _schedule(plan.batches, (0, 1), plan.by_time)
    assert [[b.name for b in queue] for queue in queues.values()] == [
        ["vae-1", "output", "vae-2", "vae-4"],
        ["dit", "vae-3"],
    ]
    assert sorted(len(b.entries) for q in queues.values() for b in q) == sorted(
        len(b.entries) for b in plan.batches
    )
    span = max(sum(run_cost(e) for b in q for e in b.entries) for q in queues.values())
    done: dict[str, float] = {}
    for queue in queues.values():  # each GPU at half the longer queue's estimated time
        spent = 0.0
        for entry in [e for b in queue for e in b.entries]:
            if spent >= span / 2:
                break
            spent += run_cost(entry)
            done[entry.stage] = done.get(entry.stage, 0.0) + (program_us(entry) or 0)
    whole = plan.shapes.recorded.totals.stages  # type: ignore[union-attr]
    assert {s: round(100 * t / (whole[s].kernel_us or 1), 1) for s, t in done.items()} == {
        "vae": 92.1, "output": 100.0, "dit": 99.6,
    }  # fmt: skip
    by_file = plan_capture(wan, tmp_path / "raw", CaptureOptions(gpus=(0, 1), order="file"))
    assert not by_file.by_time
    assert [b.name for b in _schedule(by_file.batches, (0, 1), by_file.by_time)[0]] == ["vae"]


def test_a_drill_down_keeps_one_process_per_stage(wan: Path, tmp_path: Path) -> None:
    """A drill-down captures a few chosen shapes again: one process per stage, not cut at the
    time bands (46 shapes became 9 processes), its shapes still largest first."""
    from ncu_classify.capture.manifest import DrillRequest

    shapes, _ = read_shapes(wan)
    chosen = [e.group for e in shapes.entries()][:40:4]
    drill = DrillRequest(
        cards_file="cards.json", cards_sha256="0" * 64, selected=dict.fromkeys(chosen, "unresolved")
    )
    plan = plan_capture(wan, tmp_path / "drill", CaptureOptions(drill=drill))
    assert sorted(b.name for b in plan.batches) == sorted({e.stage for e in plan.entries})
    times = [program_us(e) or 0 for b in plan.batches for e in b.entries]
    assert sum(len(b.entries) for b in plan.batches) == 10
    assert all(
        a >= b
        for batch in plan.batches
        for a, b in itertools.pairwise([program_us(e) or 0 for e in batch.entries])
    )
    assert times


def test_a_shape_of_no_time_is_timed_and_the_library_checks_the_target(
    wan: Path, tmp_path: Path
) -> None:
    """A recorded shape whose kernels took 0 us sorts last among the timed shapes, before an
    untimed one; `plan_capture` itself refuses a target out of (0, 100] with one line."""
    from ncu_classify.core.errors import UsageError

    shapes, _ = read_shapes(wan)
    first, second, third = shapes.entries()[:3]
    zero = first.model_copy(update={"shape": first.shape.model_copy(update={"real_us": 0.0})})
    untimed = second.model_copy(update={"shape": second.shape.model_copy(update={"real_us": None})})
    ordered = largest_first([untimed, zero, third])
    assert [e.group for e in ordered] == [third.group, zero.group, untimed.group]
    for bad in (-5.0, 0.0, 100.5, float("nan")):
        with pytest.raises(UsageError, match="--coverage"):
            plan_capture(wan, tmp_path / "raw", CaptureOptions(coverage_pct=bad))


def test_a_shard_s_progress_line_says_its_own_share_of_each_stage(
    monkeypatch: pytest.MonkeyPatch, wan: Path
) -> None:
    """Shard 1 of 4 holds about a quarter of each stage: its line says how much of the stage
    it has covered and of how much it holds (the whole stage's share alone never reached 100 %
    in a shard, and read as a capture stopped short)."""
    import io
    import re

    from rich.console import Console

    from ncu_classify.capture.order import StageShares
    from ncu_classify.capture.shards import select_shard
    from ncu_classify.cli import terminal

    shapes, _ = read_shapes(wan)
    shard = [e.group for e in select_shard(shapes.entries(), 1, 4)]
    shares = StageShares.of(shapes, shard)
    assert shares is not None and shares.part is not None
    assert sorted(shares.part) == ["dit", "output", "vae"]
    assert 100 > sum(shares.part.values()) > 0
    assert shares.covered(shard) == shares.part  # the whole shard done: its own share
    sink = io.StringIO()
    console = Console(file=sink, force_terminal=True, width=200, highlight=False, markup=False)
    monkeypatch.setattr(terminal, "err", console)
    first = largest_first([e for e in shapes.entries() if e.group in shard])[0]
    with terminal.capture_progress(shares) as progress:
        progress(1, len(shard), first.group, "ok")
    line = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", sink.getvalue()).splitlines()[-1]
    done = shares.covered([first.group])[first.stage]
    assert f"{first.stage} {done:.1f} % of {shares.part[first.stage]:.1f} % | ok " in line
