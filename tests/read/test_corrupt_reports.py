"""Corrupt reports (issue 37 item 1): whatever the damage, a report is read or refused with its
own ReportError, never another exception, and a bad report costs the others nothing, with one
job or several. The fuzzing is seeded: the same bytes on every run."""

from __future__ import annotations

import collections
import gzip
import lzma
import random
import struct
from functools import partial
from pathlib import Path

import pytest
from helpers import SMOKE, run_cli

from ncu_classify.cards.model import CardFile
from ncu_classify.core.errors import ReportError
from ncu_classify.read import framing, kernels, parallel
from ncu_classify.read.framing import check_report
from ncu_classify.read.kernels import iter_report
from ncu_classify.verdicts.classify import kernel_card
from ncu_classify.verdicts.rules import LoadedRules

DIT = lzma.decompress((SMOKE / "dit.ncu-rep.xz").read_bytes())
DIT_NAMES = [row.mangled_name for row in iter_report(SMOKE / "dit.ncu-rep.xz")]
# smoke_h200/dit.ncu-rep: where each block (its uint32 size) and each payload message starts
BLOCK_HEADERS = [10, 145, 29905, 58426, 66903, 66976, 67047, 67169, 67222, 67410, 68700]
BLOCK_HEADERS += [85640, 104032]
MESSAGES = [196, 41536, 68751, 85691, 104083]  # source, kernel, kernel, source, kernel
UNREADABLE = "corrupt: block header at byte 10 is unreadable"
RESULTS = [(41536, 58426), (68751, 85640), (104083, len(DIT))]  # the 3 kernels' messages


def _read(path: Path) -> list[str] | ReportError:
    """The kernel names the whole reader (framing, lean copy, ncu_report) finds in `path`, or
    its ReportError; any other exception fails the test."""
    try:
        return [row.mangled_name for row in iter_report(path)]
    except ReportError as exc:
        assert "\n" not in str(exc) and str(exc).startswith(f"{path}: ")
        return exc


def _flipped(tmp_path: Path, flips: dict[int, int], name: str = "bad.ncu-rep") -> Path:
    """smoke dit.ncu-rep with each byte at an offset of `flips` XORed with its value."""
    data = bytearray(DIT)
    for offset, mask in flips.items():
        data[offset] ^= mask
    out = tmp_path / name
    out.write_bytes(data)
    return out


@pytest.mark.parametrize(("offset", "wire"), [(21, 4), (26, 6)])
def test_a_bad_wire_type_in_a_block_header_is_a_report_error(
    offset: int, wire: int, tmp_path: Path
) -> None:
    """The bytes of the issue: once a ValueError from the tool versions' parser (exit 1)."""
    bad = _flipped(tmp_path, {offset: 0xFF})
    with pytest.raises(ReportError) as caught:
        check_report(bad, label="raw/bad.ncu-rep")
    assert str(caught.value) == (
        f"raw/bad.ncu-rep: corrupt: block header at byte 10 is unreadable "
        f"(unsupported wire type {wire})"
    )


def test_what_the_framing_checks_missed_is_still_a_report_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Any parser exception on hostile bytes is the report's error, at the last offset read."""

    def broken(session: bytes) -> dict[str, str]:
        raise struct.error("unpack requires a buffer of 4 bytes")

    monkeypatch.setattr(framing, "_versions", broken)
    with pytest.raises(ReportError) as caught:
        check_report(_flipped(tmp_path, {}), label="raw/dit.ncu-rep")
    assert str(caught.value) == (
        "raw/dit.ncu-rep: corrupt: unreadable at or after byte 14 (error: unpack requires a"
        " buffer of 4 bytes)"
    )


def test_every_flip_in_the_framing_is_read_or_refused(tmp_path: Path) -> None:
    """Every byte of the file header and of the first two block headers, flipped three ways
    for the framing check, and all bits at once for the whole reader."""
    outcomes: collections.Counter[str] = collections.Counter()
    for offset in range(196):
        for mask in (0x01, 0x80):
            try:
                check_report(_flipped(tmp_path, {offset: mask}))
            except ReportError:
                outcomes["refused"] += 1
            else:
                outcomes["framed"] += 1
        result = _read(_flipped(tmp_path, {offset: 0xFF}))
        outcomes["read" if result == DIT_NAMES else "not read"] += 1
    # much of a block header is text (tool versions) whose damage changes no frame
    assert outcomes == {"refused": 94, "framed": 298, "read": 121, "not read": 75}


def test_random_flips_in_the_first_kilobytes_are_read_or_refused(tmp_path: Path) -> None:
    rng = random.Random(37)
    outcomes: collections.Counter[str] = collections.Counter()
    for _ in range(150):
        flips = {rng.randrange(4096): rng.randrange(1, 256) for _ in range(rng.choice((1, 3)))}
        result = _read(_flipped(tmp_path, flips))
        if isinstance(result, ReportError):
            outcomes["refused"] += 1
        else:
            assert result == DIT_NAMES  # flips in the source block: dropped unread
            outcomes["read"] += 1
    assert outcomes["refused"] and outcomes["read"]


def test_truncation_at_every_block_boundary_is_read_or_refused(tmp_path: Path) -> None:
    """A cut after a whole block reads the kernels before it; anywhere else it is refused."""
    cuts = {b + d for b in [*BLOCK_HEADERS, *MESSAGES] for d in (-1, 0, 1, 4, 5)}
    whole = {}
    for size in sorted(cuts | {0, 3, 4, 5, 8, 9, len(DIT) - 1}):
        cut = tmp_path / "cut.ncu-rep"
        cut.write_bytes(DIT[:size])
        result = _read(cut)
        if not isinstance(result, ReportError):
            whole[size] = len(result)
            assert result == DIT_NAMES[: len(result)]
    # a cut after a whole block holds the kernels before it (none before 58426: refused as
    # holding no profiled kernel); one anywhere else is refused
    after_one = (58426, 66903, 66976, 67047, 67169, 67222, 67410, 68700)
    assert whole == dict.fromkeys(after_one, 1) | {85640: 2, 104032: 2}


def test_flips_in_the_kernels_results_are_read_or_refused(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """Damage that the framing cannot see reaches ncu_report: it refuses or reads the kernel,
    and its native log lines stay off the terminal."""
    rng = random.Random(371)
    refused = []
    for start, stop in RESULTS:
        for offset in [start, start + 4, stop - 1, *(rng.randrange(start, stop) for _ in range(9))]:
            result = _read(_flipped(tmp_path, {offset: rng.randrange(1, 256)}))
            if isinstance(result, ReportError):
                refused.append(str(result))
            else:
                assert len(result) == 3
    assert refused
    # ncu_report parses these kernels as nameless (a metric's name id lost): each error names
    # the block that holds the kernel (the first flip clears a bit in kernel 0's name id)
    for offset, mask, kernel, block in [
        (42701, 32, 0, 29905),
        (80499, 204, 1, 68700),
        (112243, 167, 2, 104032),
    ]:
        result = _read(_flipped(tmp_path, {offset: mask}, "mid.ncu-rep"))
        assert str(result) == (
            f"{tmp_path / 'mid.ncu-rep'}: damaged report: kernel {kernel} (range 0, action"
            f" {kernel}, in the block at byte {block}) has no name"
        )
    assert capfd.readouterr().err == ""  # once: "E0000 ... message_lite.cc:195] Can't parse"


def test_corrupt_gzip_data_is_a_report_error(tmp_path: Path) -> None:
    """A deflate block of the reserved type: gzip raises zlib.error, once an internal error."""
    bad = tmp_path / "dit.ncu-rep.gz"
    bad.write_bytes(gzip.compress(DIT, mtime=0)[:10] + b"\x07" + bytes(20))
    assert str(_read(bad)) == (
        f"{bad}: cannot decompress: Error -3 while decompressing data: invalid block type"
    )


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_large_corrupt_report_costs_the_others_nothing(
    jobs: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rules: LoadedRules
) -> None:
    """Large enough (8 MB) to be framed by the read plan in the parent before it is cut into
    windows: a ValueError there ended the whole command."""
    bad = _flipped(tmp_path, {21: 0xFF}, "big.ncu-rep")
    bad.write_bytes(bad.read_bytes() + bytes(8 << 20))
    monkeypatch.setattr(parallel, "_threaded", lambda: False)  # torch may be loaded here
    paths = [bad, SMOKE / "vae.ncu-rep.xz"]
    results = parallel.read_all(paths, jobs, partial(kernel_card, rules=rules))
    assert (
        results[0]
        == f"{bad}: corrupt: block header at byte 10 is unreadable (unsupported wire type 4)"
    )
    assert isinstance(results[1], list) and len(results[1]) == 6


@pytest.mark.parametrize("jobs", [1, 2])
def test_what_no_check_foresaw_fails_its_report_alone(
    jobs: int, monkeypatch: pytest.MonkeyPatch, rules: LoadedRules
) -> None:
    """An exception no check turned into a ReportError (here: ncu_report failing on a kernel
    of vae) fails that report with one line, with one job as in a reader process; with one
    job it once ended the whole command as an internal error."""
    real = kernels.read_kernel

    def failing(action, report, *args):  # type: ignore[no-untyped-def]
        if report.endswith("vae.ncu-rep.xz"):
            raise RuntimeError("std::bad_alloc")
        return real(action, report, *args)

    monkeypatch.setattr(kernels, "read_kernel", failing)
    monkeypatch.setattr(parallel, "_threaded", lambda: False)  # torch may be loaded here
    paths = [SMOKE / "dit.ncu-rep.xz", SMOKE / "vae.ncu-rep.xz", SMOKE / "output.ncu-rep.xz"]
    results = parallel.read_all(paths, jobs, partial(kernel_card, rules=rules))
    assert results[1] == f"{paths[1]}: the report reader failed on it: RuntimeError: std::bad_alloc"
    assert [len(r) for r in (results[0], results[2])] == [3, 1]


# the smoke capture's cards once read: (report, stage) -> kernels of each card
SMOKE_CARDS = {
    ("dit.ncu-rep.xz", "dit"): [1, 1, 1],
    ("vae.ncu-rep.xz", "vae"): [4, 1, 1],
    ("attention.ncu-rep.xz", "attention"): [1, 1, 1, 0],
    ("output.ncu-rep.xz", "output"): [1],
}


@pytest.mark.parametrize("jobs", ["1", "2"])
@pytest.mark.parametrize(("offset", "wire"), [(21, 4), (26, 6)])
def test_classify_writes_the_good_reports_cards_beside_a_corrupt_one(
    jobs: str, offset: int, wire: int, tmp_path: Path
) -> None:
    """The issue's command: once exit 1 and no cards with one job, exit 4 with two."""
    bad = _flipped(tmp_path, {offset: 0xFF})
    cards = tmp_path / "c.json"
    done = run_cli("classify", "bad.ncu-rep", SMOKE, "-o", cards, "--jobs", jobs, cwd=tmp_path)
    line = f"bad.ncu-rep: {UNREADABLE} (unsupported wire type {wire})"
    assert (done.rc, done.stderr) == (4, f"ncu-classify: error: {line}\n")
    written = CardFile.model_validate_json(cards.read_text())
    assert written.input_errors == [line]
    found: dict[tuple[str, str], list[int]] = {}
    for card in written.cards:
        key = (Path(card.ncu_output or "").name, card.stage)
        found.setdefault(key, []).append(len(card.kernels))
    assert found == SMOKE_CARDS
    assert bad.exists()
