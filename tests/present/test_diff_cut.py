"""A terminal diff of two whole-model cards files lists the shapes that changed, the largest
changes first chosen, in file order, and says what it left out (the committed fp32 DiT with
TF32 off against on, 11 shapes that all changed, beside the 34 quiet shapes of the 480x832
workload captured on two GPUs, with the cut lowered to 5); small diffs list every shape."""

from __future__ import annotations

import io
import math

import pytest
from helpers import ROOT
from rich.console import Console

from ncu_classify.cards.files import load_card_file
from ncu_classify.compare.diff import DiffOptions, diff_cards
from ncu_classify.core.noise import load_noise
from ncu_classify.present import diff_cut
from ncu_classify.present.diff_text import _candidate_group, diff_renderable

CARDS = ROOT / "reports" / "diff" / "cards"


def _diff(baseline: str, candidate: str):  # type: ignore[no-untyped-def]
    sides = [load_card_file(CARDS / f"{name}.json") for name in (baseline, candidate)]
    return diff_cards(*sides, (baseline, candidate), DiffOptions(noise=load_noise()[0]))


@pytest.fixture(scope="module")
def tf32():  # type: ignore[no-untyped-def]
    changed, quiet = _diff("dit_fp32_notf32", "dit_fp32_tf32"), _diff("w480_gpu0", "w480_gpu1")
    return changed.model_copy(
        update={"shapes": [*quiet.shapes[:20], *changed.shapes, *quiet.shapes[20:]]}
    )


def _text(diff) -> str:  # type: ignore[no-untyped-def]
    buffer = io.StringIO()
    Console(file=buffer, width=200, color_system=None).print(diff_renderable(diff))
    return buffer.getvalue()


def test_a_small_diff_lists_every_shape(tf32) -> None:  # type: ignore[no-untyped-def]
    assert len(tf32.shapes) <= diff_cut.SHOWN_ROWS
    shown, note = diff_cut.shown_shapes(tf32)
    assert shown == list(tf32.shapes) and note is None
    assert "not listed here" not in _text(tf32)


def test_past_the_cut_the_largest_changes_are_listed_in_file_order(
    tf32, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    moved = [s for s in tf32.shapes if diff_cut.changed(s)]
    quiet = [s for s in tf32.shapes if not diff_cut.changed(s)]
    assert (len(tf32.shapes), len(moved), len(quiet)) == (45, 11, 34)
    monkeypatch.setattr(diff_cut, "SHOWN_ROWS", 5)
    shown, note = diff_cut.shown_shapes(tf32)
    order = {id(s): i for i, s in enumerate(tf32.shapes)}
    assert [order[id(s)] for s in shown] == sorted(order[id(s)] for s in shown)
    sizes = sorted((abs(math.log(s.duration_ratio)) for s in moved), reverse=True)
    assert sorted((abs(math.log(s.duration_ratio)) for s in shown), reverse=True) == sizes[:5]
    assert note == (
        "40 of 45 shapes are not listed here (the same or within noise, and 6 smaller changes"
        " past the 5 largest); --format md, csv or json lists every shape"
    )
    text = _text(tf32)
    assert note.split(";")[0] in " ".join(text.split())
    flat = text.replace("\n", "")
    assert all(_candidate_group(s)[:40] in flat for s in shown)
    assert not any(_candidate_group(s)[:40] in flat for s in quiet)
