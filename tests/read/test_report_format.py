"""The report framing check, on our H200 reports and public ones from Nsight Compute 2019-2024."""

from __future__ import annotations

import lzma
from pathlib import Path

import pytest
from helpers import ROOT, SMOKE, USER_FULL

from ncu_classify.core.errors import ReportError
from ncu_classify.read.framing import NCU_PROVIDER, ReportInfo, check_report, version_message
from ncu_classify.read.names import REPORT_SUFFIXES, is_report_name, report_stem

PUBLIC = ROOT / "fixtures" / "public"
DIT_SIZE = 120947
# Every offset at which smoke_h200/dit.ncu-rep can be cut and still frame exactly: after the file
# header, after a payload, or after a header that announces none. Found by trying all 120,947.
DIT_WHOLE_PREFIXES = [10, 145, 29905, 58426, 66903, 66976, 67047, 67169, 67222, 67410, 68700]
DIT_WHOLE_PREFIXES += [85640, 104032]


def _plain(xz: Path, tmp_path: Path) -> Path:
    """The xz-compressed report `xz` inflated into `tmp_path`."""
    out = tmp_path / xz.name.removesuffix(".xz")
    out.write_bytes(lzma.decompress(xz.read_bytes()))
    return out


def _cut(tmp_path: Path, data: bytes, size: int, suffix: str = ".ncu-rep") -> Path:
    """A copy of `data` cut to `size` bytes."""
    out = tmp_path / f"cut{suffix}"
    out.write_bytes(data[:size])
    return out


@pytest.mark.parametrize(
    ("name", "stem"),
    [
        ("raw/vae.ncu-rep.xz", "vae"),
        ("vae.r2.ncu-rep", "vae.r2"),
        ("/a/b/run.ncu-repz", "run"),
        ("old.nsight-cuprof-report.gz", "old"),
        ("x.ncu-repz.bz2", "x"),
        ("notes.txt", "notes.txt"),
    ],
)
def test_report_stem(name: str, stem: str) -> None:
    assert report_stem(name) == stem
    assert is_report_name(name) == (name != "notes.txt")


def test_suffixes_cover_every_kind_and_compression() -> None:
    assert len(REPORT_SUFFIXES) == 12
    assert {".ncu-rep", ".ncu-rep.xz", ".ncu-repz", ".nsight-cuprof-report.gz"} <= set(
        REPORT_SUFFIXES
    )
    assert not is_report_name("vae.ncu-rep.zip") and not is_report_name("vae.NCU-REP")


# name: (ncu version, kernels its block headers announce)
PUBLIC_REPORTS = {
    "mistic_a100_2020.3.0.ncu-rep.xz": ("2020.3.0.0", 1),
    "speedy_scan_rtx3070_2020.3.1.ncu-rep.xz": ("2020.3.1.0", 1),
    "mistic_a100_2021.2.2.ncu-rep.xz": ("2021.2.2.0", 4),
    "cudacode_rtx2080ti_2022.3.0.ncu-rep.xz": ("2022.3.0.0", 2),
    "mistic_a100_2022.4.0_unprofiled.ncu-rep.xz": ("2022.4.0.0", 1),
    "mojo_gtx1660ti_2022.4.0.ncu-rep.xz": ("2022.4.0.0", 4),
    "hyperspec_rtx2060maxq_2024.3.2.ncu-rep.xz": ("2024.3.2.0", 8),
    "physicell_v100_2019.nsight-cuprof-report.xz": (None, 30),  # 2019.x: no version recorded
    "darknet_xavier_2019.nsight-cuprof-report.xz": (None, 7),
}


@pytest.mark.parametrize("name", sorted(PUBLIC_REPORTS))
def test_public_reports_frame_exactly(name: str, tmp_path: Path) -> None:
    info = check_report(_plain(PUBLIC / name, tmp_path))
    assert (info.ncu_version, info.kernels) == PUBLIC_REPORTS[name]
    assert info.format_version == 7 and info.kind == ".ncu-rep"


@pytest.mark.parametrize(
    ("path", "kernels"),
    [(SMOKE / "dit.ncu-rep.xz", 3), (SMOKE / "vae.ncu-rep.xz", 6), (USER_FULL, 4)],
)
def test_our_reports_carry_format_7_and_ncu_2025_3_1(
    path: Path, kernels: int, tmp_path: Path
) -> None:
    info = check_report(_plain(path, tmp_path))
    assert info.kernels == kernels and info.format_version == 7
    assert info.tool_versions == {
        "CUDA Version": "13.0",
        "PerfWorks": "0.1.0",
        NCU_PROVIDER: "2025.3.1.0 (build 36398880) (public-release)",
    }


def test_only_block_boundaries_pass_for_a_cut_report(tmp_path: Path) -> None:
    data = _plain(SMOKE / "dit.ncu-rep.xz", tmp_path).read_bytes()
    assert len(data) == DIT_SIZE
    candidates = {o + d for o in [*DIT_WHOLE_PREFIXES, 196, 41536, 68751] for d in (-1, 0, 1)}
    candidates |= {0, 3, 4, 8, *(len(data) * p // 100 for p in range(1, 100))}
    accepted = []
    for size in sorted(candidates):
        try:
            check_report(_cut(tmp_path, data, size))
        except ReportError:
            continue
        accepted.append(size)
    assert accepted == DIT_WHOLE_PREFIXES


@pytest.mark.parametrize(
    ("size", "problem"),
    [
        (3, "not an Nsight Compute report (bad file header)"),
        (7, "truncated: the size of the file header at byte 4 is cut (the file ends at byte 7)"),
        (9, "truncated: file header at byte 4 declares 2 bytes but the file ends at byte 9"),
        (
            196,
            "truncated: block header at byte 145 announces a 29709-byte payload at byte 196 "
            "but the file ends at byte 196",
        ),
        (
            12094,  # 10%
            "truncated: block header at byte 145 announces a 29709-byte payload at byte 196 "
            "but the file ends at byte 12094",
        ),
        (
            60000,
            "truncated: block header at byte 58426 declares 8473 bytes "
            "but the file ends at byte 60000",
        ),
        (
            int(DIT_SIZE * 0.99),
            "truncated: block header at byte 104032 announces a 16864-byte payload at byte "
            "104083 but the file ends at byte 119737",
        ),
    ],
)
def test_truncation_message_says_where(size: int, problem: str, tmp_path: Path) -> None:
    data = _plain(SMOKE / "dit.ncu-rep.xz", tmp_path).read_bytes()
    cut = _cut(tmp_path, data, size)
    with pytest.raises(ReportError) as caught:
        check_report(cut, label="raw/dit.ncu-rep.xz")
    assert str(caught.value) == f"raw/dit.ncu-rep.xz: {problem}"


@pytest.mark.parametrize("name", sorted(PUBLIC_REPORTS))
def test_public_reports_cut_anywhere_fail(name: str, tmp_path: Path) -> None:
    data = _plain(PUBLIC / name, tmp_path).read_bytes()
    for fraction in (0.1, 0.4, 0.7, 0.99):
        size = int(len(data) * fraction)
        with pytest.raises(ReportError, match=rf"but the file ends at byte {size}$"):
            check_report(_cut(tmp_path, data, size))


def test_zero_filled_tail_is_corrupt(tmp_path: Path) -> None:
    """ncu_report reads all 3 kernels of this file and ignores the zeros."""
    data = _plain(SMOKE / "dit.ncu-rep.xz", tmp_path).read_bytes()
    padded = tmp_path / "padded.ncu-rep"
    padded.write_bytes(data + bytes(1 << 20))
    with pytest.raises(ReportError) as caught:
        check_report(padded)
    assert str(caught.value).endswith(
        f"corrupt: block header at byte {DIT_SIZE} declares 0 bytes (zero-filled from there?)"
    )


def test_payload_that_disagrees_with_its_header_is_corrupt(tmp_path: Path) -> None:
    data = bytearray(_plain(SMOKE / "dit.ncu-rep.xz", tmp_path).read_bytes())
    data[196:200] = (29705 - 8).to_bytes(4, "little")  # the SourceData claims 8 bytes fewer
    bad = tmp_path / "bad.ncu-rep"
    bad.write_bytes(bytes(data))
    with pytest.raises(ReportError) as caught:
        check_report(bad)
    assert str(caught.value).endswith(
        "corrupt: payload at byte 196: 1 messages end at byte 29897; its header at byte 145 "
        "announces 1 ending at byte 29905"
    )


def test_other_format_versions_are_walked_leniently(tmp_path: Path) -> None:
    data = bytearray(_plain(SMOKE / "dit.ncu-rep.xz", tmp_path).read_bytes())
    assert data[4:10] == b"\x02\x00\x00\x00\x08\x07"  # FileHeader {Version: 7}
    data[9] = 8
    newer = tmp_path / "newer.ncu-rep"
    newer.write_bytes(bytes(data[:60000]))  # cut, yet no framing error: format 8 may differ
    info = check_report(newer)
    assert (info.format_version, info.kernels, info.ncu_version) == (8, None, None)
    newer.write_bytes(bytes(data))
    assert check_report(newer).ncu_version == "2025.3.1.0"


def test_version_messages_name_both_sides() -> None:
    newer = ReportInfo(".ncu-rep", 1, 8, {NCU_PROVIDER: "2027.1.0.0 (build 1)"})
    assert version_message("r.ncu-rep", newer, "2026.3.1") == (
        "r.ncu-rep: written by Nsight Compute 2027.1.0.0 (report format 8); the installed "
        "ncu-report 2026.3.1 reads up to format 7: upgrade with pip install -U ncu-report"
    )
    older = ReportInfo(".ncu-rep", 1, 6)
    assert version_message("r.ncu-rep", older, "2026.3.1") == (
        "r.ncu-rep: written by an unknown Nsight Compute in report format 6, older than "
        "format 7, the only one the installed ncu-report 2026.3.1 reads"
    )


REPZ = PUBLIC / "dit_h200_2025.3.1.ncu-repz"


def test_zstd_report_frames_exactly() -> None:
    info = check_report(REPZ)
    assert (info.kind, info.size, info.format_version, info.kernels) == (
        ".ncu-repz",
        15200,
        None,
        None,
    )


def test_zstd_report_cut_anywhere_fails(tmp_path: Path) -> None:
    data = REPZ.read_bytes()
    for size in range(0, len(data), 97):
        with pytest.raises(ReportError, match=r": (truncated|not an Nsight)"):
            check_report(_cut(tmp_path, data, size, ".ncu-repz"))
    for size, problem in [
        (15199, "zstd frame checksum at byte 15196 declares 4 bytes"),
        (15195, "zstd block at byte 13263 declares 1930 bytes"),
        (7600, "zstd block at byte 4481 declares 4247 bytes"),
    ]:
        with pytest.raises(ReportError) as caught:
            check_report(_cut(tmp_path, data, size, ".ncu-repz"), label="r.ncu-repz")
        assert str(caught.value) == (
            f"r.ncu-repz: truncated: {problem} but the file ends at byte {size}"
        )


def test_zstd_trailing_bytes(tmp_path: Path) -> None:
    """A skippable frame is zstd; anything else after the last frame is not."""
    data = REPZ.read_bytes()
    skippable = tmp_path / "skip.ncu-repz"
    skippable.write_bytes(data + b"\x50\x2a\x4d\x18" + (3).to_bytes(4, "little") + b"abc")
    assert check_report(skippable).size == 15211
    junk = tmp_path / "junk.ncu-repz"
    junk.write_bytes(data + b"junk")
    with pytest.raises(ReportError, match=r"corrupt: no zstd frame at byte 15200"):
        check_report(junk)
