"""diff of repeated captures (capture --repeat): time judged by run-to-run intervals, flips only
between stable verdicts, `inconclusive` and the gate; on the committed H200 captures (two
--repeat 5 captures of the 480x832 workload: nothing beyond noise; the fp32 DiT with TF32 off
against on: a real change) and on edited copies for the paths those do not take."""

from __future__ import annotations

import lzma
import re
from collections import Counter
from pathlib import Path

import pytest
from helpers import ROOT, unstamped

from ncu_classify.cards.files import load_card_file
from ncu_classify.cards.model import CardFile
from ncu_classify.cli.entry import run
from ncu_classify.compare.diff import DiffOptions, diff_cards
from ncu_classify.compare.gate import failures, parse_condition
from ncu_classify.core.noise import load_noise
from ncu_classify.core.stats import spread

OUT = ROOT / "reports" / "repeat"


def _cards(name: str, tmp_path: Path) -> CardFile:
    path = tmp_path / f"{name}.json"
    path.write_bytes(lzma.decompress((OUT / "cards" / f"{name}.json.xz").read_bytes()))
    return load_card_file(path)


def _diff(base: CardFile, cand: CardFile):  # type: ignore[no-untyped-def]
    return diff_cards(base, cand, ("a", "b"), DiffOptions(noise=load_noise()[0]))


def test_two_repeated_captures_of_one_workload_differ_by_noise_only(
    repeat_cards: CardFile, tmp_path: Path
) -> None:
    diff = _diff(repeat_cards, _cards("w480_rep5_b", tmp_path))
    assert diff.counts == {"same": 33, "within_noise": 1}
    assert {s.judged_by for s in diff.shapes} == {"intervals"}
    assert Counter(s.speed for s in diff.shapes) == {"within_noise": 32, "inconclusive": 2}
    swapped = _diff(_cards("w480_rep5_b", tmp_path), repeat_cards)  # the test is symmetric
    assert [s.speed for s in swapped.shapes] == [s.speed for s in diff.shapes]
    flip = next(s for s in diff.shapes if s.change == "within_noise")
    assert flip.baseline and flip.candidate  # the 96-channel conv, unstable on both sides
    assert (flip.baseline.primary, flip.candidate.primary) == (
        "unresolved_no_dominant_limiter",
        "l2_bandwidth_bound",
    )
    gate = [parse_condition("flip"), parse_condition("slower:5")]
    assert failures(diff, gate, allow_inconclusive=True) == []
    [unsure] = failures(diff, gate)
    assert unsure.startswith(
        "2 shapes inconclusive (dit:linear:M4680_N64_K5120:bf16:bias, vae:conv3d:in1x384x3x62x28"
    )
    # A file against itself: nothing beyond noise, but a card whose own spread is wide stays
    # inconclusive (the width of its intervals, not a change: RSD 4-6 % at n = 5)
    itself = _diff(repeat_cards, repeat_cards)
    assert not [s for s in itself.shapes if s.speed in ("slower", "faster")]
    wide = [s.baseline.group for s in itself.shapes if s.speed == "inconclusive" and s.baseline]
    assert len(wide) == 3 and failures(itself, gate, allow_inconclusive=True) == []


def test_tf32_off_against_on_is_beyond_noise(tmp_path: Path) -> None:
    diff = _diff(_cards("dit_notf32_rep5", tmp_path), _cards("dit_tf32_rep5", tmp_path))
    assert diff.counts == {"flipped": 10, "same": 1}
    assert Counter(s.speed for s in diff.shapes) == {"faster": 10, "slower": 1}
    gemm = next(s for s in diff.shapes if s.baseline and "M4680_N5120_K5120" in s.baseline.group)
    assert (
        gemm.duration_intervals_us
        and gemm.duration_intervals_us[1][1] < gemm.duration_intervals_us[0][0]
    )


def _with_time(card, factor: float, sd_pct: float):  # type: ignore[no-untyped-def]
    """The card with its repeats' summed time moved by `factor` and spread by `sd_pct`."""
    assert card.measurement and card.measurement.summed_kernel_us
    mean = card.measurement.summed_kernel_us.mean * factor
    values = [mean * (1 + sd_pct / 100 * d) for d in (-1.2, -0.6, 0.0, 0.6, 1.2)]
    measurement = card.measurement.model_copy(update={"summed_kernel_us": spread(values)})
    return card.model_copy(update={"measurement": measurement, "summed_kernel_us": mean})


def test_interval_paths_on_edited_copies(repeat_cards: CardFile) -> None:
    """Slower beyond the widened intervals, within them, too wide to tell, and the noise file
    when one side was measured once."""
    gemm = next(c for c in repeat_cards.cards if "M4680_N5120_K5120" in c.group)
    noise = load_noise()[0]

    def speed(base, cand):  # type: ignore[no-untyped-def]
        one = repeat_cards.model_copy(update={"cards": [base]})
        other = repeat_cards.model_copy(update={"cards": [cand]})
        shape = diff_cards(one, other, ("a", "b"), DiffOptions(noise=noise)).shapes[0]
        return shape.speed, shape.judged_by

    assert speed(gemm, _with_time(gemm, 1.10, 0.3)) == ("slower", "intervals")
    assert speed(gemm, _with_time(gemm, 0.90, 0.3)) == ("faster", "intervals")
    assert speed(gemm, _with_time(gemm, 1.01, 0.3)) == ("within_noise", "intervals")
    assert speed(gemm, _with_time(gemm, 1.00, 8.0)) == ("inconclusive", "intervals")
    # a 7 % move: beyond the widened intervals of two tight cards (+-3.0 % each: 1.96 x the
    # 1.5 % run-to-run sd), where the noise file's 7.8 % tolerance calls it noise; 6 % is
    # inconclusive (the intervals overlap but allow a 12 % change)
    assert speed(gemm, _with_time(gemm, 1.07, 0.3)) == ("slower", "intervals")
    assert speed(gemm, _with_time(gemm, 1.06, 0.3)) == ("inconclusive", "intervals")
    moved = (gemm.summed_kernel_us or 0) * 1.07
    once = gemm.model_copy(update={"measurement": None, "summed_kernel_us": moved})
    assert speed(gemm, once) == ("within_noise", "noise_file")


def test_committed_repeat_reports_are_current(
    repeat_capture: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """reports/repeat/*.md|json are what make.sh writes: run in a copy of its layout (the
    capture unpacked where make.sh puts it, the cards beside), so that nothing is written into
    the repository."""
    (tmp_path / "fixtures" / "repeat_h200").mkdir(parents=True)
    (tmp_path / "fixtures" / "repeat_h200" / "w480_rep5").symlink_to(repeat_capture)
    (tmp_path / "rules").symlink_to(ROOT / "rules")
    cards = tmp_path / "reports" / "repeat" / "cards"
    cards.mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    argv = [
        "classify",
        "fixtures/repeat_h200/w480_rep5",
        "-o",
        "reports/repeat/cards/w480_rep5_a.json",
    ]
    assert run([*argv, "--rules", "rules/roofline.yaml", "--jobs", "2"]) == 0
    for name in ("w480_rep5_b", "dit_notf32_rep5", "dit_tf32_rep5"):
        data = lzma.decompress((OUT / "cards" / f"{name}.json.xz").read_bytes())
        (cards / f"{name}.json").write_bytes(data)
    at = "reports/repeat/cards"
    made = {
        "w480_rep5_a_vs_b": [f"{at}/w480_rep5_a.json", f"{at}/w480_rep5_b.json"],
        "dit_tf32_off_vs_on_rep5": [f"{at}/dit_notf32_rep5.json", f"{at}/dit_tf32_rep5.json"],
    }
    for name, args in made.items():
        for fmt in ("md", "json"):
            target = tmp_path / f"{name}.{fmt}"
            assert run(["diff", *args, "--format", fmt, "-o", str(target)]) == 0
            committed = (OUT / f"{name}.{fmt}").read_text()
            assert _no_clock(target.read_text()) == _no_clock(committed), (name, fmt)


def _no_clock(text: str) -> str:
    """The output without its stamps: JSON stamp keys, and the cards' stamps the Markdown
    header quotes (the cards of the committed capture are made afresh, at another time)."""
    return re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00", "<stamp>", unstamped(text))


def test_repeat_counters_measure_every_metric(tmp_path: Path) -> None:
    """--repeat 5 --repeat-counters on the H200 (its cards, committed): every metric has its own
    spread; work counters and launch figures do not move."""
    cards = _cards("w480_rep5_counters", tmp_path)
    gemm = next(c for c in cards.cards if c.group == "dit:linear:M4680_N5120_K5120:bf16:bias")
    kernel = gemm.kernels[0]
    assert kernel.repeats and kernel.repeats.basis == "counters" and kernel.repeats.scaled == []
    metrics = kernel.repeats.metrics
    assert metrics["flops_hgmma_bf16"].rsd_pct == 0 and metrics["flops_hgmma_bf16"].n == 5
    assert metrics["grid"].sd == 0 and metrics["waves"].max == metrics["waves"].min
    assert metrics["l2_pct"].n == 5 and metrics["l2_pct"].sd and metrics["l2_pct"].sd > 0
    assert gemm.measurement and gemm.measurement.basis == "counters"
    assert gemm.measurement.stability and gemm.measurement.stability.verdict == "stable"
