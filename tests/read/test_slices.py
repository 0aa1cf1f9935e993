"""One large report read in windows of kernels by several processes: the windows cover every
kernel once, in order, and classify gives the cards a single reader gives (the 392-kernel
`--one-process` capture of the Wan 14B recording); the windows of a report with source blocks
read one copy without them (the smoke VAE report, cut as if 2 kernels made a window); errors
still name the user's file."""

from __future__ import annotations

import contextlib
import json
import lzma
from functools import partial
from pathlib import Path

import pytest
from helpers import ROOT, SMOKE

from ncu_classify.core.errors import ReportError
from ncu_classify.read import lean, parallel, slices
from ncu_classify.read.framing import check_report
from ncu_classify.read.inflate import inflated_size
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


def test_a_large_report_is_cut_small_ones_stay_whole(wan14b_plain: Path, tmp_path: Path) -> None:
    reports = [wan14b_plain / "all.ncu-rep", SMOKE / "dit.ncu-rep.xz"]
    with contextlib.ExitStack() as stack:
        planned = plan_units(reports, 3, stack, tmp_path)
        assert [[u.window for u in group] for group in planned] == [
            [(0, 130), (130, 261), (261, 392)],
            [None],
        ]
        # no source blocks to leave out (fixtures/README.md): every window reads the report
        # itself and checks it, as it may change while the run goes on
        assert {(u.path, u.label, u.checked) for u in planned[0]} == {
            (reports[0], reports[0], None)
        }
        assert [u.share for u in planned[0]] == [130 / 392, 131 / 392, 131 / 392]
        assert planned[1] == [ReadUnit(reports[1], reports[1])]
        assert plan_units(reports, 1, stack, tmp_path) == [[ReadUnit(r, r)] for r in reports]
    assert not list(tmp_path.iterdir())  # nothing inflated, no copy made


VAE = SMOKE / "vae.ncu-rep.xz"  # 6 kernels; 19,881,767 of its 20,004,192 bytes are source


def test_the_windows_of_a_report_with_sources_share_one_copy_without_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(slices, "MIN_WINDOW", 2)
    with contextlib.ExitStack() as stack:
        [units] = plan_units([VAE], 3, stack, tmp_path)
        assert [u.window for u in units] == [(0, 2), (2, 4), (4, 6)]
        assert {u.label for u in units} == {VAE}
        # inflated once, for all windows, which read one copy without the 6 source blocks:
        # 122,425 of 20,004,192 bytes, on disk (kept for the whole run: not in memory)
        lean = units[0].path
        assert lean.parent == tmp_path and lean.name.startswith("lean-")
        assert {u.path for u in units} == {lean}
        inflated = next(p for p in tmp_path.rglob("vae.ncu-rep") if p != lean)
        assert (inflated.stat().st_size, lean.stat().st_size) == (20_004_192, 122_425)
        assert len(check_report(inflated).source_blocks) == 6
        assert (check_report(lean).kernels, check_report(lean).source_blocks) == (6, [])
        # each window carries the copy's framing, as a check of the copy finds it
        assert [u.checked for u in units] == [check_report(lean)] * 3
    assert not list(tmp_path.iterdir())  # the inflated copy is gone with the stack


def test_windows_read_the_rows_and_cards_of_one_reader(
    wan14b_plain: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(parallel, "_threaded", lambda: False)  # torch may be loaded here
    rules = load_rules()
    per_kernel = partial(kernel_card, rules=rules)
    report = [wan14b_plain / "all.ncu-rep"]
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
    serial, windowed = (classify([wan14b_plain], rules, jobs=j) for j in (1, 3))
    dump = [json.loads(c.model_dump_json(exclude={"generated_at"})) for c in (serial, windowed)]
    assert dump[0] == dump[1] and len(serial.cards) == 253


def test_windows_of_the_copy_without_sources_read_the_rows_of_one_reader(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(parallel, "_threaded", lambda: False)
    monkeypatch.setattr(slices, "MIN_WINDOW", 2)
    per_kernel = partial(kernel_card, rules=load_rules())
    [one] = parallel.read_all([VAE], 1, per_kernel)
    [three] = parallel.read_all([VAE], 3, per_kernel)
    assert not isinstance(one, str) and not isinstance(three, str)
    assert [(r.report, r.action_index) for r, _ in three] == [(str(VAE), a) for a in range(6)]
    assert [(r.metrics, c.classification) for r, c in three] == [
        (r.metrics, c.classification) for r, c in one
    ]


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
    monkeypatch.setattr(slices, "MIN_WINDOW", 2)
    with contextlib.ExitStack() as stack:
        [units] = plan_units([VAE], 3, stack, tmp_path)
        assert [u.checked for u in units] == [None] * 3
        assert {u.path.name for u in units} == {"vae.ncu-rep"}  # the inflated report itself


def test_a_window_of_a_checked_copy_is_not_checked_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(slices, "MIN_WINDOW", 2)
    with contextlib.ExitStack() as stack:
        [units] = plan_units([VAE], 3, stack, tmp_path)

        def refused(*args: object, **kwargs: object) -> None:
            raise AssertionError("checked twice")

        monkeypatch.setattr(lean, "check_report", refused)
        parallel._use(lambda row: row.action_index, tmp_path)
        try:
            read = [parallel._read(unit) for unit in units]
        finally:
            parallel._use(None, None)
    assert [[made for _, made in rows] for rows in read] == [[0, 1], [2, 3], [4, 5]]


def test_a_compressed_report_without_sources_is_cut_by_the_size_it_declares(
    tmp_path: Path,
) -> None:
    """The committed Wan 14B report (xz, no source blocks: 436,220 bytes for 15,584,422) is
    cut like its plain copy: a guess of 16x its size would keep it whole (7 MB < 128 kernels)."""
    report = WAN / "all.ncu-rep.xz"
    assert inflated_size(report) == 15_584_422
    with contextlib.ExitStack() as stack:
        [units] = plan_units([report], 3, stack, tmp_path)
        assert [u.window for u in units] == [(0, 130), (130, 261), (261, 392)]
        assert {u.label for u in units} == {report}


def test_the_declared_size_of_xz_and_gzip_files(tmp_path: Path) -> None:
    """Every stream of an xz file counts, its padding does not; a cut file declares nothing."""
    import gzip

    first, second = b"hello world", bytes(range(256)) * 400
    joined = tmp_path / "two.ncu-rep.xz"
    joined.write_bytes(lzma.compress(first) + lzma.compress(second) + b"\0" * 8)
    assert inflated_size(joined) == len(first) + len(second)
    cut = tmp_path / "cut.ncu-rep.xz"
    cut.write_bytes(joined.read_bytes()[:-20])
    assert inflated_size(cut) is None
    zipped = tmp_path / "one.ncu-rep.gz"
    zipped.write_bytes(gzip.compress(second))
    assert inflated_size(zipped) == len(second)
    assert inflated_size(tmp_path / "missing.ncu-rep.xz") is None


def test_an_xz_report_with_stream_padding_reads_as_xz_writes_it(tmp_path: Path) -> None:
    """`xz` accepts stream padding (null bytes after a stream) and more streams after it;
    Python's own reader refused the padding ("ended before the end-of-stream marker")."""
    from ncu_classify.read.inflate import plain_file

    data = lzma.decompress((SMOKE / "dit.ncu-rep.xz").read_bytes())
    half = len(data) // 2
    padded = tmp_path / "dit.ncu-rep.xz"
    padded.write_bytes(
        lzma.compress(data[:half]) + b"\0" * 8 + lzma.compress(data[half:]) + b"\0" * 4
    )
    with plain_file(padded, tmp_path) as plain:
        assert plain.read_bytes() == data
    cut = tmp_path / "cut.ncu-rep.xz"
    cut.write_bytes(padded.read_bytes()[: len(padded.read_bytes()) // 2])
    with (
        pytest.raises(ReportError, match=r"cut\.ncu-rep\.xz: cannot decompress"),
        plain_file(cut, tmp_path),
    ):
        pass
