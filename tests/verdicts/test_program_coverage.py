"""Coverage of a recorded program by its cards, on the real H200 capture of the Wan 2.1 14B DiT
step + VAE decode at 480x832 (every device op recorded): the figures recomputed from the
manifest's own numbers, and what a failed shape, a shape missing from the capture, a sharded
capture and a recording made without a GPU do to them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import ROOT, copied_capture

from ncu_classify.cards.fidelity import fidelity, slow_or_fast
from ncu_classify.cards.model import CardFile
from ncu_classify.verdicts.classify import classify
from ncu_classify.verdicts.rules import LoadedRules

WAN14B = ROOT / "fixtures" / "record_h200_wan14b"


@pytest.fixture(scope="module")
def wan(rules: LoadedRules) -> CardFile:
    return classify([WAN14B], rules, jobs=1)


def _copy(tmp_path: Path, edit) -> Path:  # type: ignore[no-untyped-def]
    """The Wan 14B capture copied as `cap`, its manifest edited by `edit`."""
    return copied_capture(tmp_path, edit, WAN14B, "cap")


def test_coverage_is_the_recorded_time_of_the_shapes_that_have_cards(wan: CardFile) -> None:
    manifest = json.loads((WAN14B / "manifest.json").read_text())
    totals = manifest["recorded_totals"]["stages"]
    by_stage = {c.stage: c for c in wan.coverage}
    assert list(by_stage) == ["dit", "output", "vae"]
    for stage, coverage in by_stage.items():
        shapes = [s for s in manifest["shapes"] if s["stage"] == stage]
        recorded = sum(s["real_us"] * s["calls"] for s in shapes)
        assert coverage.real_us == totals[stage]["kernel_us"]
        assert coverage.covered_real_us == pytest.approx(recorded, abs=1e-3)
        assert coverage.calls == totals[stage]["calls"]
        cards = [c for c in wan.cards if c.stage == stage]
        replayed = sum((c.summed_kernel_us or 0) * c.calls for c in cards)
        assert coverage.replayed_us == pytest.approx(replayed, abs=1e-3)
    dit, vae = by_stage["dit"], by_stage["vae"]
    assert (dit.coverage_pct, dit.real_us, dit.replayed_us) == (100.0, 258807.187, 258146.976)
    assert (vae.coverage_pct, vae.real_us, vae.replayed_us) == (100.0, 310199.936, 306613.696)
    assert dit.basis == vae.basis == "kernel_time"


def test_a_failed_shape_is_uncovered_with_its_time_and_reason(
    tmp_path: Path, rules: LoadedRules
) -> None:
    """The VAE's 96-channel full-resolution conv, 12 calls of 6,900.5 us in the program:
    marked failed (as an OOM would), its 82.8 ms leave the covered part."""
    group = "vae:conv3d:in1x96x6x482x834_w96x96x3x3x3_s1x1x1_p0x0x0:fp32:tf32:bias"

    def fail(manifest: dict) -> None:
        [shape] = [s for s in manifest["shapes"] if s["group"] == group]
        shape.update(status="failed", error="out of memory: CUDA out of memory", report=None)

    cards = classify([_copy(tmp_path, fail)], rules, jobs=1)
    vae = next(c for c in cards.coverage if c.stage == "vae")
    lost = 6900.5238 * 12
    assert vae.covered_real_us == pytest.approx(310199.936 - lost, abs=1e-3)
    assert vae.coverage_pct == round(100 * (310199.936 - lost) / 310199.936, 2) == 73.31
    first = vae.uncovered[0]
    assert (first.name, first.calls, first.real_us) == (group, 12, pytest.approx(lost))
    assert first.why == "no card: out of memory: CUDA out of memory"


def test_a_shape_missing_from_the_capture_is_the_remainder(
    tmp_path: Path, rules: LoadedRules
) -> None:
    """A shape taken out of the manifest (another shard, or deleted from the shapes file):
    its time and its 240 calls are what neither a card nor a listed item accounts for (a timed
    recording's remainder said 0 calls)."""
    group = "dit:linear:M4680_N5120_K5120:bf16:bias"
    folder = _copy(
        tmp_path, lambda m: m.update(shapes=[s for s in m["shapes"] if s["group"] != group])
    )
    dit = next(c for c in classify([folder], rules, jobs=1).coverage if c.stage == "dit")
    [rest] = dit.uncovered
    assert rest.name == "(shapes not in these captures)"
    assert rest.real_us == pytest.approx(298.2269 * 240, abs=1e-2)
    assert rest.calls == 240
    assert dit.coverage_pct == round(100 * (258807.187 - 298.2269 * 240) / 258807.187, 2)


def test_the_shards_of_one_recording_are_reckoned_together(
    tmp_path: Path, rules: LoadedRules, wan: CardFile
) -> None:
    manifest = json.loads((WAN14B / "manifest.json").read_text())
    halves = [s["group"] for s in manifest["shapes"]][::2]
    first = _copy(tmp_path / "a", lambda m: m.update(
        shapes=[s for s in m["shapes"] if s["group"] in halves]))  # fmt: skip
    second = _copy(tmp_path / "b", lambda m: m.update(
        shapes=[s for s in m["shapes"] if s["group"] not in halves]))  # fmt: skip
    alone = classify([first], rules, jobs=1).coverage
    assert all(c.coverage_pct is not None and c.coverage_pct < 100 for c in alone[:1])
    together = classify([first, second], rules, jobs=1).coverage
    assert [(c.stage, c.coverage_pct, c.covered_real_us) for c in together] == [
        (c.stage, c.coverage_pct, c.covered_real_us) for c in wan.coverage
    ]


def test_a_recording_without_a_gpu_is_covered_by_calls(tmp_path: Path, rules: LoadedRules) -> None:
    def by_calls(manifest: dict) -> None:
        totals = manifest["recorded_totals"]
        totals["basis"] = "calls"
        for stage in totals["stages"].values():
            del stage["kernels"], stage["kernel_us"], stage["copy_us"]
        for shape in manifest["shapes"]:
            shape["real_us"] = shape["real_kernels"] = None
        totals["uncovered"] = [
            {
                "stage": "vae",
                "name": "aten.nonzero.default",
                "calls": 8,
                "why": "its output size depends on the values of its inputs",
            }
        ]
        totals["stages"]["vae"]["calls"] += 8

    cards = classify([_copy(tmp_path, by_calls)], rules, jobs=1)
    vae = next(c for c in cards.coverage if c.stage == "vae")
    assert (vae.basis, vae.real_us, vae.covered_real_us) == ("calls", None, None)
    assert (vae.calls, vae.covered_calls) == (1016, 1008)
    assert vae.coverage_pct == round(100 * 1008 / 1016, 2)
    assert [(u.name, u.calls, u.real_us) for u in vae.uncovered] == [
        ("aten.nonzero.default", 8, None)
    ]


def test_cards_without_a_recording_have_no_coverage(smoke_cards: CardFile) -> None:
    assert smoke_cards.coverage == []


def test_replay_fidelity_against_the_program(wan: CardFile) -> None:
    """The QKVO GEMM replays 1.6 % slower than the program ran it; the VAE norm's vector norm
    on 9.75 MiB reads cold under ncu: 1.62x, and the note says why."""
    cards = {c.group: c for c in wan.cards}
    gemm = fidelity(cards["dit:linear:M4680_N5120_K5120:bf16:bias"])
    assert gemm is not None and (gemm.real_us, gemm.replayed_us) == (298.2269, 302.912)
    assert gemm.ratio == round(302.912 / 298.2269, 4) and gemm.note is None
    norm = fidelity(cards["vae:aten.linalg_vector_norm.default:1x384x1x60x104:fp32"])
    assert norm is not None and norm.ratio == round(16.672 / 10.2868, 4)
    assert norm.note is not None and "fit in L2" in norm.note
    listed = slow_or_fast(wan.cards)
    assert len(listed) == 79 and listed[0].group == norm.group
    assert all(abs(f.ratio - 1) > 0.1 for f in listed)
