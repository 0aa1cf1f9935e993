"""Issue 18 as a careless and a hostile user drive it: `capture --drill-down` (stand-in ncu),
`classify` of drill-down folders in odd company, and reclassify, diff and load_cards of merged
cards. Each xfail is a defect found; its reason says what happens now."""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
from pathlib import Path

import pytest
from helpers import ROOT

from ncu_classify import CardsError, load_cards
from ncu_classify.cards.drill import DrillSource
from ncu_classify.cards.files import card_file_text
from ncu_classify.cards.model import CardFile
from ncu_classify.cards.rollup import named_dominant
from ncu_classify.cli.entry import run
from ncu_classify.core.stalls import STALL_REASONS
from ncu_classify.verdicts.classify import classify
from ncu_classify.verdicts.drill import build_drill_down
from ncu_classify.verdicts.drill_merge import _attach
from ncu_classify.verdicts.rules import load_rules

pytestmark = pytest.mark.hardening  # the hostile-input regressions, run as a set: -m hardening

FIX = ROOT / "fixtures"
FIRST, DRILL = FIX / "workload_h200_480x832", FIX / "drill_h200_480x832"
ROOFLINE = ROOT / "rules" / "roofline.yaml"
FAKEBIN = ROOT / "tests" / "fakebin"
SHAPES = FIX / "fault_h200" / "dit3.yaml"
K144 = "dit:linear:M4680_N5120_K144:bf16:bias"
RULES = load_rules(ROOFLINE)


@functools.cache
def cards_of(*folders: Path) -> CardFile:
    return classify(list(folders), RULES, jobs=2)


@pytest.fixture(scope="module")
def merged(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("merged") / "cards.json"
    path.write_text(card_file_text(cards_of(FIRST, DRILL)))
    return path


@pytest.fixture
def first(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Cards of a stand-in capture of the three DiT shapes (K=144 unresolved)."""
    monkeypatch.setenv("PATH", f"{FAKEBIN}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_NCU_REPORTS", str(FIX / "fault_h200"))
    for name in ("FAKE_NCU_MODE", "FAKE_SHAPE_SECONDS", "FAKE_NCU_LOG"):
        monkeypatch.delenv(name, raising=False)
    assert _capture(tmp_path / "raw") == 0
    assert _classify(tmp_path / "first.json", tmp_path / "raw") == 0
    return tmp_path / "first.json"


def _capture(out: Path, *extra: str) -> int:
    return run(["capture", "--shapes", str(SHAPES), "-o", str(out), *extra])


def _classify(out: Path, *inputs: Path) -> int:
    return run(["classify", *map(str, inputs), "-o", str(out), "--rules", str(ROOFLINE)])


def _edited(src: Path, dst: Path, edit) -> Path:  # type: ignore[no-untyped-def]
    doc = json.loads(src.read_text())
    edit(doc)
    dst.write_text(json.dumps(doc))
    return dst


def _card(doc: dict, group: str = K144) -> dict:
    return next(c for c in doc["cards"] if c["group"] == group)


BAD_CARDS = {  # name -> (how the file is made from the stand-in cards, what the line says)
    "folder": (lambda p, _: p.mkdir(), "cannot read: Is a directory"),
    "fifo": (lambda p, _: os.mkfifo(p), "a FIFO (named pipe), not a regular file"),
    "latin1": (lambda p, _: p.write_bytes(b"\xff{}"), ":1:1: not UTF-8 text (byte 0xff)"),
    "status": (
        lambda p, f: _edited(f, p, lambda d: _card(d).update(status="weird")),
        "cards.1.status: Input should be 'classified', 'unresolved'",
    ),
    "no_dominant": (
        lambda p, f: _edited(f, p, lambda d: _card(d).pop("dominant_kernel")),
        "cards.1.dominant_kernel: Field required",
    ),
}


@pytest.mark.parametrize("kind", [*BAD_CARDS, "devnull"])
def test_a_bad_cards_file_is_refused_in_one_line_naming_it(
    first: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    bad, (make, where) = tmp_path / kind, BAD_CARDS.get(kind, (None, "a character device"))
    if make is None:
        bad = Path(os.devnull)
    else:
        make(bad, first)
    capsys.readouterr()
    assert _capture(tmp_path / "d", "--drill-down", str(bad)) == 3
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith(f"ncu-classify: error: {bad}") and where in line
    assert "cards." not in where or line.startswith(f"ncu-classify: error: {bad}:1:")
    assert not (tmp_path / "d").exists()


def test_an_odd_drill_class_is_warned_escaped_and_the_selection_kept(
    first: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    argv = ["--drill-down", str(first), "--drill-class", "\x1b[31mred", "--dry-run"]
    assert _capture(tmp_path / "d", *argv) == 0
    out, err = capsys.readouterr()
    warning = f"--drill-class \\x1b[31mred: no card of {first} has that class"
    assert err == f"ncu-classify: warning: {warning}\n"
    assert f"# drill-down of {first.name}: 1 shape (1 unresolved)" in out


def test_shards_split_the_selection_and_a_resume_must_keep_it(
    first: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    classes = ["--drill-class", "tensor_pipe_bound", "--drill-class", "dram_bandwidth_bound"]
    groups: list[str] = []
    for k in (1, 2):
        assert (
            _capture(tmp_path / f"s{k}", "--drill-down", str(first), *classes, f"--shard={k}/2")
            == 0
        )
        manifest = json.loads((tmp_path / f"s{k}" / "manifest.json").read_text())
        groups += [s["group"] for s in manifest["shapes"]]
    assert sorted(groups) == sorted(manifest["drill_down"]["selected"]) and len(groups) == 3
    capsys.readouterr()
    assert _capture(tmp_path / "s1", "--resume", "--shard=1/2") == 2  # the --drill-down left out
    assert "another --drill-down selection" in capsys.readouterr().err


def test_old_format_cards_are_refused_as_such(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    legacy = tmp_path / "old.json"  # a name that does not say legacy
    shutil.copy(FIX / "legacy" / "legacy_cards_480x832.json", legacy)
    shapes = FIX / "shapes" / "workload_480x832.yaml"
    argv = ["capture", "--shapes", str(shapes), "-o", str(tmp_path / "d"), "--dry-run"]
    assert run([*argv, "--drill-down", str(legacy)]) == 2
    line = capsys.readouterr().err.splitlines()[-1]
    assert "legacy" in line.replace(str(legacy), "<cards>")


def test_classify_of_a_merge_is_byte_identical_twice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    link = tmp_path / "link"
    link.symlink_to(DRILL)  # the drill-down given twice, once through a link: read once
    assert _classify(tmp_path / "a.json", FIRST, DRILL) == 0
    assert _classify(tmp_path / "b.json", FIRST, DRILL, link) == 0
    a, b = (json.loads((tmp_path / n).read_text()) for n in ("a.json", "b.json"))
    assert a["cards"] == b["cards"] and len(a["cards"]) == 34
    assert _classify(tmp_path / "c.json", FIRST, DRILL) == 0
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "c.json").read_bytes()
    assert json.loads(card_file_text(cards_of(DRILL, FIRST)))["cards"] == a["cards"]  # any order
    assert _card(a)["settled"]["primary"] == "memory_latency"


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        (lambda m: m["drill_down"].update(selected=[1, 2]), "drill_down.selected: Input should"),
        (lambda m: m.update(drill_down="yes"), "drill_down: Input should be a valid dictionary"),
        (lambda m: m["drill_down"].update(cards_sha256=5), "drill_down.cards_sha256: Input"),
    ],
)
def test_a_hand_edited_drill_manifest_is_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], edit, field: str
) -> None:  # type: ignore[no-untyped-def]
    drill = tmp_path / "drill"
    shutil.copytree(DRILL, drill)
    _edited(drill / "manifest.json", drill / "manifest.json", edit)
    capsys.readouterr()
    assert _classify(tmp_path / "c.json", FIRST, drill) == 3
    [line] = capsys.readouterr().err.splitlines()
    where = re.escape(f"ncu-classify: error: {drill / 'manifest.json'}:")
    assert re.match(rf"{where}\d+:\d+: manifest field ", line), line  # file:line:col
    assert field in line and not (tmp_path / "c.json").exists()


def test_a_second_drill_down_of_the_same_shapes_is_said_and_not_merged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], merged: Path
) -> None:
    second = tmp_path / "again"
    shutil.copytree(DRILL, second)
    _edited(second / "manifest.json", second / "manifest.json",
            lambda m: m.update(created_at="2026-12-03T00:00:00+00:00"))  # fmt: skip
    capsys.readouterr()
    assert _classify(tmp_path / "c.json", FIRST, DRILL, second) == 0
    [line] = [w for w in capsys.readouterr().err.splitlines() if "capture again (" in w]
    assert line.endswith(f"12 shapes drilled down already by an earlier input (first: {K144});"
                         " the earlier drill-down is merged")  # fmt: skip
    cards = json.loads((tmp_path / "c.json").read_text())["cards"]
    assert cards == json.loads(merged.read_text())["cards"]


def test_a_drill_down_that_drills_none_of_the_cards_is_warned(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = FIX / "drill_h200_704x1280"
    capsys.readouterr()
    assert _classify(tmp_path / "c.json", FIRST, other) == 0
    assert len(json.loads((tmp_path / "c.json").read_text())["cards"]) == 47  # as documented
    assert f"drill-down capture {other.name} (" in capsys.readouterr().err


def test_a_drill_down_alone_names_its_capture_as_what_settled_it() -> None:
    card = next(c for c in cards_of(DRILL).cards if c.group == K144)
    drill = card.kernels[0].drill_down
    assert drill is not None and card.settled is not None
    assert drill.source.experiment.startswith(f"drill-down capture {DRILL.name} (")
    assert card.settled.settled_by == drill.source.experiment


def test_a_shape_that_failed_in_the_drill_down_stays_one_card(first: Path, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    monkeypatch.setenv("FAKE_NCU_MODE", "crash_after_0")
    assert _capture(tmp_path / "d", "--drill-down", str(first)) == 5
    capsys.readouterr()
    assert _classify(tmp_path / "c.json", tmp_path / "raw", tmp_path / "d") == 0
    assert "appears in 2 cards" not in capsys.readouterr().err
    cards = json.loads((tmp_path / "c.json").read_text())["cards"]
    assert [c["status"] for c in cards] == ["classified", "unresolved", "classified"]


def test_a_drill_down_is_not_paired_with_a_failed_card(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    raw = tmp_path / "raw"
    shutil.copytree(FIRST, raw)
    (raw / "gpu1.ncu-rep.xz").unlink()  # holds the K=144 GEMM
    capsys.readouterr()
    assert _classify(tmp_path / "c.json", raw, DRILL) == 4
    assert f"{K144}: the drill-down has kernel" not in capsys.readouterr().err
    cards = json.loads((tmp_path / "c.json").read_text())["cards"]
    held = [c for c in cards if c["group"] == K144]
    assert any(k.get("drill_down") for c in held for k in c["kernels"])


def test_a_drill_down_that_launched_other_kernels_is_not_merged() -> None:
    group = "vae:conv3d:in1x96x3x482x210_w96x96x3x3x3_s1x1x1_p0x0x0:fp32:tf32"
    card = next(c for c in cards_of(FIRST).cards if c.group == group)
    drilled = next(c for c in cards_of(DRILL).cards if c.group == group)
    top = named_dominant(drilled)
    kernels = [
        k if k is top else k.model_copy(update={"function_name": "other", "kernel": "other"})
        for k in drilled.kernels
    ]
    warnings: list[str] = []
    out = _attach(card, drilled.model_copy(update={"kernels": kernels}), RULES, warnings)
    assert warnings and card.status == "unresolved"
    assert out.settled is None and not any(k.drill_down for k in out.kernels)


def test_reclassify_keeps_the_drill_down_and_the_settled_verdict(
    merged: Path, tmp_path: Path
) -> None:
    again = tmp_path / "again.json"
    assert run(["reclassify", str(merged), "-o", str(again), "--rules", str(ROOFLINE)]) == 0
    before, after = (json.loads(p.read_text())["cards"] for p in (merged, again))
    kept = [(c.get("settled"), [k.get("drill_down") for k in c["kernels"]]) for c in before]
    assert kept == [(c.get("settled"), [k.get("drill_down") for k in c["kernels"]]) for c in after]
    assert _card({"cards": after})["settled"]["settled_by"].startswith(
        f"drill-down capture {DRILL.name} ("
    )


def test_load_cards_gives_the_drill_down_columns(merged: Path) -> None:
    cards, kernels = load_cards(merged), load_cards(merged, level="kernel")
    settled = dict(zip(cards.group, cards.settled, strict=True))
    pairs = zip(kernels.group, kernels.settled, strict=True)
    assert all(s == settled[g] or s is settled[g] for g, s in pairs)
    row = kernels[kernels.group == K144].iloc[0]
    assert (row.drill_settled, row.cpi) == ("memory_latency", 13.0128)
    assert row.stall_top_reasons.startswith("long_scoreboard 43.4 %, barrier 10.6 %, wait 10.2 %")
    assert kernels.cpi.notna().sum() == 33 and cards.settled.notna().sum() >= 9


def test_load_cards_of_odd_top_reasons_raises_cards_error(merged: Path, tmp_path: Path) -> None:
    def edit(doc: dict) -> None:
        down = _card(doc)["kernels"][0]["drill_down"]
        down["top_reasons"] = ["bogus", *down["top_reasons"]]

    path = _edited(merged, tmp_path / "odd.json", edit)
    try:
        frame = load_cards(path, level="kernel")
    except CardsError as exc:
        assert "top_reasons" in str(exc)
    else:
        assert frame.stall_top_reasons.notna().sum() == 33


def test_diff_sees_a_settled_class_change(merged: Path, tmp_path: Path) -> None:
    def edit(doc: dict) -> None:
        card = _card(doc)
        card["settled"]["primary"] = card["kernels"][0]["drill_down"]["settled"] = (
            "dependency_latency"
        )

    other = _edited(merged, tmp_path / "other.json", edit)
    out = tmp_path / "diff.json"
    assert run(["diff", str(merged), str(other), "-o", str(out)]) == 0
    diff = json.loads(out.read_text())
    moved = {(r["primary"], r["baseline_cards"], r["candidate_cards"]) for r in diff["rollup"]
             if r["stage"] == "dit" and r["baseline_cards"] != r["candidate_cards"]}  # fmt: skip
    assert moved == {("memory_latency", 1, 0), ("dependency_latency", 0, 1)}
    [shape] = [s for s in diff["shapes"] if s["baseline"]["group"] == K144]
    assert shape["change"] != "same"


def test_reclassify_of_an_odd_grid_is_no_internal_error(
    merged: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def edit(doc: dict) -> None:
        kernel = next(k for c in doc["cards"] for k in c["kernels"]
                      if "output tiles" in (k.get("verdict_note") or ""))  # fmt: skip
        kernel["metrics"]["grid"], kernel["verdict_note"] = 0.5, None

    odd = _edited(merged, tmp_path / "odd.json", edit)
    capsys.readouterr()
    code = run(["reclassify", str(odd), "-o", str(tmp_path / "r.json"), "--rules", str(ROOFLINE)])
    assert code in (0, 3) and "internal error" not in capsys.readouterr().err


def test_a_kernel_whose_stall_reasons_are_all_zero_is_not_settled() -> None:
    stalls = {reason: 0.0 for reason in STALL_REASONS} | {"cpi": 4.0}
    down = build_drill_down(stalls, {}, {}, DrillSource(experiment="x"))
    assert (down.settled, down.finding, down.stalls, down.top_reasons) == (
        None, "no stall cycles recorded", [], []
    )  # fmt: skip


def test_the_cpi_is_rounded_alike_without_stall_cycles() -> None:
    stalls = {reason: 0.0 for reason in STALL_REASONS} | {"cpi": 1.2345678}
    assert build_drill_down(stalls, {}, {}, DrillSource(experiment="x")).cpi == 1.23457
