"""Time by each kernel's own class, where people and programs read it: the report (HTML and
Markdown) beside the view by card class, and the kernel-level DataFrame, whose groupby gives
the same figures as `summary --by kernel`."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from helpers import RECORD, ROOT, derived_path

import ncu_classify
from ncu_classify.cards.files import load_card_file
from ncu_classify.cards.rollup import by_kernel_class
from ncu_classify.cli.entry import run

WORKLOAD = ROOT / "fixtures" / "workload_h200_480x832" / "cards.json"
RECORDED = RECORD / "cards_wan_480x832.json"


def test_the_report_shows_time_by_kernel_class(tmp_path: Path) -> None:
    html, md = tmp_path / "r.html", tmp_path / "r.md"
    assert run(["report", str(WORKLOAD), "-o", str(html)]) == 0
    assert run(["report", str(WORKLOAD), "-o", str(md)]) == 0
    page = html.read_text()
    table = page.split('<table class="kernel-classes"', 1)[1].split("</table>", 1)[0]
    rows = re.findall(r"<tr><td>([^<]+)</td><td><span[^>]*></span>([^<]+)</td>"
                      r'<td class="num">(\d+)</td><td class="num">([\d,.]+)', table)  # fmt: skip
    assert ("vae", "dram_bandwidth_bound", "8", "643.6") in rows
    assert len(rows) == 12
    text = md.read_text()
    assert "### Time per stage and kernel class" in text
    assert "| vae | dram\\_bandwidth\\_bound | 8 | 643.6 | 11.7 % |" in text


@pytest.mark.parametrize("path", [WORKLOAD, RECORDED])
def test_the_kernel_dataframe_groups_to_the_same_figures(derived_cards: Path, path: Path) -> None:
    path = derived_path(path, derived_cards)
    kernels = ncu_classify.load_cards(path, level="kernel")
    kernels["us_per_inference"] = kernels["dur_us"] * kernels["calls"]
    grouped = kernels.groupby(["stage", "classification"])["us_per_inference"].sum()
    rows = by_kernel_class(load_card_file(path).cards)
    assert len(grouped) == len(rows)
    for row in rows:
        assert grouped[row.stage, row.kernel_class] == pytest.approx(row.kernel_us, abs=1e-3)
