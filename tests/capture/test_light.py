"""`capture --coverage P --light-after L` (issue 41's light tier): which shapes of the Wan 14B
recording go light, the light batches' command lines, the refusals, the manifest's fields, a
capture by the stand-in ncu and its --resume, and the cards of light reports.

The stand-in ncu serves committed full reports: a light batch gets a full report there (its
command line asks for the light list, checked). The cards of light kernels are made from a real
H200 capture read with every metric outside LIGHT_METRICS dropped at read time."""

from __future__ import annotations

import collections
import json
import lzma
from pathlib import Path
from typing import Any

import pytest
from helpers import ROOT
from helpers_light import light_cards

from ncu_classify.capture.light import light_set
from ncu_classify.capture.manifest import read_manifest, write_manifest
from ncu_classify.capture.order import program_us, wanted_groups
from ncu_classify.capture.plan import CaptureOptions, plan_capture
from ncu_classify.cards.model import CardFile
from ncu_classify.cards.rollup import dominant
from ncu_classify.cards.selection import drill_selection
from ncu_classify.cli.entry import run
from ncu_classify.core.errors import UsageError
from ncu_classify.core.metrics import LIGHT_METRICS, capture_metric_names
from ncu_classify.present.next_moves import next_moves
from ncu_classify.present.summary import light_lines
from ncu_classify.shapes.file import read_shapes
from ncu_classify.verdicts.rules import LoadedRules

WAN = ROOT / "reports" / "record" / "wan_14b_480x832_h200_shapes.yaml.xz"
BLOCK = ROOT / "fixtures" / "compiled_h200"
RANDN, CAST = "main:aten.randn.default", "main:aten._to_copy.default:1x128x8x240x360:bf16"


@pytest.fixture(scope="module")
def wan_shapes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The Wan 14B recording, decompressed."""
    path = tmp_path_factory.mktemp("wan") / "shapes.yaml"
    path.write_bytes(lzma.decompress(WAN.read_bytes()))
    return path


@pytest.fixture
def light_stand_in(stand_in: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """The stand-in ncu, importing this checkout's ncu_classify (it checks the light list)."""
    monkeypatch.setenv("PYTHONPATH", str(ROOT))


def test_the_light_list_is_cheap_names_only() -> None:
    """Every light name is in the full list (the probe's proxies: dram__bytes.sum, ...), with
    every launch statistic (no pass) and neither sm__throughput nor lts__throughput."""
    full = capture_metric_names()
    assert set(LIGHT_METRICS) <= set(full) and len(set(LIGHT_METRICS)) == len(LIGHT_METRICS)
    assert {n for n in full if n.startswith("launch__")} <= set(LIGHT_METRICS)
    assert len(LIGHT_METRICS) == 23  # 15 counters, 8 launch statistics
    assert not any(n.startswith(("sm__throughput", "lts__throughput")) for n in LIGHT_METRICS)


def test_which_wan_shapes_go_light(wan_shapes: Path, tmp_path: Path) -> None:
    """--coverage 99.5 --light-after 95 on the Wan 14B recording: of the 167 shapes captured,
    72 go light (dit 7, 4.02 % of its time; vae 63, 4.42 %; output 2, 2.56 %), 104 of the
    289 recorded kernels; the full batches come first, then one light batch per stage."""
    shapes, _ = read_shapes(wan_shapes)
    light = light_set(shapes, 99.5, 95)
    assert light == wanted_groups(shapes, 99.5) - wanted_groups(shapes, 95)
    per: dict[str, list[float]] = {}
    for entry in shapes.entries():
        if entry.group in light:
            seen = per.setdefault(entry.stage, [0, 0.0, 0])
            seen[0] += 1
            seen[1] += program_us(entry) or 0
            seen[2] += entry.shape.real_kernels or 0
    assert {s: (n, round(t, 1)) for s, (n, t, _) in per.items()} == {
        "dit": (7, 10458.6), "vae": (63, 13864.2), "output": (2, 4.9)
    }  # fmt: skip
    kernels = sum(e.shape.real_kernels or 0 for e in shapes.entries() if e.group in light)
    taken = wanted_groups(shapes, 99.5)
    assert (len(taken), len(light), kernels) == (167, 72, 104)
    assert sum(e.shape.real_kernels or 0 for e in shapes.entries() if e.group in taken) == 289
    assert (len(light_set(shapes, 99.5, 99)), len(light_set(shapes, 99.5, 90))) == (18, 101)
    plan = plan_capture(
        wan_shapes, tmp_path / "raw", CaptureOptions(coverage_pct=99.5, light_after_pct=95)
    )
    assert [(b.name, b.kind, len(b.entries)) for b in plan.batches] == [
        ("vae-1", "counters", 4), ("dit", "counters", 22), ("output", "counters", 9),
        ("vae-2", "counters", 36), ("vae-3", "counters", 24),
        ("dit.light", "light", 7), ("vae.light", "light", 63), ("output.light", "light", 2),
    ]  # fmt: skip
    assert {e.group for b in plan.batches if b.kind == "light" for e in b.entries} == light


def _metrics(argv: list[str]) -> list[str]:
    return argv[argv.index("--metrics") + 1].split(",")


def test_a_light_batch_asks_for_the_light_list(
    wan_shapes: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A light batch's ncu argv names LIGHT_METRICS (a full one, the 56 names); --dry-run
    prints the light batches and their command lines."""
    options = CaptureOptions(coverage_pct=99.5, light_after_pct=95, ncu="ncu")
    plan = plan_capture(wan_shapes, tmp_path / "raw", options)
    assert _metrics(plan.argv["vae.light"]) == list(LIGHT_METRICS)
    assert _metrics(plan.argv["dit"]) == capture_metric_names()
    argv = ["capture", "--shapes", str(wan_shapes), "-o", str(tmp_path / "dry"), "--dry-run"]
    assert run([*argv, "--coverage", "99.5", "--light-after", "95"]) == 0
    out = capsys.readouterr().out
    assert "# batch vae.light: 63 shapes, with the light metric list" in out
    assert ",".join(LIGHT_METRICS) in out
    assert "# 167 shapes to capture, 0 already captured (72 with the light list:" in out


@pytest.mark.parametrize(
    ("extra", "line"),
    [
        (["--light-after", "95"], "--light-after 95 needs --coverage"),
        (["--coverage", "90", "--light-after", "95"], "less than the coverage target (90)"),
        (["--coverage", "95", "--light-after", "95"], "less than the coverage target (95)"),
        (["--coverage", "99", "--light-after", "100"], "more than 0 and less than 100"),
    ],
)
def test_a_light_after_out_of_place_is_refused(
    wan_shapes: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    extra: list[str],
    line: str,
) -> None:
    """Without --coverage, at or above its target, or not a share below 100: exit 2, one line."""
    argv = [
        "capture",
        "--shapes",
        str(wan_shapes),
        "-o",
        str(tmp_path / "raw"),
        "--dry-run",
        *extra,
    ]
    assert run(argv) == 2
    err = capsys.readouterr().err
    assert line in err and "Traceback" not in err
    with pytest.raises(UsageError, match="needs --coverage"):
        light_set(read_shapes(wan_shapes)[0], None, 95)


def test_the_manifest_round_trips_and_old_ones_read_unchanged(tmp_path: Path) -> None:
    """`light` and `light_after_pct` are written only where they apply: the committed capture's
    manifest reads with neither and is written back without them."""
    old = read_manifest(BLOCK / "cap" / "manifest.json")
    assert old.light_after_pct is None and not any(s.light for s in old.shapes)
    write_manifest(tmp_path, old)
    text = (tmp_path / "manifest.json").read_text()
    assert '"light' not in text
    lit = old.model_copy(deep=True)
    lit.shapes[1].light, lit.coverage_target_pct, lit.light_after_pct = True, 100.0, 60.0
    write_manifest(tmp_path, lit)
    again = read_manifest(tmp_path / "manifest.json")
    assert again == lit and [s.light for s in again.shapes] == [False, True, False]
    assert (tmp_path / "manifest.json").read_text().count('"light": true') == 1


def _manifest(raw: Path) -> dict[str, Any]:
    return json.loads((raw / "manifest.json").read_text())  # type: ignore[no-any-return]


def test_a_light_capture_and_its_resume(
    light_stand_in: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The compiled block's recording at --coverage 100 --light-after 60: main's cast (68.2 %
    of main's time) is captured in full, its draw (203.6 us) light in `main.light`, which asks
    for the light list (the stand-in serves it the committed full report); its card says so,
    and summary's coverage line counts it. --resume, with the same value or none (the
    capture's own is kept), keeps it; --resume --light-after 0 captures it again with the
    full list."""
    raw, shapes = tmp_path / "raw", str(BLOCK / "shapes.yaml")
    base = ["capture", "--shapes", shapes, "-o", str(raw)]
    assert run([*base, "--coverage", "100", "--light-after", "60"]) == 0
    manifest = _manifest(raw)
    assert manifest["light_after_pct"] == 60.0
    assert [(b["name"], b["kind"], b["groups"]) for b in manifest["batches"]] == [
        ("block", "counters", ["block:compiled:block:g0:compiled"]),
        ("main", "counters", [CAST]),
        ("main.light", "light", [RANDN]),
    ]
    assert _metrics(manifest["batches"][2]["argv"]) == list(LIGHT_METRICS)
    assert {s["group"]: s.get("light", False) for s in manifest["shapes"]} == {
        "block:compiled:block:g0:compiled": False, RANDN: True, CAST: False,
    }  # fmt: skip
    assert run(["classify", str(raw), "-o", str(tmp_path / "cards.json")]) == 0
    cards = {c["group"]: c for c in json.loads((tmp_path / "cards.json").read_text())["cards"]}
    assert cards[RANDN]["captured_light"] is True and "captured_light" not in cards[CAST]
    assert any(
        "captured with the light metric list: sm_pct, l2_pct" in n for n in cards[RANDN]["notes"]
    )
    capsys.readouterr()
    assert run(["summary", str(tmp_path / "cards.json")]) == 0
    assert "(1 shape, 0.204 ms, with the light list); replayed" in capsys.readouterr().out
    assert run([*base, "--resume", "--light-after", "60"]) == 0
    assert len(_manifest(raw)["batches"]) == 3  # kept: nothing to capture
    assert run([*base, "--resume"]) == 0  # the capture's own --light-after 60
    assert len(_manifest(raw)["batches"]) == 3 and _manifest(raw)["light_after_pct"] == 60.0
    assert run([*base, "--resume", "--light-after", "0"]) == 0
    manifest = _manifest(raw)
    assert "light_after_pct" not in manifest
    assert [(b["name"], b["kind"], b["groups"]) for b in manifest["batches"][3:]] == [
        ("main.r2", "counters", [RANDN])
    ]
    assert not any(s.get("light") for s in manifest["shapes"])
    assert run(["classify", str(raw), "-o", str(tmp_path / "full.json")]) == 0
    redone = {c["group"]: c for c in json.loads((tmp_path / "full.json").read_text())["cards"]}
    assert "captured_light" not in redone[RANDN] and redone[RANDN]["ncu_output"].endswith(
        "main.r2.ncu-rep"
    )


@pytest.mark.filterwarnings("ignore")
def test_light_cards_from_real_counters(rules: LoadedRules, wan: CardFile, tmp_path: Path) -> None:
    """The Wan 14B H200 capture (fixtures/record_h200_wan14b, 253 cards) read with only the
    light list's counters, every shape marked light: the 64 DRAM-bound verdicts stay, and so
    do the 49 compute-bound ones, without sm_pct: the tensor pipe decides 19 and instruction
    issue 30 (sm_pct >= issue_pct, a sub-unit of sm__throughput; before that bound 3 of them
    read DRAM-bound and 27 unresolved); the 52 partial-wave tails stay (the list has the
    elapsed cycles); 6 L2-bound kernels that were tails too read as tails, the other 53
    L2-bound and 2 latency ones become unresolved with sm_pct / l2_pct unchecked. Nothing
    invented."""
    from ncu_classify.verdicts.classify import LIGHT_NOTE

    light = light_cards(ROOT / "fixtures" / "record_h200_wan14b", rules, tmp_path)
    full = wan
    assert [c.group for c in light.cards] == [c.group for c in full.cards]
    flips = collections.Counter(
        (f.primary, c.primary) for f, c in zip(full.cards, light.cards, strict=True)
    )
    unresolved = "unresolved_no_dominant_limiter"
    assert dict(flips) == {
        ("dram_bandwidth_bound", "dram_bandwidth_bound"): 64,
        ("compute_bound", "compute_bound"): 49,
        ("l2_bandwidth_bound", unresolved): 53,
        ("l2_bandwidth_bound", "partial_wave_tail"): 6,
        ("partial_wave_tail", "partial_wave_tail"): 52,
        ("latency_or_occupancy_limited", unresolved): 2,
        (unresolved, unresolved): 27,
    }
    assert all(c.captured_light and LIGHT_NOTE in c.notes for c in light.cards)
    for card in light.cards:
        if card.primary == unresolved:
            assert card.status == "unresolved"  # its dominant kernel's rules undecided
            assert {"sm_pct"} <= set(dominant(card.kernels).unchecked_metrics) <= {
                "sm_pct", "l2_pct", "sm_active_over_elapsed"
            }  # fmt: skip
        assert "sm_pct" in card.missing_metrics and "l2_pct" in card.missing_metrics
    assert collections.Counter(c.status for c in light.cards) == {
        "unresolved": 82, "classified": 171
    }  # fmt: skip
    # a verdict reached past a rule the light list could not decide names that rule: the 64
    # DRAM-bound verdicts and the 58 tails, each past compute_bound (sm_pct, the first rule
    # left undecided); the 49 compute-bound ones, decided by a bound, passed over nothing.
    # A drill-down takes them all again (6 as borderline by their own distances) and 7 of the 49
    # (borderline: the bound that decided them is within 2 points of 60)
    passed = collections.Counter(
        (c.primary, top.margin.alternative, top.margin.alternative_metric)
        for c in light.cards
        if (top := dominant(c.kernels)) and top.margin and top.margin.rival_unchecked
    )
    assert dict(passed) == {
        ("dram_bandwidth_bound", "compute_bound", "sm_pct"): 64,
        ("partial_wave_tail", "compute_bound", "sm_pct"): 58,
    }
    [line] = light_lines(light)  # the summary says what the light list left unchecked
    assert line.startswith(
        "captured light: 253 cards without sm_pct and l2_pct; 82 unresolved (190,388.3 us per"
        " inference), 122 classed past a rule they could not check (65,997.2 us per inference)"
    )
    assert light_lines(full) == []
    # next says it per move, and ranks the unknowns by time
    moves = next_moves(light, "light.json").moves
    said = collections.Counter(m.light_unchecked for m in moves)
    assert said["compute_bound not checked: sm_pct not measured"] == 122
    assert all(m.light_unchecked for m in moves)
    unknown = [m.measured_us for m in moves if m.recoverable_at_sol_us is None]
    assert unknown == sorted(unknown, reverse=True) and len(unknown) > 100
    assert all(m.light_unchecked is None for m in next_moves(full, "full.json").moves)
    drilled = drill_selection(light)
    assert collections.Counter(drilled.values()) == {
        "unresolved": 82, "unchecked": 116, "borderline": 13
    }  # fmt: skip


@pytest.mark.filterwarnings("ignore")
def test_reports_of_light_cards_say_what_was_not_checked(
    rules: LoadedRules, tmp_path: Path
) -> None:
    """The HTML and Markdown reports of light cards (a margin whose rival has no distance)
    render, and say per card and per file what the light list left unchecked."""
    from helpers_light import light_cards_file

    cards = light_cards_file(ROOT / "fixtures" / "record_h200_wan14b", rules, tmp_path)
    assert run(["report", str(cards), "-o", str(tmp_path / "r.html")]) == 0
    page = (tmp_path / "r.html").read_text()
    assert page.count("captured light: sm_pct, l2_pct not measured") == 253
    assert page.count("nearest: compute_bound (not checked: sm_pct not measured)") == 184
    assert run(["report", str(cards), "-o", str(tmp_path / "r.md")]) == 0
    markdown = (tmp_path / "r.md").read_text()
    assert "### Captured light: `light.json`" in markdown
    assert "122 classed past a rule they could not check" in markdown


def test_a_stopped_full_recapture_keeps_the_light_capture(
    light_stand_in: None,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """--resume --light-after 0 captures a light shape again in full; until that capture ends
    the shape keeps its light record: an ncu that replays nothing (here ERR_NVGPUCTRPERM, as a
    SIGTERM or SIGKILL before the shape is reached) leaves it `ok`, light, with its report,
    not `pending` (its light card was lost: classify made it a shape not captured). A later
    --resume --light-after 0 then captures it in full."""
    raw, shapes = tmp_path / "raw", str(BLOCK / "shapes.yaml")
    base = ["capture", "--shapes", shapes, "-o", str(raw)]
    assert run([*base, "--coverage", "100", "--light-after", "60"]) == 0
    light = {s["group"]: s for s in _manifest(raw)["shapes"]}[RANDN]
    assert light["light"] and light["status"] == "ok" and light["report"] == "main.light.ncu-rep"
    monkeypatch.setenv("FAKE_NCU_MODE", "perm")
    assert run([*base, "--resume", "--light-after", "0"]) == 6
    manifest = _manifest(raw)
    assert manifest["batches"][-1]["ended_by"] == "refused"
    assert {s["group"]: s for s in manifest["shapes"]}[RANDN] == light
    assert run(["classify", str(raw), "-o", str(tmp_path / "cards.json")]) == 0
    cards = {c["group"]: c for c in json.loads((tmp_path / "cards.json").read_text())["cards"]}
    assert cards[RANDN]["captured_light"] is True and cards[RANDN]["kernels"]
    monkeypatch.delenv("FAKE_NCU_MODE")
    capsys.readouterr()
    assert run([*base, "--resume", "--light-after", "0"]) == 0
    full = {s["group"]: s for s in _manifest(raw)["shapes"]}[RANDN]
    assert full["status"] == "ok" and "light" not in full and full["report"] == "main.r3.ncu-rep"


def test_a_kept_light_after_at_a_lower_target_names_itself(
    light_stand_in: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--resume --coverage below the capture's own --light-after: one line saying the value was
    the capture's (the user gave none), exit 2."""
    raw, shapes = tmp_path / "raw", str(BLOCK / "shapes.yaml")
    base = ["capture", "--shapes", shapes, "-o", str(raw)]
    assert run([*base, "--coverage", "100", "--light-after", "60"]) == 0
    capsys.readouterr()
    assert run([*base, "--resume", "--coverage", "50", "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert "the capture's own --light-after 60 (kept by --resume)" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_light_after_on_an_untimed_file_names_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--coverage with --light-after on a shapes file without recorded times: the same one line,
    naming the file, as --coverage alone."""
    shapes = ROOT / "fixtures" / "shapes" / "workload_480x832.yaml"
    argv = ["capture", "--shapes", str(shapes), "-o", str(tmp_path / "raw"), "--dry-run"]
    assert run([*argv, "--coverage", "90", "--light-after", "50"]) == 2
    err = capsys.readouterr().err
    assert f"{shapes}: --coverage needs the recorded program's kernel time" in err


def test_a_failed_full_recapture_keeps_the_light_capture(
    light_stand_in: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A light shape whose capture in full crashes keeps its light record and card, its error
    says what failed, and the capture exits 5 (a shape failed) until a later --resume
    --light-after 0 captures it in full, which clears the error."""
    raw, shapes = tmp_path / "raw", str(BLOCK / "shapes.yaml")
    base = ["capture", "--shapes", shapes, "-o", str(raw)]
    assert run([*base, "--coverage", "100", "--light-after", "60"]) == 0
    light = {s["group"]: s for s in _manifest(raw)["shapes"]}[RANDN]
    monkeypatch.setenv("FAKE_NCU_MODE", "crash_after_0")
    assert run([*base, "--resume", "--light-after", "0"]) == 5
    kept = {s["group"]: s for s in _manifest(raw)["shapes"]}[RANDN]
    assert kept["error"].startswith(
        "its capture in full failed (crashed or was killed during its replay (ncu exit code"
    )
    assert {**kept, "error": None} == light
    assert run(["classify", str(raw), "-o", str(tmp_path / "cards.json")]) == 0
    cards = {c["group"]: c for c in json.loads((tmp_path / "cards.json").read_text())["cards"]}
    assert cards[RANDN]["captured_light"] is True and cards[RANDN]["kernels"]
    monkeypatch.delenv("FAKE_NCU_MODE")
    assert run([*base, "--resume", "--light-after", "0"]) == 0
    full = {s["group"]: s for s in _manifest(raw)["shapes"]}[RANDN]
    assert full["status"] == "ok" and "light" not in full and full["error"] is None
