"""A hostile review of the measured moves (issue 39): each op counted once across stages and
tries files, the committed H200 results' totals as `try` counts them today, the pad folds'
ties, and a chain's outputs read through a view, each from the real fixtures where they can."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import ROOT

from ncu_classify.shapes.file import load_shapes
from ncu_classify.tries.overlap import counted_once
from ncu_classify.tries.results import TryResults

TRIES = ROOT / "fixtures" / "tries_h200"


def _host(name: str) -> TryResults:
    """A committed tries.json as the H200 wrote it."""
    return TryResults.model_validate_json((TRIES / name / "tries.json").read_text())


def test_a_cast_of_another_stage_is_not_inside_this_stage_s_chains(tmp_path: Path) -> None:
    """LTX's DiT cast bf16 -> fp32 1x660x2048 (x168) runs 167 calls inside the DiT's winning
    chains. The same cast tried in another stage (a VAE of the same dims) is another op: its
    saving counts whole (it was taken out as if the DiT's chains held it: 645.12 us -> 3.84)."""
    text = (TRIES / "ltx_dit" / "shapes.yaml").read_text()
    cast = next(line for line in text.splitlines() if '"name": "m01.as_recorded"' in line)
    (tmp_path / "shapes.yaml").write_text(text + '  "vae":\n' + cast + "\n")
    shapes = load_shapes(tmp_path / "shapes.yaml")
    host = _host("ltx_dit")
    vae = host.moves[0].model_copy(
        update={"stage": "vae", "group": "vae:cast:1x660x2048:bf16-fp32", "original": host.moves[0]
                .original.model_copy(update={"group": "vae:m01.as_recorded"})},
    )  # fmt: skip
    savings, overlap = counted_once([*host.moves, vae], shapes)
    assert savings == {"dit": 6032.273, "vae": 645.12}
    assert overlap == {"dit": 1587.873}


@pytest.mark.parametrize("name", sorted(p.name for p in TRIES.iterdir() if p.is_dir()))
def test_each_committed_tries_total_counts_each_op_once(name: str) -> None:
    """Every committed tries.json's stage totals are what `try` counts today from its own
    moves and shapes: LTX's DiT (written by the H200 before the overlap was counted) said
    7,620.1 us with no overlap, so `next --tries` said the double count."""
    host = _host(name)
    savings, overlap = counted_once(host.moves, load_shapes(TRIES / name / "shapes.yaml"))
    assert (host.stage_savings_us, host.overlap_us) == (savings, overlap)
    if name == "ltx_dit":
        assert (savings, overlap) == ({"dit": 6032.273}, {"dit": 1587.873})
