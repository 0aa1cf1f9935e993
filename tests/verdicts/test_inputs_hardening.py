"""Issue 15, items 2 and 3, on real H200 reports: loose reports of two names pair in `diff` by
what their cards hold; a capture report read without its folder keeps its ids, stage and
nominal FLOPs; missing, unreadable, non-regular and non-UTF-8 inputs are one line each."""

from __future__ import annotations

import errno
import json
import os
import pathlib
import shutil
from pathlib import Path

import pytest
from helpers import ROOT, SMOKE, USER_FULL, run_cli

from ncu_classify.cards.files import card_file_text
from ncu_classify.cli.entry import run
from ncu_classify.verdicts import classify as classify_module
from ncu_classify.verdicts.classify import classify
from ncu_classify.verdicts.rules import LoadedRules

pytestmark = pytest.mark.hardening  # the hostile-input regressions, run as a set: -m hardening

SET_FULL = ROOT / "fixtures" / "set_full_h200"
RUN, RERUN = SET_FULL / "h200_run.ncu-rep.xz", SET_FULL / "h200_rerun_full.ncu-rep.xz"
ROOFLINE = ROOT / "fixtures" / "roofline_h200"
WORKLOAD = ROOT / "fixtures" / "workload_h200_480x832"


def _cards(tmp_path: Path, report: Path, rules: LoadedRules, name: str) -> Path:
    """Cards of one report, written where diff reads them."""
    target = tmp_path / f"{name}.json"
    target.write_text(card_file_text(classify([report], rules, jobs=1)))
    return target


def _diff(base: Path, cand: Path, tmp_path: Path) -> dict:
    target = tmp_path / "diff.json"
    assert run(["diff", str(base), str(cand), "--format", "json", "-o", str(target)]) == 0
    return json.loads(target.read_text())


def _rows(doc: dict) -> list[tuple]:
    return [
        (s["change"], s["matched_by"], (s["baseline"] or {}).get("group"),
         (s["candidate"] or {}).get("group"))
        for s in doc["shapes"]
    ]  # fmt: skip


KERNEL = "nvjet_sm90_tst_256x144_64x4_2x1_v_bz_coopA_TNT"
SDPA = (
    "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x128_4x1x1"
    "_cga1x1x1_kernel0_0"
)
NAMES = [KERNEL, "qkv_linear", SDPA, "self_attention", "unrolled_elementwise_kernel", "output_cast"]
HOW = ["kernel", "nvtx_range"] * 3


@pytest.mark.parametrize("forward", [True, False])
def test_one_program_under_two_report_names_pairs_by_range_and_kernel(
    forward: bool, tmp_path: Path, rules: LoadedRules
) -> None:
    """Default set and --set full of user_nvtx.py, each way round: every card pairs (the three
    NVTX ranges by name, the three warm-up launches by kernel), none added or removed."""
    a, b = _cards(tmp_path, RUN, rules, "run"), _cards(tmp_path, RERUN, rules, "rerun")
    (base, cand), stems = ((a, b), ("h200_run", "h200_rerun_full"))
    if not forward:
        (base, cand), stems = (b, a), (stems[1], stems[0])
    doc = _diff(base, cand, tmp_path)
    assert doc["counts"] == {"same": 6}
    assert _rows(doc) == [
        ("same", how, f"{stems[0]}:{name}", f"{stems[1]}:{name}")
        for how, name in zip(HOW, NAMES, strict=True)
    ]
    assert doc["warnings"] == [
        "loose reports of other names compared by what their cards hold: baseline stage"
        f" {stems[0]!r} with candidate stage {stems[1]!r}: 6 of 6 and 6 cards paired"
        " (3 by NVTX range, 3 by kernel name)"
    ]
    assert {s["stage"] for s in doc["shapes"]} == {r["stage"] for r in doc["rollup"]} == {stems[0]}
    qkv = doc["shapes"][1]
    assert qkv["duration_ratio"] == (0.996177 if forward else 1.00384)
    # The --set full report holds the warp-state counters: its two unresolved cards are
    # settled (memory_latency), and the roll-up counts them there.
    rows = [(r["primary"], r["baseline_cards"], r["candidate_cards"]) for r in doc["rollup"]]
    plain, settled = [4, 2, 0], [4, 0, 2]
    assert rows == list(
        zip(
            ["compute_bound", "unresolved_no_dominant_limiter", "memory_latency"],
            plain if forward else settled,
            settled if forward else plain,
            strict=True,
        )
    )


def test_one_report_copied_under_two_names_pairs_whole(tmp_path: Path, rules: LoadedRules) -> None:
    (tmp_path / "h100").mkdir()
    shutil.copy(RUN, tmp_path / "h100" / "h100_run.ncu-rep.xz")
    base = _cards(tmp_path, tmp_path / "h100" / "h100_run.ncu-rep.xz", rules, "base")
    cand = _cards(tmp_path, RUN, rules, "cand")
    doc = _diff(base, cand, tmp_path)
    assert [row[1] for row in _rows(doc)] == HOW
    assert [s["duration_ratio"] for s in doc["shapes"]] == [1.0] * 6
    assert [s["kernel_changed"] for s in doc["shapes"]] == [False] * 6


def test_another_program_pairs_what_it_shares_and_says_so(
    tmp_path: Path, rules: LoadedRules
) -> None:
    """linear_cast (no NVTX ranges) shares the GEMM and the cast kernels with user_nvtx.py."""
    base = _cards(tmp_path, USER_FULL, rules, "lc")
    doc = _diff(base, _cards(tmp_path, RUN, rules, "run"), tmp_path)
    assert doc["counts"] == {"added": 4, "removed": 2, "same": 2}
    assert [row for row in _rows(doc) if row[0] == "same"] == [
        ("same", "kernel", f"linear_cast:{KERNEL}", f"h200_run:{KERNEL}"),
        ("same", "kernel", "linear_cast:unrolled_elementwise_kernel",
         "h200_run:unrolled_elementwise_kernel"),
    ]  # fmt: skip
    assert doc["warnings"] == [
        "loose reports of other names compared by what their cards hold: baseline stage"
        " 'linear_cast' with candidate stage 'h200_run': 2 of 4 and 6 cards paired"
        " (2 by kernel name)"
    ]


def test_capture_against_loose_report_warns_why_nothing_paired(
    tmp_path: Path, rules: LoadedRules, smoke_cards
) -> None:
    base = tmp_path / "smoke.json"
    base.write_text(card_file_text(smoke_cards))
    doc = _diff(base, _cards(tmp_path, RUN, rules, "run"), tmp_path)
    assert doc["counts"] == {"added": 6, "removed": 11}
    assert doc["warnings"] == [
        "nothing paired (11 baseline and 6 candidate cards; baseline stages dit, vae, attention,"
        " output, candidate stages h200_run): the candidate's cards come from reports without a"
        " capture manifest (stages named after the report files), the other's from a capture"
        " (group ids): classify both sides from the same kind of input"
    ]


def _by_group(cards) -> dict:
    return {c.group: c for c in cards.cards}


@pytest.mark.parametrize(
    ("folder", "report"), [(ROOFLINE, "all.ncu-rep.xz"), (WORKLOAD, "gpu0.ncu-rep.xz")]
)
def test_capture_report_alone_keeps_group_stage_and_nominal_flops(
    folder: Path, report: str, tmp_path: Path, rules: LoadedRules
) -> None:
    shutil.copy(folder / report, tmp_path / "moved.ncu-rep.xz")
    alone = _by_group(classify([tmp_path / "moved.ncu-rep.xz"], rules, jobs=1))
    whole = _by_group(classify([folder], rules, jobs=2))
    assert alone and set(alone) <= set(whole)
    for group, card in alone.items():
        ref = whole[group]
        got = (card.stage, card.op, card.nominal_mac_flops, card.nominal_bytes, card.primary)
        assert got == (ref.stage, ref.op, ref.nominal_mac_flops, ref.nominal_bytes, ref.primary)
        assert card.roofline and ref.roofline
        assert card.roofline.mfu_pct == ref.roofline.mfu_pct
    if folder == ROOFLINE:
        gemm = alone["dit:linear:M4680_N5120_K5120:bf16:bias"]
        assert (gemm.nominal_mac_flops, gemm.roofline.mfu_pct) == (245_366_784_000, 92.9562)
        assert sum(c.roofline.mfu_pct is not None for c in alone.values()) == 9


def test_every_captured_group_id_reads_back_to_its_shape() -> None:
    from ncu_classify.verdicts.group_ids import parse_group_id

    seen = named = 0
    for manifest in sorted(ROOT.glob("fixtures/**/manifest.json")):
        if "repeat_h200" in manifest.parts:  # the tarball unpacked by make.sh (git-ignored)
            continue
        for shape in json.loads(manifest.read_text())["shapes"]:
            named_by_file = ":" not in shape["group"].split(":", 1)[1]  # `try`'s m01.as_recorded
            chained = "chain" in shape["shape_parameters"]  # a compiled region: its ops inside
            if "overload" in shape["shape_parameters"] or named_by_file or chained:  # a name
                assert parse_group_id(shape["group"]) is None, shape["group"]
                named += 1
                continue
            entry = parse_group_id(shape["group"])
            assert entry is not None, shape["group"]
            flops, size = entry.shape.nominal_flops(), entry.shape.nominal_bytes()
            assert (entry.stage, flops, size) == (
                shape["stage"],
                shape["nominal_mac_flops"],
                shape["nominal_bytes"],
            ), shape["group"]
            seen += 1
    # the Wan 14B recording: 43 typed, 210 aten; the drill-downs: 12 + 13 of the workload,
    # 13 typed and 48 aten of the Wan 14B recording; the tries captures name all theirs (36 VAE
    # and 23 DiT shapes per op, 366 of the program-wide move, 16 with the decode's chains, 19
    # with the DiT's, 20 with the decode's folds, 23 of LTX's DiT); the compiled block: its
    # region (a chain inside) and 2 aten
    tries = 36 + 23 + 366 + 16 + 19 + 20 + 23
    assert (seen, named) == (307 + 43 + 12 + 13 + 13, 210 + 48 + tries + 3)
    users = ["qkv_linear", "dit:qkv", "dit:linear:M1_N2_K3:bf16:bias:x", "a b:linear:M1_N2_K3:bf16"]
    for name in [*users, "dit:linear:M01_N2_K3:bf16", "dit:cast:2x3:fp32-int8"]:
        assert parse_group_id(name) is None, name


def _errors(capsys: pytest.CaptureFixture[str]) -> list[str]:
    lines = capsys.readouterr().err.splitlines()
    return [line for line in lines if line.startswith("ncu-classify: error:")]


def test_capture_folder_with_a_report_deleted_exits_4_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "cap"
    shutil.copytree(SMOKE, folder)
    (folder / "dit.ncu-rep.xz").unlink()
    (folder / "output.ncu-rep.xz").unlink()
    out = tmp_path / "cards.json"
    assert run(["classify", str(folder), "-o", str(out), "--jobs", "1"]) == 4
    assert _errors(capsys) == [
        f"ncu-classify: error: {folder}/dit.ncu-rep: missing: the capture's manifest.json"
        " names it for 3 captured shapes",
        f"ncu-classify: error: {folder}/output.ncu-rep: missing: the capture's manifest.json"
        " names it for 1 captured shape",
    ]
    cards = json.loads(out.read_text())["cards"]
    assert [c["status"] for c in cards] == ["failed"] * 3 + [
        "classified", "classified", "unresolved", "classified", "unresolved", "unresolved",
        "failed", "failed",
    ]  # fmt: skip
    assert cards[0]["error"] == (
        f"its report could not be read: {folder.name}/dit.ncu-rep: missing: the capture's"
        " manifest.json names it for 3 captured shapes"
    )


def test_report_names_that_are_no_regular_file_are_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "cap"
    shutil.copytree(SMOKE, folder)
    (folder / "dit.ncu-rep.xz").unlink()
    (folder / "dit.ncu-rep.xz").symlink_to(folder / "gone")
    (folder / "output.ncu-rep.xz").unlink()
    os.mkfifo(folder / "output.ncu-rep.xz")
    (folder / "vae.ncu-rep.xz").unlink()
    (folder / "vae.ncu-rep").mkdir()
    (tmp_path / "loop.ncu-rep").symlink_to(tmp_path / "loop.ncu-rep")
    out = tmp_path / "cards.json"
    argv = ["classify", str(folder), str(tmp_path / "loop.ncu-rep"), "-o", str(out)]
    assert run(argv) == 4
    assert _errors(capsys) == [
        f"ncu-classify: error: {folder}/dit.ncu-rep.xz: cannot read: a symbolic link to a file"
        " or folder that does not exist",
        f"ncu-classify: error: {folder}/output.ncu-rep.xz: cannot read: a FIFO (named pipe),"
        " not a regular file",
        f"ncu-classify: error: {folder}/vae.ncu-rep: cannot read: Is a directory",
        f"ncu-classify: error: {tmp_path}/loop.ncu-rep: cannot read: Too many levels of"
        " symbolic links",
    ]
    cards = json.loads(out.read_text())["cards"]
    assert [c["group"].split(":")[0] for c in cards if c["status"] != "failed"] == ["attention"] * 3


def test_unreadable_report_exits_4_with_cannot_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """chmod 000 as a user other than root: what open() then raises, raised for one report."""
    locked = tmp_path / "locked.ncu-rep.xz"
    shutil.copy(SMOKE / "dit.ncu-rep.xz", locked)
    denied = OSError(errno.EACCES, "Permission denied", str(locked))
    real_open, real_path_open = os.open, pathlib.Path.open

    def os_open(path, *args, **kwargs):  # type: ignore[no-untyped-def]
        if str(path) == str(locked):
            raise denied
        return real_open(path, *args, **kwargs)

    def path_open(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        if str(self) == str(locked):
            raise denied
        return real_path_open(self, *args, **kwargs)

    monkeypatch.setattr(os, "open", os_open)
    monkeypatch.setattr(pathlib.Path, "open", path_open)
    out = tmp_path / "cards.json"
    argv = ["classify", str(locked), str(SMOKE / "output.ncu-rep.xz"), "-o", str(out)]
    assert run([*argv, "--jobs", "1"]) == 4
    assert _errors(capsys) == [f"ncu-classify: error: {locked}: cannot read: Permission denied"]
    assert [c["group"] for c in json.loads(out.read_text())["cards"]] == [
        "output:cast:1x3x13x480x832:fp32-bf16"
    ]


def test_report_gone_between_listing_and_reading(
    tmp_path: Path, rules: LoadedRules, monkeypatch: pytest.MonkeyPatch
) -> None:
    shutil.copy(SMOKE / "dit.ncu-rep.xz", tmp_path)
    listed = classify_module.collect_inputs

    def list_then_delete(paths):  # type: ignore[no-untyped-def]
        inputs = listed(paths)
        (tmp_path / "dit.ncu-rep.xz").unlink()
        return inputs

    monkeypatch.setattr(classify_module, "collect_inputs", list_then_delete)
    cards = classify([tmp_path], rules, jobs=1)
    assert cards.input_errors == [
        f"{tmp_path.name}/dit.ncu-rep.xz: cannot read: No such file or directory"
    ]


COMMANDS = [
    ("summary", "{fifo}"),
    ("reclassify", "{fifo} -o {out}"),
    ("diff", "{cards} {fifo}"),
    ("diff", "{cards} {cards2} --noise {fifo}"),
    ("diff", "{cards} {cards2} --reclassify {fifo}"),
    ("report", "{cards} {fifo} -o {out}.html"),
    ("classify", "{report} --rules {fifo} -o {out}"),
    ("capture", "--shapes {fifo} -o {tmp}/raw --dry-run"),
]


@pytest.mark.parametrize(("command", "args"), COMMANDS)
def test_a_fifo_is_refused_at_once_by_every_command(
    command: str, args: str, tmp_path: Path
) -> None:
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    cards = tmp_path / "c.json"
    shutil.copy(ROOT / "fixtures" / "legacy" / "legacy_cards_480x832.json", cards)
    shutil.copy(cards, tmp_path / "c2.json")
    argv = [command, *args.format(
        fifo=fifo, out=tmp_path / "o.json", cards=cards, cards2=tmp_path / "c2.json",
        report=SMOKE / "dit.ncu-rep.xz", tmp=tmp_path,
    ).split()]  # fmt: skip
    done = run_cli(*argv, timeout=60)  # its standard input empty: no read waits on it
    assert (done.rc, done.stderr.splitlines()[-1:]) == (
        3,
        [f"ncu-classify: error: {fifo}: cannot read: a FIFO (named pipe), not a regular file"],
    )
    assert not (tmp_path / "o.json").exists()


def test_a_socket_or_folder_as_cards_file(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    import socket

    sock_path = tmp_path / "s.json"
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(sock_path))
        assert run(["summary", str(sock_path)]) == 3
    assert run(["reclassify", str(tmp_path), "-o", str(tmp_path / "o.json")]) == 3
    assert _errors(capsys) == [
        f"ncu-classify: error: {sock_path}: cannot read: a socket, not a regular file",
        f"ncu-classify: error: {tmp_path}: cannot read: Is a directory",
    ]


def test_non_utf8_report_names_are_read_and_printed_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = os.fsencode(tmp_path)
    shutil.copy(SMOKE / "output.ncu-rep.xz", folder + b"/r\xff.ncu-rep.xz")
    with open(folder + b"/bad\xfe.ncu-rep", "wb") as handle:
        handle.write(b"not a report")
    out = tmp_path / "cards.json"
    assert run(["classify", str(tmp_path), "-o", str(out), "--jobs", "1"]) == 4
    assert _errors(capsys) == [
        f"ncu-classify: error: {tmp_path}/bad\\xfe.ncu-rep: not an Nsight Compute report"
        " (bad file header)"
    ]
    (card,) = json.loads(out.read_text())["cards"]
    assert (card["group"], card["ncu_output"]) == (
        "output:cast:1x3x13x480x832:fp32-bf16",
        f"{tmp_path.name}/r\\xff.ncu-rep.xz",
    )
    assert json.loads(out.read_text())["input_errors"] == [
        f"{tmp_path.name}/bad\\xfe.ncu-rep: not an Nsight Compute report (bad file header)"
    ]
