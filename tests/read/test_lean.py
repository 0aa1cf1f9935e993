"""Every report is read through a copy without its source blocks (`read/lean.py`): the rows are
those of the report itself, ncu_report opens the copy (a file in memory, else a temporary file),
not the user's file, the copy is gone afterwards, and where it cannot be made (no memory file
and a full disk, or no usable temporary folder) the report itself is read."""

from __future__ import annotations

import lzma
import os
import shutil
import tempfile
from pathlib import Path

import ncu_report
import pytest
from helpers import SMOKE

from ncu_classify.read import lean
from ncu_classify.read.framing import check_report
from ncu_classify.read.kernels import read_report


@pytest.fixture(scope="module")
def attention(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The smoke capture's attention report, plain: 3 kernels, 1,643,346 of its 1,715,138
    bytes in source blocks."""
    plain = tmp_path_factory.mktemp("lean") / "attention.ncu-rep"
    with lzma.open(SMOKE / "attention.ncu-rep.xz") as src, plain.open("wb") as dst:
        shutil.copyfileobj(src, dst)
    return plain


MEMORY = "(a file in memory)"


def _opened(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    """(name, size) of every file ncu_report opens from now on; MEMORY for a memfd."""
    opened: list[tuple[str, int]] = []
    original = ncu_report.load_report

    def load(path: str) -> object:
        memory = path.startswith("/proc/self/fd/") and os.readlink(path).startswith("/memfd:")
        opened.append((MEMORY if memory else Path(path).name, Path(path).stat().st_size))
        return original(path)

    monkeypatch.setattr(ncu_report, "load_report", load)
    return opened


def _rows(path: Path, scratch: Path) -> list[dict[str, object]]:
    return [row.model_dump() for row in read_report(path, scratch=scratch).kernels]


def test_the_copy_reads_the_rows_of_the_report(
    attention: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    info = check_report(attention)
    assert (info.size, lean.source_bytes(info), info.kernels) == (1_715_138, 1_643_346, 3)
    opened = _opened(monkeypatch)
    through_copy = _rows(attention, tmp_path)
    assert opened == [(MEMORY, 1_715_138 - 1_643_346)]  # the copy, 71,792 bytes
    assert list(tmp_path.iterdir()) == []  # nothing on disk
    monkeypatch.setattr(lean, "MIN_SOURCE_BYTES", 1 << 40)
    whole = _rows(attention, tmp_path)
    assert opened[1] == ("attention.ncu-rep", 1_715_138)
    assert through_copy == whole
    assert str(whole[1]["demangled_name"])[:40] == "void pytorch_flash::flash_fwd_kernel<Fla"


def test_without_files_in_memory_the_copy_is_a_temporary_file_that_goes(
    attention: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delattr(os, "memfd_create", raising=False)  # not Linux, or an old one
    opened = _opened(monkeypatch)
    rows = _rows(attention, tmp_path)
    assert [size for _, size in opened] == [71_792]
    assert opened[0][0].startswith("lean-") and opened[0][0].endswith(".ncu-rep")
    assert list(tmp_path.iterdir()) == []  # and it is gone
    assert rows == _rows(attention, tmp_path)  # as read through memory


def test_a_report_with_little_source_is_read_as_it_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plain = tmp_path / "dit.ncu-rep"  # 48,152 source bytes of 120,947
    with lzma.open(SMOKE / "dit.ncu-rep.xz") as src, plain.open("wb") as dst:
        shutil.copyfileobj(src, dst)
    opened = _opened(monkeypatch)
    assert len(read_report(plain).kernels) == 3
    assert opened == [("dit.ncu-rep", 120_947)]


def test_without_copy_file_range_the_copy_is_the_same(
    attention: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    info = check_report(attention)
    with lean.lean_report(attention, info, tmp_path) as fast:
        expected = fast.read_bytes()

    def refuse(*args: object) -> int:
        raise OSError(18, "Invalid cross-device link")

    monkeypatch.setattr(os, "copy_file_range", refuse)
    monkeypatch.setattr(os, "sendfile", refuse)
    with lean.lean_report(attention, info, tmp_path) as slow:
        assert slow.read_bytes() == expected
        copied = check_report(slow)
    assert len(expected) == 71_792
    assert (copied.kernels, copied.source_blocks) == (3, [])


def test_a_copy_that_cannot_be_written_reads_the_report(
    attention: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def full(*args: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(lean, "copy_without_sources", full)
    opened = _opened(monkeypatch)
    assert len(read_report(attention, scratch=tmp_path).kernels) == 3
    assert opened == [("attention.ncu-rep", 1_715_138)]
    assert list(tmp_path.iterdir()) == []


def test_without_a_temporary_folder_the_report_is_read(
    attention: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    opened = _opened(monkeypatch)
    rows = read_report(attention, scratch=tmp_path / "gone").kernels
    monkeypatch.delattr(os, "memfd_create", raising=False)
    again = read_report(attention, scratch=tmp_path / "gone").kernels
    assert [r.action_index for r in rows] == [r.action_index for r in again] == [0, 1, 2]
    # the copy in memory needs no folder; without it, the report itself
    assert opened == [(MEMORY, 71_792), ("attention.ncu-rep", 1_715_138)]


def test_a_temporary_folder_that_is_not_utf8_reads_the_report(
    attention: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ncu_report takes UTF-8 paths only: a copy there could not be opened (a TMPDIR of other
    bytes made every report with sources unreadable)."""
    odd = Path(os.fsdecode(bytes(tmp_path) + b"/t\xff"))
    odd.mkdir()
    monkeypatch.delattr(os, "memfd_create", raising=False)  # a copy in memory has no path
    opened = _opened(monkeypatch)
    assert len(read_report(attention, scratch=odd).kernels) == 3
    monkeypatch.setenv("TMPDIR", str(odd))
    monkeypatch.setattr(tempfile, "tempdir", None)  # read TMPDIR again
    assert len(read_report(attention).kernels) == 3
    assert opened == [("attention.ncu-rep", 1_715_138)] * 2
    assert list(odd.iterdir()) == []


def test_without_any_temporary_folder_plain_reports_are_read(
    attention: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """No usable temporary folder at all: plain reports are read as they are, a compressed one
    fails alone, naming its file (the run used to stop with a misleading output error). (The
    compressed one a loose report: in its capture folder, its shapes' cards would say so.)"""
    from ncu_classify.verdicts.classify import classify
    from ncu_classify.verdicts.rules import load_rules

    def none(*args: object, **kwargs: object) -> None:
        raise FileNotFoundError(2, "No usable temporary directory found")

    rules = load_rules()
    (tmp_path / "dit.ncu-rep.xz").symlink_to(SMOKE / "dit.ncu-rep.xz")
    monkeypatch.setattr(tempfile, "TemporaryDirectory", none)
    monkeypatch.setattr(tempfile, "gettempdir", none)
    cards = classify([attention, tmp_path / "dit.ncu-rep.xz"], rules, jobs=1)
    assert len(cards.cards) == 3 and len(cards.input_errors) == 1
    assert cards.input_errors[0].startswith("dit.ncu-rep.xz: cannot read: ")


def test_the_copies_in_memory_are_closed_report_by_report(attention: Path, tmp_path: Path) -> None:
    """A run over thousands of reports keeps no descriptor (nor memory) of the ones it read."""
    before = sorted(os.listdir("/proc/self/fd"))
    for _ in range(20):
        assert len(read_report(attention, scratch=tmp_path).kernels) == 3
    assert sorted(os.listdir("/proc/self/fd")) == before
    assert list(tmp_path.iterdir()) == []
