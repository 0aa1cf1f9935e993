"""Issue 15 item 7, what people read: hot units named, never raw counters; the cards table of
the HTML report readable at 1400 px; roof labels that say their file and never overlap; class
names whole in 80-column tables; stages in natural order; a per-stage roll-up that is linear."""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from helpers import ROOT
from on_tty import on_terminal

from ncu_classify.cards.files import load_card_file
from ncu_classify.cards.hot_units import KNOWN, name_units, unit_label_kind
from ncu_classify.cards.rollup import by_stage
from ncu_classify.cli.entry import run
from ncu_classify.core.ordering import stage_order
from ncu_classify.present.page_chart import build_chart, label_box
from ncu_classify.present.page_view import CLASS_COLOURS, build_view
from ncu_classify.present.summary import summarize
from ncu_classify.read import breakdowns
from ncu_classify.read import kernels as report_reader

pytestmark = pytest.mark.hardening  # the hostile-input regressions, run as a set: -m hardening

WORKLOAD = ROOT / "fixtures" / "workload_h200_480x832" / "cards.json"
H200_REPORTS = sorted(
    p
    for p in (ROOT / "fixtures").rglob("*.ncu-rep*")
    if "public" not in p.parts or "h200" in p.name
)


# --- hot units ------------------------------------------------------------------------------


def test_every_breakdown_entry_of_the_committed_h200_reports_has_a_label(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every member of both breakdowns (all of them, not only the top 3 a card keeps) of every
    committed H200 report, `--metrics` captures and `--set full` ones, is a labelled counter."""
    monkeypatch.setattr(breakdowns, "HOT_UNITS", 10**6)
    seen: dict[str, set[str]] = {"sm": set(), "memory": set()}
    for path in H200_REPORTS:
        for kernel in report_reader.read_report(path).kernels:
            for units in name_units(kernel.hot_units).values():
                assert all(u.label != u.unit for u in units), path
            for breakdown, entries in kernel.hot_units.items():
                seen[breakdown].update(unit for unit, _ in entries)
    assert {"fixtures/user_set_full", "fixtures/set_full_h200"} <= {
        str(p.parent.relative_to(ROOT)) for p in H200_REPORTS
    }
    assert (len(seen["sm"]), len(seen["memory"])) == (25, 26)  # as the reports hold them
    unlabelled = sorted((seen["sm"] | seen["memory"]) - set(KNOWN))
    assert unlabelled == []


def test_the_raw_counters_of_the_issue_are_named() -> None:
    assert unit_label_kind("gpu__compute_memory_access_throughput_internal_activity") == (
        "caches and DRAM (internal activity)",
        "memory",
    )
    assert unit_label_kind("lts__d_sectors_fill_device") == ("L2 fills from DRAM", "memory")
    assert unit_label_kind("l1tex__lsuin_requests")[0] == "L1/shared requests from the LSU"


def test_an_unknown_counter_gets_a_label_read_from_its_name() -> None:
    assert unit_label_kind("lts__d_sectors_fill_peer") == ("L2: d sectors fill peer", "memory")
    assert unit_label_kind("sm__pipe_fp8_cycles_active") == ("SM: pipe fp8", "other")
    assert unit_label_kind("nvltx__bytes") == ("NVLink transmit: bytes", "other")
    assert unit_label_kind("xyz__a_b_cycles_active") == ("XYZ: a b", "other")
    assert unit_label_kind("oddname")[0] == "oddname (counter without a label)"


def test_cards_written_with_raw_counter_labels_are_shown_labelled(tmp_path: Path) -> None:
    """A cards file written before the labels (label = counter name, as the committed 480x832
    cards had for 22 entries) reads back with the labels."""
    doc = json.loads(WORKLOAD.read_text())
    kernel = doc["cards"][0]["kernels"][0]
    entry = next(
        u
        for u in kernel["hot_units"]["memory"]
        if u["unit"] == "gpu__compute_memory_access_throughput_internal_activity"
    )
    entry["label"] = entry["unit"]
    path = tmp_path / "cards.json"
    path.write_text(json.dumps(doc))
    card = load_card_file(path).cards[0]
    units = card.kernels[0].hot_units["memory"]
    labels = {u.unit: u.label for u in units}
    assert labels[entry["unit"]] == "caches and DRAM (internal activity)"
    assert all(u.label != u.unit for u in units)


# --- stage order and the roll-up's cost ------------------------------------------------------

NUMBERED = ["n0", "n1", "n2", "n3", "n10", "n11"]


def _lexical_cards(tmp_path: Path) -> Path:
    """The first six real 480x832 cards under the stages n0..n11, written in lexical order
    (n0, n1, n10, n11, n2, n3: what a sorted folder listing gave)."""
    doc = json.loads(WORKLOAD.read_text())
    doc["cards"] = doc["cards"][:6]
    for card, stage in zip(doc["cards"], sorted(NUMBERED), strict=True):
        card["stage"] = stage
    path = tmp_path / "lexical.json"
    path.write_text(json.dumps(doc))
    return path


def test_a_folder_of_numbered_reports_is_classified_in_natural_order(tmp_path: Path) -> None:
    folder = tmp_path / "runs"
    folder.mkdir()
    for stage in NUMBERED:
        # a user's own report (no group-id ranges): its stage is the report's name
        shutil.copy(
            ROOT / "fixtures" / "user_set_full" / "linear_cast.ncu-rep.xz",
            folder / f"{stage}.ncu-rep.xz",
        )
    target = tmp_path / "cards.json"
    assert run(["classify", str(folder), "-o", str(target)]) == 0
    stages = [c.stage for c in load_card_file(target).cards]
    assert list(dict.fromkeys(stages)) == NUMBERED


def test_summary_report_and_diff_show_numbered_stages_in_natural_order(tmp_path: Path) -> None:
    path = _lexical_cards(tmp_path)
    cards = load_card_file(path)
    assert [c.stage for c in cards.cards] == sorted(NUMBERED)  # the file's own order
    assert list(dict.fromkeys(r.stage for r in summarize(cards))) == NUMBERED
    md = tmp_path / "report.md"
    assert run(["report", str(path), "-o", str(md), "--format", "md"]) == 0
    section = md.read_text().split("### Time per stage and class")[1].split("###")[0]
    assert re.findall(r"\| (n\d+) \|", section) == NUMBERED
    diff = tmp_path / "diff.json"
    assert run(["diff", str(path), str(path), "--format", "json", "-o", str(diff)]) == 0
    doc = json.loads(diff.read_text())
    assert [r["stage"] for r in doc["rollup"]] == NUMBERED
    assert [s["stage"] for s in doc["shapes"]] == NUMBERED


def test_stage_order_keeps_a_pipeline_order_and_numbers_its_numbered_stages() -> None:
    assert stage_order(["dit", "vae", "attention", "output", "dit"]) == [
        "dit",
        "vae",
        "attention",
        "output",
    ]
    assert stage_order(["n10", "x", "n2", "block_10", "block_9"]) == [
        "n2",
        "n10",
        "x",
        "block_9",
        "block_10",
    ]


def test_the_stage_roll_up_is_one_pass_without_pandas(monkeypatch: pytest.MonkeyPatch) -> None:
    """`by_stage` is one pass over the cards and one sort of the cells, in plain Python: not a
    pandas filter and sort per stage (400 one-report stages took 4.2 s that way:
    bench/summary_speed.py), nor pandas at all (its import alone cost more than the roll-up)."""
    import pandas as pd

    def refused(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise AssertionError("by_stage used pandas")

    monkeypatch.setattr(pd, "DataFrame", refused)
    card = load_card_file(WORKLOAD).cards[0]
    cards = [card.model_copy(update={"stage": f"s{i}"}) for i in range(50)]
    rows = by_stage(cards)
    assert [r.stage for r in rows] == [f"s{i}" for i in range(50)]
    assert rows[0].kernel_us == round(card.summed_kernel_us or 0.0, 3)
    assert rows[0].share_of_stage == 1.0


# --- 80-column terminal tables ---------------------------------------------------------------

CLASS_NAMES = sorted({*CLASS_COLOURS, "incomplete", "failed", "no_kernels"})
LEGACY_DIFF = [
    "diff",
    str(ROOT / "fixtures" / "legacy" / "legacy_cards_480x832.json"),
    str(ROOT / "reports" / "diff" / "cards" / "w480_gpu0.json"),
    "--reclassify",
    str(ROOT / "rules" / "default.yaml"),
]


def _at_80_columns(*args: str) -> str:
    """What a command prints on an 80-column terminal (a pipe gets tables at the width they
    need: tests/present/test_fit.py)."""
    code, text = on_terminal(list(args), 80)
    assert code in (0, 1)  # diff exits 1 when verdicts moved
    return text


def _fragments(text: str) -> list[str]:
    """Words that are a piece of a class name but not the whole of one (a name cut by the
    table: `unresolved_no_domina` / `nt_limiter`)."""
    words = set(re.findall(r"[a-z0-9]+(?:_[a-z0-9]*)+|_[a-z0-9_]+", text))
    return sorted(
        w
        for w in words - set(CLASS_NAMES)
        if any(w != n and (n.startswith(w) or n.endswith(w)) for n in CLASS_NAMES)
    )


def _table_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line[:1] in "┏┃┡│└"]


@pytest.mark.parametrize("by", ["stage", "shape"])
def test_summary_keeps_class_names_whole_at_80_columns(by: str) -> None:
    text = _at_80_columns("summary", str(WORKLOAD), "--by", by)
    assert all(len(line) <= 80 for line in _table_lines(text))
    assert _fragments(text) == []
    rows = summarize(load_card_file(WORKLOAD), by=by)  # type: ignore[call-overload]
    for name in {r.primary for r in rows}:
        assert len(re.findall(rf"\b{name}\b", text)) == sum(r.primary == name for r in rows)


def test_diff_keeps_class_names_whole_at_100_columns(tmp_path: Path) -> None:
    """At 80 columns the per-shape table's figures (whole since issue 37), its longest class
    name and the ids folded no narrower than 8 do not fit together: the class names fold there
    (tests/present/test_fit.py), never cut; from 100 columns on they are whole."""
    code, text = on_terminal(LEGACY_DIFF, 100)
    assert code == 0
    assert all(len(line) <= 100 for line in _table_lines(text))
    assert _fragments(text) == []
    target = tmp_path / "diff.json"
    _at_80_columns(*LEGACY_DIFF, "--format", "json", "-o", str(target))
    rollup = json.loads(target.read_text())["rollup"]
    tables = "\n".join(_table_lines(text))
    # each roll-up row names its class whole; the per-shape rows add theirs
    for name in {r["primary"] for r in rollup}:
        assert len(re.findall(rf"\b{name}\b", tables)) >= sum(r["primary"] == name for r in rollup)
    assert "l2_bandwidth_bound ->" in text and "unresolved_no_dominant_limiter" in text


# --- the HTML report at 1400 px ---------------------------------------------------------------

BROWSER = shutil.which("chromium") or shutil.which("chromium-browser")
needs_browser = pytest.mark.skipif(
    BROWSER is None and not os.environ.get("NCU_CLASSIFY_REQUIRE_BROWSER"),
    reason="needs headless Chromium (apt install chromium)",
)
MEASURE = """<script>
(function () {
  var table = document.getElementById("cards"), box = table.parentElement, widths = {};
  Array.prototype.forEach.call(table.tHead.rows[0].cells, function (h) {
    widths[h.dataset.key] = Math.round(h.getBoundingClientRect().width);
  });
  document.body.dataset.measured = JSON.stringify({columns: widths, box: box.clientWidth,
    boxScroll: box.scrollWidth, page: document.documentElement.scrollWidth,
    view: window.innerWidth});
}());
</script>
</body>"""


def _measured(page: Path, width: int) -> dict:  # type: ignore[type-arg]
    """Rendered widths of the cards table's columns and boxes in headless Chromium."""
    assert BROWSER is not None
    probe = page.with_name("probe.html")
    probe.write_text(page.read_text().replace("</body>", MEASURE))
    argv = [BROWSER, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars"]
    argv += [f"--user-data-dir={page.parent / 'profile'}", f"--window-size={width},2300"]
    done = subprocess.run(
        [*argv, "--dump-dom", probe.as_uri()], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    found = re.search(r'data-measured="([^"]*)"', done.stdout)
    assert found, "the probe script did not run"
    return json.loads(html.unescape(found.group(1)))


@needs_browser
def test_cards_table_is_readable_at_1400_px(tmp_path: Path) -> None:
    """At 1400 px the dominant-kernel column keeps a readable width (it was cut to 2-3
    characters), no column is squeezed, and the table scrolls inside its box, not the page."""
    page = tmp_path / "report.html"
    assert run(["report", str(WORKLOAD), "-o", str(page)]) == 0
    sizes = _measured(page, 1400)
    columns = sizes["columns"]
    assert columns["kernel"] >= 250, columns
    assert min(columns.values()) >= 36, columns
    assert sizes["page"] <= sizes["view"]  # the page itself does not scroll sideways
    assert sizes["boxScroll"] >= sizes["box"]
    text = page.read_text()
    longest = max((c.dominant_kernel or "" for c in load_card_file(WORKLOAD).cards), key=len)
    assert f'title="{html.escape(longest)}"' in text  # the whole name, where it is cut


# --- roof labels ------------------------------------------------------------------------------

GPU_PAIR = [ROOT / "reports" / "diff" / "cards" / f"w480_gpu{i}.json" for i in (0, 1)]
LABELS = """<script>
(function () {
  var boxes = Array.prototype.map.call(document.querySelectorAll(".roofs text"), function (t) {
    var b = t.getBBox();
    return [t.lastChild.textContent, b.x, b.y, b.x + b.width, b.y + b.height];
  });
  document.body.dataset.labels = JSON.stringify(boxes);
}());
</script>
</body>"""


def _overlapping(boxes: list[list]) -> list[tuple[str, str]]:  # type: ignore[type-arg]
    return [
        (a[0], b[0])
        for i, a in enumerate(boxes)
        for b in boxes[i + 1 :]
        if a[1] < b[3] and b[1] < a[3] and a[2] < b[4] and b[2] < a[4]
    ]


def test_two_files_roofs_are_labelled_with_their_file_and_apart() -> None:
    view = build_view(
        [("gpu0", load_card_file(GPU_PAIR[0])), ("gpu1", load_card_file(GPU_PAIR[1]))], "t"
    )
    chart = build_chart(view.points, view.ceilings, [("\u25cf", "gpu0"), ("\u25a0", "gpu1")])
    assert chart is not None
    labels = [line.label for line in chart.lines]
    assert "\u25cf DRAM 4.81 TB/s" in labels and "\u25a0 DRAM 4.80 TB/s" in labels
    assert all(label[0] in "\u25cf\u25a0" for label in labels)
    assert {line.file for line in chart.lines} == {"\u25cf gpu0", "\u25a0 gpu1"}
    boxes = [[line.label, *label_box(line)] for line in chart.lines]
    assert _overlapping(boxes) == []
    single = build_chart(view.points, [c for c in view.ceilings if c.file == 0], None)
    assert single is not None and "DRAM 4.81 TB/s" in [line.label for line in single.lines]


def test_the_chart_draws_no_l2_slope_and_says_so() -> None:
    view = build_view([("w", load_card_file(WORKLOAD))], "t")
    assert {c.name for c in view.ceilings if c.kind == "bandwidth"} == {"dram"}
    readme = (ROOT / "docs" / "report.md").read_text()
    assert "the DRAM and L2 slopes" not in readme
    assert "No L2 slope" in readme


@needs_browser
def test_roof_labels_do_not_overlap_in_a_browser(tmp_path: Path) -> None:
    """The two-GPU report: the labels as Chromium lays them out (text boxes, not estimates)."""
    page = tmp_path / "report.html"
    assert run(["report", *map(str, GPU_PAIR), "-o", str(page)]) == 0
    probe = page.with_name("labels.html")
    probe.write_text(page.read_text().replace("</body>", LABELS))
    assert BROWSER is not None
    argv = [BROWSER, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars"]
    argv += [f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", probe.as_uri()]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    found = re.search(r'data-labels="([^"]*)"', done.stdout)
    assert found, done.stderr[-2000:]
    boxes = json.loads(html.unescape(found.group(1)))
    assert len(boxes) == 12  # 5 compute roofs and a DRAM slope per file
    assert _overlapping(boxes) == []
    texts = [b[0] for b in boxes]
    assert (
        sum(t.startswith("\u25cf ") for t in texts)
        == sum(t.startswith("\u25a0 ") for t in texts)
        == 6
    )
