"""Repeated measurements (capture --repeat 5) of the 480x832 workload on the H200
(fixtures/repeat_h200): every interval recomputed from the raw reports with ncu_report alone,
exact figures of the dominant GEMM and the 96-channel conv, the scaled metrics, the verdicts'
stability, the clock regime and the checks against physics."""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from pathlib import Path

import pytest
from helpers import import_or_skip

from ncu_classify.cards.model import CardFile
from ncu_classify.core.stats import spread, t95

GEMM = "dit:linear:M4680_N5120_K5120:bf16:bias"
CONV96 = "vae:conv3d:in1x96x3x482x210_w96x96x3x3x3_s1x1x1_p0x0x0:fp32:tf32"


def _raw_durations(capture: Path) -> dict[str, dict[int, list[tuple[str, float]]]]:
    """group -> repeat -> [(mangled name, us)] in launch order, read by ncu_report alone: the
    counters report is repeat 1, the duration report's `repeat#N` ranges the others."""
    ncu_report = import_or_skip("ncu_report")
    out: dict[str, dict[int, list[tuple[str, float]]]] = defaultdict(lambda: defaultdict(list))
    for name in ("all.ncu-rep", "all.times.ncu-rep"):
        context = ncu_report.load_report(str(capture / name))
        for r in range(context.num_ranges()):
            for a in range(context.range_by_idx(r).num_actions()):
                action = context.range_by_idx(r).action_by_idx(a)
                ranges = [str(x) for x in action.nvtx_state().domain_by_id(0).push_pop_ranges()]
                repeat = 1
                if ranges[-1].startswith("repeat#"):
                    repeat = int(ranges.pop().removeprefix("repeat#"))
                ns = action.metric_by_name("gpu__time_duration.sum").as_double()
                mangled = action.name(ncu_report.IAction.NameBase_MANGLED)
                out[ranges[-1]][repeat].append((mangled, ns / 1e3))
    return out


def test_every_interval_is_recomputed_from_the_raw_reports(
    repeat_capture: Path, repeat_cards: CardFile
) -> None:
    raw = _raw_durations(repeat_capture)
    assert len(repeat_cards.cards) == len(raw) == 34
    for card in repeat_cards.cards:
        launches = raw[card.group]
        assert sorted(launches) == [1, 2, 3, 4, 5], card.group
        names = [n for n, _ in launches[1]]
        assert all([n for n, _ in launches[r]] == names for r in launches), card.group
        sums = [sum(us for _, us in launches[r]) for r in sorted(launches)]
        mean, sd = statistics.fmean(sums), statistics.stdev(sums)
        half = 2.776 * sd / math.sqrt(5)  # Student's t, 4 degrees of freedom
        got = card.measurement.summed_kernel_us if card.measurement else None
        assert got is not None and got.n == 5
        assert got.mean == pytest.approx(mean, rel=1e-5)
        assert got.ci95_low == pytest.approx(mean - half, rel=1e-5)
        assert got.ci95_high == pytest.approx(mean + half, rel=1e-5)
        assert got.rsd_pct == pytest.approx(100 * sd / mean, rel=1e-4)
        assert got.min == pytest.approx(min(sums), rel=1e-5)
        assert got.max == pytest.approx(max(sums), rel=1e-5)
        for position, kernel in enumerate(card.kernels):
            own = [launches[r][position][1] for r in sorted(launches)]
            assert kernel.repeats and kernel.repeats.dur_us
            assert kernel.repeats.dur_us.mean == pytest.approx(statistics.fmean(own), rel=1e-5)
            for key in kernel.repeats.scaled:  # counted once, over each launch's elapsed time
                value = kernel.metrics[key]
                assert value is not None
                scaled = [value * own[0] / d for d in own]
                got_key = kernel.repeats.metrics[key]
                assert got_key.mean == pytest.approx(statistics.fmean(scaled), rel=1e-5), key


def test_the_dominant_gemm_exactly(repeat_cards: CardFile) -> None:
    card = next(c for c in repeat_cards.cards if c.group == GEMM)
    kernel = card.kernels[0]
    assert kernel.repeats and kernel.repeats.basis == "durations" and kernel.repeats.n == 5
    assert kernel.repeats.dur_us and kernel.repeats.dur_us.model_dump() == {
        "n": 5, "mean": 310.342, "median": 310.368, "ci95_low": 309.307, "ci95_high": 311.377,
        "sd": 0.83366, "rsd_pct": 0.268626, "min": 309.344, "max": 311.616, "stable": True,
    }  # fmt: skip
    # tensor_pct counted once, over each launch's elapsed time: v x d1 / d
    tensor = kernel.repeats.metrics["tensor_pct"]
    assert "tensor_pct" in kernel.repeats.scaled and tensor.n == 5
    assert tensor.mean == 94.4782 and tensor.max <= 100  # physics: never above the peak
    stability = card.measurement.stability if card.measurement else None
    assert stability and stability.verdict == "stable" and stability.metric == "tensor_pct"
    # 94.48 - 60 = 34.5 points over sd = hypot(0.2535 own, 0.78 run-to-run) = 0.82: 41.6 sd
    assert stability.margin_sd == 41.6
    assert stability.interval == [92.9173, 96.0391]


def test_the_96_channel_conv_is_unstable_and_says_where_it_flips(repeat_cards: CardFile) -> None:
    """The conv that flipped l2_bandwidth_bound <-> unresolved between captures: its own
    repeats read l2_pct 58.62 +- 0.5, but the run-to-run interval reaches 60."""
    card = next(c for c in repeat_cards.cards if c.group == CONV96)
    assert card.measurement and card.measurement.stability
    stability = card.measurement.stability
    assert (stability.verdict, stability.flips_to) == ("unstable", "l2_bandwidth_bound")
    assert stability.rival_interval == [56.522, 60.727] and stability.rival_margin_sd == 1.18
    assert card.measurement.summed_kernel_us and card.measurement.summed_kernel_us.mean == 441.824
    unstable = sorted(
        c.group
        for c in repeat_cards.cards
        if c.measurement
        and c.measurement.stability
        and c.measurement.stability.verdict == "unstable"
    )
    assert len(unstable) == 4 and CONV96 in unstable


def test_clock_regime_and_physics(repeat_cards: CardFile) -> None:
    for card in repeat_cards.cards:
        m = card.measurement
        assert m is not None and (m.clock.clock_control, m.clock.pipeline_boost_state) == (
            "none",
            "stable",
        )
        assert m.clock.sm_clock_ghz and m.clock.dram_clock_ghz
        max_sm = card.gpu.sm_clock_max_khz
        assert max_sm and m.clock.sm_clock_ghz.max <= max_sm / 1e6 * 1.001
        for kernel in card.kernels:
            assert kernel.repeats and kernel.repeats.dur_us and kernel.repeats.dur_us.min > 0
            for key, s in kernel.repeats.metrics.items():
                assert s.ci95_low is not None and s.ci95_low <= s.mean <= s.ci95_high, key
                if key.endswith("_pct"):
                    assert s.max <= 100.5, (card.group, key, s.max)


def test_spread_uses_students_t() -> None:
    values = [10.0, 10.2, 9.9, 10.1, 10.3]
    s = spread(values)
    half = 2.776 * statistics.stdev(values) / math.sqrt(5)
    assert s.ci95_low == pytest.approx(10.1 - half, rel=1e-5)
    assert s.ci95_high == pytest.approx(10.1 + half, rel=1e-5)
    assert s.rsd_pct == pytest.approx(100 * statistics.stdev(values) / 10.1, rel=1e-5)
    assert s.stable is True and spread([1.0, 1.5]).stable is False
    one = spread([3.0])
    assert (one.ci95_low, one.sd, one.rsd_pct, one.stable) == (None, None, None, None)
    assert t95(4) == 2.776 and t95(35) == 2.042 and t95(200) == 1.96
    # the normal interval nsight-python uses is 29 % too narrow at n = 5
    assert pytest.approx(1.416, rel=1e-3) == 2.776 / 1.96
    with pytest.raises(ValueError):
        spread([])


def test_a_repeated_report_read_alone_keeps_its_first_launch(
    repeat_capture: Path, tmp_path: Path
) -> None:
    """The duration report without its folder (a loose report: a link to it elsewhere, as in
    its folder it is read with the manifest, `tests/verdicts/test_part_of_a_capture.py`): one
    card per shape from its first launch (repeat#2), never the four launches summed, and a note
    on the others."""
    from ncu_classify.verdicts.classify import classify
    from ncu_classify.verdicts.rules import load_rules

    alone = tmp_path / "all.times.ncu-rep"
    alone.symlink_to(repeat_capture / "all.times.ncu-rep")
    cards = classify([alone], load_rules(), jobs=1).cards
    raw = _raw_durations(repeat_capture)
    assert len(cards) == 34
    for card in cards:
        launch = raw[card.group][2]
        assert card.summed_kernel_us == pytest.approx(sum(us for _, us in launch), rel=1e-6)
        assert card.notes == [
            "3 more launches of this shape (repeat# ranges) are in the report, left out:"
            " classify the capture folder for their spread"
        ]
