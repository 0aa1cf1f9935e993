"""`report`: the HTML page in a real browser (headless Chromium: the chart and the table render,
sorting and filtering work, names stay text), the Markdown summary, and the committed Markdown
pages under reports/html being what the command writes today."""

from __future__ import annotations

import html
import os
import shlex
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest
from helpers import DERIVED, LEGACY, ROOT, derived_path
from pngread import colour_counts, read_png

from ncu_classify.cards.files import load_card_file
from ncu_classify.cli.entry import run
from ncu_classify.present.page_view import CLASS_COLOURS

WORKLOAD = ROOT / "fixtures" / "workload_h200_480x832" / "cards.json"
BROWSER = shutil.which("chromium") or shutil.which("chromium-browser")
needs_browser = pytest.mark.skipif(
    BROWSER is None and not os.environ.get("NCU_CLASSIFY_REQUIRE_BROWSER"),
    reason="needs headless Chromium (apt install chromium)",
)
FLASH = (
    "void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, false, false,"
    " cutlass::bfloat16_t>>(Flash_fwd_params)"
)


class Dom(HTMLParser):
    """What the tests look at in a page: attributes by id, rows of the cards table, markers."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.by_id: dict[str, dict[str, str | None]] = {}
        self.body: dict[str, str | None] = {}
        self.rows: list[dict[str, str | None]] = []
        self.points = 0
        self.scripts = 0
        self._in_cards_body = False
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if "id" in found:
            self.by_id[str(found["id"])] = found
        if tag == "body":
            self.body = found
        if tag == "tbody" and self.getpos() and "cards" in self.by_id and not self.rows:
            self._in_cards_body = True
        if tag == "tr" and self._in_cards_body and "data-anchor" in found:
            self.rows.append(found)
        if tag == "path" and "point" in (found.get("class") or ""):
            self.points += 1
        if tag == "script":
            self.scripts += 1

    def handle_endtag(self, tag: str) -> None:
        if tag == "tbody":
            self._in_cards_body = False


def browse(page: Path, fragment: str = "", screenshot: Path | None = None) -> str:
    """The DOM after the page's scripts ran (or a screenshot), from headless Chromium."""
    assert BROWSER is not None, "NCU_CLASSIFY_REQUIRE_BROWSER is set but chromium is missing"
    argv = [BROWSER, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars"]
    argv += [f"--user-data-dir={page.parent / 'profile'}", "--virtual-time-budget=3000"]
    if screenshot:
        argv += ["--window-size=1000,3000", f"--screenshot={screenshot}"]
    else:
        argv += ["--dump-dom"]
    done = subprocess.run(
        [*argv, page.as_uri() + fragment], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def write_report(tmp_path: Path, *cards: Path, fmt: str = "html") -> Path:
    target = tmp_path / f"report.{fmt}"
    assert run(["report", *map(str, cards), "-o", str(target), "--format", fmt]) == 0
    return target


@needs_browser
def test_table_renders_and_sorts_in_a_browser(tmp_path: Path) -> None:
    page = write_report(tmp_path, WORKLOAD)
    cards = load_card_file(WORKLOAD).cards
    plain = Dom(browse(page))
    assert plain.body.get("data-ready") == "1"  # the script ran to its end
    assert [r["data-anchor"] for r in plain.rows] == [f"f0c{i}" for i in range(len(cards))]
    longest = max(range(len(cards)), key=lambda i: cards[i].summed_kernel_us or 0.0)
    shortest = min(range(len(cards)), key=lambda i: cards[i].summed_kernel_us or 0.0)
    down = Dom(browse(page, "#sort=kernel_us:desc"))
    assert down.by_id["cards"]["data-sort-key"] == "kernel_us"
    assert down.rows[0]["data-anchor"] == f"f0c{longest}"
    assert down.rows[-1]["data-anchor"] == f"f0c{shortest}"
    times = [cards[int(str(r["data-anchor"]).split("c")[1])].summed_kernel_us for r in down.rows]
    assert times == sorted(times, reverse=True)  # type: ignore[type-var]
    up = Dom(browse(page, "#sort=kernel_us:asc"))
    assert [r["data-anchor"] for r in up.rows] == [r["data-anchor"] for r in down.rows][::-1]
    vae = Dom(browse(page, "#filter=vae:conv3d"))
    assert vae.by_id["cards"]["data-visible"] == str(sum(c.stage == "vae" for c in cards))


@needs_browser
def test_chart_renders_with_its_markers_and_colours(tmp_path: Path) -> None:
    page = write_report(tmp_path, WORKLOAD)
    dom = Dom(browse(page))
    kernels = [k for c in load_card_file(WORKLOAD).cards for k in c.kernels]
    on_chart = [
        k
        for k in kernels
        if k.roofline
        and (k.roofline.intensity.get("dram") or 0) > 0
        and (k.roofline.achieved_tflops or 0) > 0
    ]
    assert dom.points == len(on_chart) == 73
    shot = tmp_path / "chart.png"
    browse(page, screenshot=shot)
    width, height, rows = read_png(shot)
    assert (width, height) == (1000, 3000)
    plot = _plot_box(rows)
    assert plot[2] - plot[0] > 600 and plot[3] - plot[1] > 450  # the 680 x 510 plot area
    counts = colour_counts(rows, plot)
    # markers are drawn at 0.8 opacity over the plot's #fcfcfc: their colours blended
    for name in ("compute_bound", "dram_bandwidth_bound", "partial_wave_tail"):
        assert _near(counts, CLASS_COLOURS[name]) > 20, name
    assert _near(counts, "#9467bd") < sum(counts.values()) / 10  # markers, not a filled area


def _plot_box(rows: list[bytes]) -> tuple[int, int, int, int]:
    """Bounding box of the plot background (#fcfcfc) in a screenshot."""
    background = bytes.fromhex("fcfcfc")
    xs, ys = [], []
    for y, row in enumerate(rows):
        hits = [x for x in range(0, len(row) // 3, 4) if row[3 * x : 3 * x + 3] == background]
        if hits:
            xs += [hits[0], hits[-1]]
            ys.append(y)
    assert ys, "no plot background in the screenshot"
    return min(xs), min(ys), max(xs), max(ys)


def _near(counts: dict[str, int], hue: str) -> int:
    """Pixels within a blend of `hue` at 0.8 opacity over the plot background."""
    target = [int(hue[i : i + 2], 16) for i in (1, 3, 5)]
    blended = [round(0.8 * c + 0.2 * 252) for c in target]
    return sum(
        n
        for colour, n in counts.items()
        if all(
            abs(int(colour[i : i + 2], 16) - b) <= 6
            for i, b in zip((1, 3, 5), blended, strict=True)
        )
    )


@needs_browser
def test_names_stay_text_in_a_browser(tmp_path: Path) -> None:
    import json

    doc = json.loads(WORKLOAD.read_text())
    doc["cards"][0]["group"] = "<script>document.body.dataset.owned='1'</script>"
    doc["cards"][0]["kernels"][0]["kernel"] = FLASH
    doc["cards"][0]["dominant_kernel"] = FLASH
    evil = tmp_path / "evil.json"
    evil.write_text(json.dumps(doc))
    page = write_report(tmp_path, evil)
    source = page.read_text()
    assert "<script>document" not in source
    assert "&lt;script&gt;document.body.dataset.owned=" in source
    assert html.escape(FLASH) in source or FLASH.replace("<", "&lt;").replace(">", "&gt;") in source
    dom = Dom(browse(page))
    assert dom.scripts == 1 and "data-owned" not in dom.body  # only our own script ran
    text = html.unescape(browse(page))
    assert FLASH in text  # the template arguments are intact


def test_html_is_offline_and_overlays_files(tmp_path: Path) -> None:
    page = write_report(tmp_path, WORKLOAD, LEGACY).read_text()
    for remote in ("http://", "https://", "//cdn", 'src="http', "@import"):
        assert remote not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert page.count('<table class="file"') == 2
    assert "\u25cf workload_h200_480x832/cards.json" in page
    assert "\u25a0 legacy_cards_480x832.json" in page
    assert "no capture manifest was read" in page  # the legacy file records no software


def test_markdown_summary_names_top_consumers(tmp_path: Path) -> None:
    text = write_report(tmp_path, WORKLOAD, fmt="md").read_text()
    cards = sorted(load_card_file(WORKLOAD).cards, key=lambda c: -(c.summed_kernel_us or 0))
    label = "\u25cf `workload_h200_480x832/cards.json`"
    top = [line for line in text.splitlines() if line.startswith(f"| {label} | `")]
    assert len(top) == 10
    assert top[0].startswith(f"| {label} | `{cards[0].group}` |")
    assert f"| {label} | vae | l2\\_bandwidth\\_bound | 2 | 2 | 2,234.9 | 40.6 % |" in text


def test_committed_reports_are_current(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, derived_cards: Path
) -> None:
    """reports/html/*.md are what `report` writes from the cards (regenerate.sh: the committed
    ones, and those it writes itself, DERIVED: the session's own here); the HTML pages of the
    same commands are written there too, not committed (.gitignore)."""
    monkeypatch.chdir(ROOT)
    made = (ROOT / "reports" / "html" / "make.txt").read_text().splitlines()
    assert made, "reports/html/make.txt lists the report commands"
    for line in made:
        args = [
            str(derived_path(ROOT / arg, derived_cards)) if ROOT / arg in DERIVED else arg
            for arg in shlex.split(line)
        ]
        output = args[args.index("-o") + 1]
        args[args.index("-o") + 1] = str(tmp_path / Path(output).name)
        assert run(args[1:]) == 0, line
        written = (tmp_path / Path(output).name).read_bytes()
        if output.endswith(".html"):
            assert written.startswith(b"<!DOCTYPE html>"), line
            continue
        assert written == (ROOT / output).read_bytes(), line
    ignored = (ROOT / ".gitignore").read_text().splitlines()
    assert "reports/html/*.html" in ignored


def test_control_and_bidi_characters_are_shown_not_obeyed(tmp_path: Path) -> None:
    import json

    doc = json.loads(WORKLOAD.read_text())
    doc["cards"][0]["group"] = "dit:linear:\u202eM4680_N5120_K144"
    doc["cards"][1]["group"] = "bell\x07esc\x1b[31mnul\x00"
    evil = tmp_path / "evil.json"
    evil.write_text(json.dumps(doc))
    page = write_report(tmp_path, evil).read_text()
    for raw in ("\u202e", "\x07", "\x1b", "\x00"):
        assert raw not in page
    assert "dit:linear:\\u202eM4680_N5120_K144" in page
    assert "bell\\x07esc\\x1b[31mnul\\x00" in page


def test_absurd_figures_are_left_off_the_chart(tmp_path: Path) -> None:
    import json

    doc = json.loads(WORKLOAD.read_text())
    top = doc["cards"][2]["kernels"][0]
    top["roofline"]["intensity"]["dram"] = 1e-300
    doc["cards"][3]["summed_kernel_us"] = 1e308
    odd = tmp_path / "odd.json"
    odd.write_text(json.dumps(doc))
    page = write_report(tmp_path, odd).read_text()
    assert "1 with figures outside 1e-4..1e6 FLOP/byte" in page
    assert "1e+308" in page and "100,000,000,000,000" not in page
    assert page.count('class="point"') == 72  # 73 kernels on the chart, one left out


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--format", "md", "-o", "x.html"], "--format md but -o x.html names a .html file"),
        (["-o", "x.html", str(WORKLOAD)], "given twice"),
    ],
)
def test_report_usage_errors(
    extra: list[str],
    message: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    assert run(["report", str(WORKLOAD), *extra]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "x.html").exists()


def test_at_most_eight_files_one_marker_each(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = []
    for i in range(9):
        files.append(tmp_path / f"run{i}.json")
        files[-1].write_text(WORKLOAD.read_text())
    assert run(["report", *map(str, files[:8]), "-o", str(tmp_path / "eight.html")]) == 0
    page = (tmp_path / "eight.html").read_text()
    assert len(set(page.split("<caption>")[1:9])) == 8  # eight distinct file captions
    assert run(["report", *map(str, files), "-o", str(tmp_path / "nine.html")]) == 2
    assert "9 cards files: a report overlays at most 8" in capsys.readouterr().err


def test_labels_tell_same_named_files_apart() -> None:
    from ncu_classify.present.page import labels_for

    paths = [Path("x/run/cards.json"), Path("y/run/cards.json"), Path("z/other.json")]
    assert labels_for(paths) == ["x/run/cards.json", "y/run/cards.json", "other.json"]
