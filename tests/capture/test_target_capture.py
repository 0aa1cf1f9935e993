"""Capture by time and `--coverage` used carelessly (issue 41): the compiled block's recording
(fixtures/compiled_h200: the region, 10.4 ms, then main's draw, 203.6 us, and cast, 437.4 us,
in that file order) captured by the stand-in ncu from the H200's reports. Whatever order the
shapes run in, the manifest and the cards list them in the shapes file's order; capture's own
output says what a target left out, with the target as given."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from helpers import ROOT

from ncu_classify.cli.entry import run

BLOCK = ROOT / "fixtures" / "compiled_h200"
FILE_ORDER = [
    "block:compiled:block:g0:compiled",
    "main:aten.randn.default",
    "main:aten._to_copy.default:1x128x8x240x360:bf16",
]


def _groups(path: Path, key: str) -> list[str]:
    """The group ids a manifest (`shapes`) or cards file (`cards`) lists, in its order."""
    return [item["group"] for item in json.loads(path.read_text())[key]]


def test_the_manifest_and_cards_keep_the_file_s_order_whatever_the_capture_order(
    stand_in: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """By time, main's cast (437.4 us) runs before its draw (203.6 us), as its batch records;
    the manifest and the cards list them in file order, as `--order file` does (they were
    listed in capture order: the summary, `diff` and the cards of the same shapes then read
    differently by the order they ran in, and every timed recording's from before)."""
    shapes = str(BLOCK / "shapes.yaml")
    for order in ("time", "file"):
        raw = tmp_path / order
        assert run(["capture", "--shapes", shapes, "-o", str(raw), "--order", order]) == 0
        assert _groups(raw / "manifest.json", "shapes") == FILE_ORDER
        assert run(["classify", str(raw), "-o", str(tmp_path / f"{order}.json")]) == 0
        assert _groups(tmp_path / f"{order}.json", "cards") == FILE_ORDER
    batches = json.loads((tmp_path / "time" / "manifest.json").read_text())["batches"]
    assert [b["groups"] for b in batches] == [FILE_ORDER[:1], FILE_ORDER[:0:-1]]
    capsys.readouterr()
    summaries = []
    for order in ("time", "file"):
        assert run(["summary", str(tmp_path / f"{order}.json")]) == 0
        summaries.append(capsys.readouterr().out.replace(f"{order}.json", "cards.json"))
    assert summaries[0] == summaries[1]


def test_resuming_an_older_capture_keeps_its_manifest_s_order(
    stand_in: None, tmp_path: Path
) -> None:
    """The H200's capture of the block, made before capture by time, resumed with a target
    and nothing left to capture: its shapes stay in their order (they were rewritten by time:
    the cast before the draw) and the target leaves none of them out."""
    raw = tmp_path / "cap"
    shutil.copytree(BLOCK / "cap", raw)
    before = _groups(raw / "manifest.json", "shapes")
    assert before == FILE_ORDER
    argv = ["capture", "--shapes", str(BLOCK / "shapes.yaml"), "-o", str(raw), "--resume"]
    assert run([*argv, "--coverage", "50"]) == 0
    manifest = json.loads((raw / "manifest.json").read_text())
    assert _groups(raw / "manifest.json", "shapes") == before
    assert (manifest["coverage_target_pct"], manifest["below_target"]) == (50.0, [])


def test_a_resume_with_nothing_to_capture_keeps_the_host_that_captured(
    stand_in: None, tmp_path: Path
) -> None:
    """The H200's capture resumed here with nothing left to capture: the manifest still says
    the H200 and its ncu captured the shapes (it took this machine's facts, which measured
    nothing)."""
    raw = tmp_path / "cap"
    shutil.copytree(BLOCK / "cap", raw)
    before = json.loads((raw / "manifest.json").read_text())["host"]
    argv = ["capture", "--shapes", str(BLOCK / "shapes.yaml"), "-o", str(raw), "--resume"]
    assert run(argv) == 0
    host = json.loads((raw / "manifest.json").read_text())["host"]
    assert host == before and host["gpus"][0]["name"] == "NVIDIA H200"


def test_a_resume_with_nothing_to_capture_needs_no_ncu(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a machine without ncu (the laptop the capture folder was copied to), a --resume
    with nothing left to capture finishes and leaves the manifest as it was (it stopped at
    'ncu not found', exit 6); a capture with something to do still needs ncu."""
    import sys

    monkeypatch.setenv("PATH", str(Path(sys.executable).parent))  # (no ncu there)
    raw = tmp_path / "cap"
    shutil.copytree(BLOCK / "cap", raw)
    before = json.loads((raw / "manifest.json").read_text())
    argv = ["capture", "--shapes", str(BLOCK / "shapes.yaml"), "-o", str(raw), "--resume"]
    assert run(argv) == 0
    after = json.loads((raw / "manifest.json").read_text())
    assert after == before
    assert (
        run(["capture", "--shapes", str(BLOCK / "shapes.yaml"), "-o", str(tmp_path / "new")]) == 6
    )


def test_capture_says_what_the_target_left_out_with_the_target_as_given(
    stand_in: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """At --coverage 60 the draw is left out: the capture's last line says so, as --dry-run
    does (capture said nothing of it). --dry-run at 99.99999 names that target (`:g` wrote
    100, a target the user did not give); the draw is then captured."""
    shapes = str(BLOCK / "shapes.yaml")
    argv = ["capture", "--shapes", shapes, "-o", str(tmp_path / "raw"), "--coverage", "60"]
    assert run(argv) == 0
    assert capsys.readouterr().out.splitlines()[-1] == (
        "--coverage 60: 1 shape below the target, 0.204 ms of the program's kernel time,"
        " not captured"
    )
    dry = ["capture", "--shapes", shapes, "-o", str(tmp_path / "dry"), "--dry-run"]
    assert run([*dry, "--coverage", "99.99999"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == (
        "# --coverage 99.99999: 0 shapes below the target, 0.000 ms of the program's kernel"
        " time, not captured"
    )
    assert run(["capture", "--shapes", shapes, "-o", str(tmp_path / "all")]) == 0
    assert "below the target" not in capsys.readouterr().out  # without a target: as before


def test_diff_says_a_side_s_missing_shapes_were_below_its_target(
    stand_in: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The whole block against its capture at --coverage 60: the draw reads as removed, and a
    warning says why, with its stage, count and program time (the diff said only `1 removed`,
    as if the program had lost it); turned around, added. Two captures at one target have
    the same shapes: no warning."""
    shapes = str(BLOCK / "shapes.yaml")
    for name, extra in (("all", []), ("t60", ["--coverage", "60"]), ("u60", ["--coverage", "60"])):
        assert run(["capture", "--shapes", shapes, "-o", str(tmp_path / name), *extra]) == 0
        assert run(["classify", str(tmp_path / name), "-o", str(tmp_path / f"{name}.json")]) == 0
    capsys.readouterr()

    def warnings(baseline: str, candidate: str) -> list[str]:
        run(["diff", str(tmp_path / f"{baseline}.json"), str(tmp_path / f"{candidate}.json")])
        return [x for x in capsys.readouterr().out.splitlines() if x.startswith("warning:")]

    said = (
        "warning: the {} was captured at a coverage target and left shapes below it (main:"
        " 1 shape, 0.204 ms): they have no card there, so the other side's cards of them read"
        " as {}, not as a change of the program; capture both sides at one --coverage to"
        " compare every shape"
    )
    assert warnings("all", "t60") == [said.format("candidate", "below_target")]
    assert warnings("t60", "all") == [said.format("baseline", "below_target")]
    assert warnings("t60", "u60") == []
    # the draw is below_target, no change of the program: `--fail-on any` passes (it failed)
    gate = [str(tmp_path / "all.json"), str(tmp_path / "t60.json"), "--fail-on", "any"]
    assert run(["diff", *gate, "-o", str(tmp_path / "d.json")]) == 0
    changes = {s["baseline"]["group"]: s["change"] for s in _shapes(tmp_path / "d.json")}
    assert changes["main:aten.randn.default"] == "below_target"
    # and the stage's roll-up and headroom leave it out on both sides (its 204.7 us of the
    # whole capture read as the stage's time saved: 641.5 -> 436.8 us)
    diff = json.loads((tmp_path / "d.json").read_text())
    (main,) = [h for h in diff["headroom"] if h["stage"] == "main"]
    assert main["baseline"]["measured_us"] == main["candidate"]["measured_us"] == 436.8
    assert [
        (r["baseline_us"], r["candidate_us"]) for r in diff["rollup"] if r["stage"] == "main"
    ] == [(436.8, 436.8)]
    # cards made before the shapes below a target were listed: removed, and said why
    old = json.loads((tmp_path / "t60.json").read_text())
    for stage in old["coverage"]:
        for item in stage["uncovered"]:
            item.pop("groups", None)
    (tmp_path / "old.json").write_text(json.dumps(old))
    assert warnings("all", "old") == [said.format("candidate", "removed")]
    assert (
        run(["diff", str(tmp_path / "all.json"), str(tmp_path / "old.json"), "--fail-on", "any"])
        == 8
    )


def _shapes(diff: Path) -> list[dict]:  # type: ignore[type-arg]
    return json.loads(diff.read_text())["shapes"]  # type: ignore[no-any-return]


def test_a_resumed_shard_s_progress_line_takes_the_capture_s_own_shards(tmp_path: Path) -> None:
    """Shard 1/4 of the Wan 14B recording in a capture made with `hash` shards (before
    cost_v1), resumed: the line's share of each stage the shard holds is the hash shard's (it
    was cost_v1's, another set of shapes: dit 12.8 % and vae 15.5 % for 31.5 and 29.5)."""
    import lzma

    from ncu_classify.capture.manifest import Manifest, write_manifest
    from ncu_classify.capture.order import StageShares
    from ncu_classify.capture.plan import CaptureOptions
    from ncu_classify.capture.shards import select_shard
    from ncu_classify.cli.capture import progress_shares
    from ncu_classify.shapes.file import read_shapes

    wan = tmp_path / "shapes.yaml"
    wan.write_bytes(
        lzma.decompress((ROOT / "reports/record/wan_14b_480x832_h200_shapes.yaml.xz").read_bytes())
    )
    shapes, sha256 = read_shapes(wan)
    raw = tmp_path / "raw"
    raw.mkdir()
    old = Manifest(
        tool_version="0.1.0", created_at="2026-01-01T00:00:00+00:00", shapes_file="shapes.yaml",
        shapes_sha256=sha256, seed=0, warmup=3, cudnn_benchmark=False, metrics=[], shapes=[],
        shard="1/4", shard_method="hash",
    )  # fmt: skip
    write_manifest(raw, old)
    shares, before = progress_shares(wan, raw, CaptureOptions(shard=(1, 4), resume=True))
    assert shares is not None and before == []
    hashed = [e.group for e in select_shard(shapes.entries(), 1, 4, "hash")]
    expected = StageShares.of(shapes, hashed)
    assert expected is not None and shares.part == expected.part
    assert {k: round(v, 1) for k, v in (shares.part or {}).items()} == {
        "dit": 31.5, "output": 49.2, "vae": 29.5,
    }  # fmt: skip


def test_batches_on_two_gpus_are_recorded_in_the_plan_s_order(
    stand_in: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The three DiT shapes of fixtures/fault_h200 at --max-batch 2 on two GPUs: dit-1 (two
    shapes) on GPU 0 ends after dit-2 (one) on GPU 1; the manifest lists them in the plan's
    order whatever order they ended in (it listed dit-2 first: a manifest that depended on
    timing)."""
    monkeypatch.setenv("FAKE_NCU_REPORTS", str(ROOT / "fixtures" / "fault_h200"))
    monkeypatch.setenv("FAKE_GPU_COUNT", "2")
    monkeypatch.setenv("FAKE_SHAPE_SECONDS", "1")
    monkeypatch.setenv("FAKE_NCU_MODE", "slow")
    shapes = str(ROOT / "fixtures" / "fault_h200" / "dit3.yaml")
    raw = tmp_path / "raw"
    argv = ["capture", "--shapes", shapes, "-o", str(raw), "--gpus", "0,1", "--max-batch", "2"]
    assert run(argv) == 0
    batches = json.loads((raw / "manifest.json").read_text())["batches"]
    assert [(b["name"], b["gpu"], len(b["groups"])) for b in batches] == [
        ("dit-1", 0, 2), ("dit-2", 1, 1),
    ]  # fmt: skip
    ended = {b["name"]: b["wall_seconds"] for b in batches}
    assert ended["dit-1"] > ended["dit-2"]
