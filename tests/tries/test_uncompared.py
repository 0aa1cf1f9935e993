"""An alternative whose output was not compared with the original's cannot win, and says why
wherever tries are shown (tries.json, `try`'s lines, `next --tries`, `report --tries`); a
padded output that cannot be compared by construction may win, and says so. On the H200's
VAE tries (fixtures/tries_h200/vae) with a sample written beside each output's sidecar."""

from __future__ import annotations

import csv
import html
import io
import json
import shutil
from pathlib import Path

import pytest
from helpers_tries import TriesInputs

from ncu_classify.cli.entry import run
from ncu_classify.tries.results import TryResults, tried_results

MISSING = "numerics not compared: the alternative's output was not written"


def _vae(inputs: dict[str, TriesInputs], tmp_path: Path) -> tuple[TriesInputs, Path]:
    """The VAE tries with their samples copied into `tmp_path` (to break them there)."""
    vae = inputs["vae"]
    folder = tmp_path / "outputs"
    shutil.copytree(vae.outputs, folder)
    return vae, folder


def _results(vae: TriesInputs, folder: Path) -> TryResults:
    return tried_results(vae.plan, vae.cards, vae.manifest, vae.shapes, folder)


def test_a_missing_sample_cannot_win(tries_inputs: dict[str, TriesInputs], tmp_path: Path) -> None:
    """Move 1 (the decode's largest conv, x12): bf16 + channels_last_3d saves 45,272.52 us but
    its sample is gone: bf16 (36,964.56 us) wins, and the stage's total drops by the
    difference: 115,105.325 - 45,272.52 + 36,964.56 = 106,797.365 us."""
    vae, folder = _vae(tries_inputs, tmp_path)
    before = _results(vae, folder)
    assert before.moves[0].winner == "bf16_channels_last_3d"
    (folder / "vae_m01.bf16_channels_last_3d.5f806a71.f32").unlink()
    after = _results(vae, folder)
    move = after.moves[0]
    lost = next(a for a in move.alternatives if a.label == "bf16_channels_last_3d")
    assert (move.winner, move.measured_saving_us) == ("bf16", 36964.56)
    assert lost.saving_us == 45272.52 and lost.not_eligible == MISSING
    assert after.stage_savings_us == {"vae": 106797.365}
    (folder / "vae_m01.bf16.eb0b2e13.f32").write_bytes(b"\0" * 7)  # cut short
    move = _results(vae, folder).moves[0]
    bf16 = next(a for a in move.alternatives if a.label == "bf16")
    assert (move.winner, move.measured_saving_us) == ("channels_last_3d", 10671.48)
    assert bf16.not_eligible == (
        "numerics not compared: vae_m01.bf16.eb0b2e13.f32: 7 bytes, not whole float32 values"
    )
    (folder / "vae_m01.as_recorded.30fd47e4.f32").unlink()  # the original's: nothing wins
    move = _results(vae, folder).moves[0]
    assert move.winner is None and move.measured_saving_us is None
    assert {a.not_eligible for a in move.alternatives} == {
        "numerics not compared: the original's output was not written"
    }


def test_the_reason_is_shown_wherever_tries_are(
    tries_inputs: dict[str, TriesInputs], tmp_path: Path, wan_file: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    from ncu_classify.cli.tries import print_results

    vae, folder = _vae(tries_inputs, tmp_path)
    (folder / "vae_m01.bf16_channels_last_3d.5f806a71.f32").unlink()
    results = _results(vae, folder)
    tries = tmp_path / "tries.json"
    tries.write_text(results.model_dump_json(indent=2))
    written = json.loads(tries.read_text())["moves"][0]["alternatives"][2]
    assert (written["label"], written["not_eligible"]) == ("bf16_channels_last_3d", MISSING)
    print_results(results)
    line = next(x for x in capsys.readouterr().out.splitlines() if "bf16_channels_last_3d" in x)
    assert "saves 45,272.5 us/inference" in line and f"; {MISSING};" in line
    shown = f"measured: bf16 saves 36,964.6 us [36,514.2, 37,415.0]; channels_last_3d 10,671.5;" \
        f" bf16_channels_last_3d 45,272.5 ({MISSING})"  # fmt: skip
    assert run(["next", str(wan_file), "--tries", str(tries), "--stage", "vae"]) == 0
    printed = capsys.readouterr().out
    assert shown in printed, [x for x in printed.splitlines() if "bf16 saves 36" in x]
    rows = tmp_path / "next.csv"
    assert run(["next", str(wan_file), "--tries", str(tries), "-o", str(rows)]) == 0
    first = next(csv.DictReader(io.StringIO(rows.read_text())))
    assert first["measured_alternatives"] == (
        f"channels_last_3d=10671.48; bf16=36964.56; bf16_channels_last_3d=45272.52 ({MISSING})"
    )
    data = tmp_path / "next.json"
    assert run(["next", str(wan_file), "--tries", str(tries), "-o", str(data)]) == 0
    alternatives = json.loads(data.read_text())["moves"][0]["measured"]["alternatives"]
    assert [a["numerics"] for a in alternatives] == [
        "rel err 0 (ok tf32)", "rel err 0 (ok bf16)", MISSING
    ]  # fmt: skip
    page = tmp_path / "page.html"
    assert run(["report", str(wan_file), "--tries", str(tries), "-o", str(page)]) == 0
    assert shown in html.unescape(page.read_text())


def test_a_padded_output_sampled_elsewhere_may_win(
    tries_inputs: dict[str, TriesInputs], tmp_path: Path
) -> None:
    """The winner's output made 8 columns wider than the original's (as a tile-padded GEMM's
    has more rows): its sample is drawn at other positions of a larger output, so it cannot
    be compared. As a tile-padding move it still wins (the same arithmetic on more rows) and
    says so; as what it is (a dtype move) it cannot."""
    from ncu_classify.present.next_measured import measured_move, measured_text

    vae, folder = _vae(tries_inputs, tmp_path)
    side = folder / "vae_m01.bf16_channels_last_3d.5f806a71.json"
    facts = json.loads(side.read_text())
    facts["shape"][-1] += 8
    side.write_text(json.dumps(facts))
    move = _results(vae, folder).moves[0]
    assert move.winner == "bf16" and (move.alternatives[2].not_eligible or "").startswith(
        "numerics not compared: padded shape ([1, 96, 4, 480, 832] vs [1, 96, 4, 480, 840])"
    )
    padding = vae.plan.model_copy(deep=True)
    padding.moves[0].tries[3].kind = "tile_padding"
    vae = TriesInputs(padding, vae.cards, vae.manifest, vae.shapes, folder)
    move = _results(vae, folder).moves[0]
    won = next(a for a in move.alternatives if a.label == move.winner)
    assert move.winner == "bf16_channels_last_3d" and won.not_eligible is None
    assert won.numerics is not None and won.numerics.padded and not won.numerics.compared
    assert measured_text(measured_move(move, "tries.json")).startswith(
        "measured: bf16_channels_last_3d saves 45,272.5 us [44,808.8, 45,736.2]"
        " (numerics: not compared (padded shape));"
    )
    facts["shape"][-1] -= 16  # smaller: no padding, another output
    side.write_text(json.dumps(facts))
    move = _results(vae, folder).moves[0]
    assert move.winner == "bf16"
    assert move.alternatives[2].not_eligible == (
        "numerics not compared: output shapes differ ([1, 96, 4, 480, 832] vs [1, 96, 4, 480, 824])"
    )
