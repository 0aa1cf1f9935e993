"""One large report read in windows of kernels by several processes: the windows cover every
kernel once, in order, and classify gives the cards a single reader gives (the 392-kernel
`--one-process` capture of the Wan 14B recording), reading a copy without the report's source
blocks; errors still name the user's file."""

from __future__ import annotations

import contextlib
import json
import lzma
from functools import partial
from pathlib import Path

import pytest
from conftest import ROOT, SMOKE

from ncu_classify.read import lean, parallel
from ncu_classify.read.framing import check_report
from ncu_classify.read.slices import MIN_WINDOW, ReadUnit, plan_units, windows
from ncu_classify.verdicts.classify import classify
from ncu_classify.verdicts.judge import kernel_card
from ncu_classify.verdicts.rules import load_rules

WAN = ROOT / "fixtures" / "record_h200_wan14b"


@pytest.mark.parametrize(("kernels", "jobs"), [(392, 3), (392, 16), (128, 4), (1000, 7), (5, 2)])
def test_windows_cover_every_kernel_once(kernels: int, jobs: int) -> None:
    cut = windows(kernels, jobs)
    assert [k for start, stop in cut for k in range(start, stop)] == list(range(kernels))
    assert len(cut) == max(1, min(jobs, kernels // MIN_WINDOW))
    sizes = [stop - start for start, stop in cut]
    assert max(sizes) - min(sizes) <= 1


def test_a_large_report_is_cut_small_ones_stay_whole(tmp_path: Path) -> None:
    reports = [WAN / "all.ncu-rep.xz", SMOKE / "dit.ncu-rep.xz"]
    with contextlib.ExitStack() as stack:
        planned = plan_units(reports, 3, stack, tmp_path)
        assert [[u.window for u in group] for group in planned] == [
            [(0, 130), (130, 261), (261, 392)],
            [None],
        ]
        assert {u.label for u in planned[0]} == {reports[0]}
        # inflated once, for all windows, which read one copy without the 57 source blocks:
        # 15.6 of 133.3 MB
        # on disk (kept for the whole run: not in memory), read by every window
        lean = planned[0][0].path
        assert lean.parent == tmp_path and lean.name.startswith("lean-")
        assert {u.path for u in planned[0]} == {lean}
        inflated = next(p for p in tmp_path.rglob("all.ncu-rep") if p != lean)
        assert (inflated.stat().st_size, lean.stat().st_size) == (133_345_782, 15_584_422)
        assert len(check_report(inflated).source_blocks) == 57
        assert (check_report(lean).kernels, check_report(lean).source_blocks) == (392, [])
        # each window carries the copy's framing, as a check of the copy finds it
        assert [u.checked for u in planned[0]] == [check_report(lean)] * 3
        assert planned[1] == [ReadUnit(reports[1], reports[1])]
        assert plan_units(reports, 1, stack, tmp_path) == [[ReadUnit(r, r)] for r in reports]
    assert not list(tmp_path.iterdir())  # the inflated copy is gone with the stack


def test_windows_read_the_rows_and_cards_of_one_reader(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parallel, "_threaded", lambda: False)  # torch may be loaded here
    rules = load_rules()
    per_kernel = partial(kernel_card, rules=rules)
    report = [WAN / "all.ncu-rep.xz"]
    [one] = parallel.read_all(report, 1, per_kernel)
    [three] = parallel.read_all(report, 3, per_kernel)
    assert not isinstance(one, str) and not isinstance(three, str)
    assert len(one) == len(three) == 392
    assert [(r.report, r.range_index, r.action_index) for r, _ in three] == [
        (str(report[0]), 0, a) for a in range(392)
    ]
    assert [(r.metrics, c.classification) for r, c in three] == [
        (r.metrics, c.classification) for r, c in one
    ]
    serial, windowed = (classify([WAN], rules, jobs=j) for j in (1, 3))
    dump = [json.loads(c.model_dump_json(exclude={"generated_at"})) for c in (serial, windowed)]
    assert dump[0] == dump[1] and len(serial.cards) == 253


def test_an_error_in_a_window_names_the_users_file(tmp_path: Path) -> None:
    plain = tmp_path / "copy" / "all.ncu-rep"
    plain.parent.mkdir()
    data = lzma.decompress((SMOKE / "dit.ncu-rep.xz").read_bytes())
    plain.write_bytes(data[: len(data) // 2])
    label = tmp_path / "mine.ncu-rep.xz"
    parallel._use(lambda row: None, tmp_path)
    try:
        error = parallel._read(ReadUnit(plain, label, (0, 2)))
    finally:
        parallel._use(None, None)
    assert isinstance(error, str) and error.startswith(f"{label}: ")
    assert str(plain) not in error


def test_a_window_of_the_users_own_file_is_checked_by_its_reader(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without a copy of ours (little source, or none could be made) a window reads the user's
    file (or its inflated copy), which can change while the run goes on: each reader checks it."""
    monkeypatch.setattr(lean, "MIN_SOURCE_BYTES", 1 << 40)
    with contextlib.ExitStack() as stack:
        [units] = plan_units([WAN / "all.ncu-rep.xz"], 3, stack, tmp_path)
        assert [u.checked for u in units] == [None] * 3
        assert {u.path.name for u in units} == {"all.ncu-rep"}  # the inflated report itself


def test_a_window_of_a_checked_copy_is_not_checked_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with contextlib.ExitStack() as stack:
        [units] = plan_units([WAN / "all.ncu-rep.xz"], 3, stack, tmp_path)

        def refused(*args: object, **kwargs: object) -> None:
            raise AssertionError("checked twice")

        monkeypatch.setattr(lean, "check_report", refused)
        parallel._use(lambda row: row.action_index, tmp_path)
        try:
            read = [parallel._read(unit) for unit in units]
        finally:
            parallel._use(None, None)
    assert [[made for _, made in rows] for rows in read] == [
        list(range(0, 130)),
        list(range(130, 261)),
        list(range(261, 392)),
    ]
