"""Numerics of an alternative: real torch ops on the CPU (a conv in fp32 and in bf16, the
same conv in channels-last), their output samples written as the replay writes them and
compared as `try` compares them."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import import_or_skip

from ncu_classify.replay.protocol import sample_stem
from ncu_classify.tries.numerics import compare_outputs, lowest_precision

pytestmark = pytest.mark.needs("torch")


def _written(folder: Path, outputs: dict[str, object]) -> None:
    from ncu_classify.replay.outputs import write_sample

    for group, value in outputs.items():
        write_sample(folder, group, value)


def _compare(folder: Path, a: str, b: str, precision: str):  # type: ignore[no-untyped-def]
    return compare_outputs(folder, sample_stem(a), sample_stem(b), precision)


def test_a_bf16_conv_is_within_bf16_and_channels_last_is_exact(tmp_path: Path) -> None:
    torch = import_or_skip("torch")
    import torch.nn.functional as F

    gen = torch.Generator().manual_seed(0)
    x, w = torch.randn(1, 8, 4, 12, 12, generator=gen), torch.randn(8, 8, 3, 3, 3, generator=gen)
    fp32 = F.conv3d(x, w, padding=1)
    bf16 = F.conv3d(x.bfloat16(), w.bfloat16(), padding=1)
    last = F.conv3d(x.contiguous(memory_format=torch.channels_last_3d), w, padding=1)
    _written(tmp_path, {"s:orig": fp32, "s:bf16": bf16, "s:cl": last, "s:tuple": (fp32, 1)})
    low = _compare(tmp_path, "s:orig", "s:bf16", lowest_precision("fp32", "bf16"))
    assert low.compared and low.tolerance_of == "bf16" and low.within
    assert 1e-4 < (low.max_rel_error or 0) < 1.6e-2 and low.elements == fp32.numel()
    same = _compare(tmp_path, "s:orig", "s:cl", "fp32")  # read by index, not by memory order
    assert same.within and (same.max_rel_error or 0) < 1e-6
    assert _compare(tmp_path, "s:orig", "s:tuple", "fp32").max_abs_error == 0.0


def test_beyond_tolerance_is_flagged_and_odd_outputs_say_why(tmp_path: Path) -> None:
    torch = import_or_skip("torch")

    base = torch.linspace(-1.0, 1.0, 4096).reshape(64, 64)
    nan = base.clone()
    nan[3, 5] = float("nan")
    _written(tmp_path, {
        "s:orig": base, "s:off": base * 1.001, "s:nan": nan, "s:other": torch.zeros(32, 128),
        "s:pad": torch.cat([base, torch.full((1, 64), 7.0)]),
    })  # fmt: skip
    off = _compare(tmp_path, "s:orig", "s:off", "fp32")
    assert off.compared and off.within is False
    assert off.max_rel_error == pytest.approx(1e-3, rel=1e-3)
    assert _compare(tmp_path, "s:orig", "s:off", "bf16").within  # 1e-3 is inside bf16's
    bad = _compare(tmp_path, "s:orig", "s:nan", "fp32")
    assert bad.within is False and bad.why_not == "1 elements are not finite in one output"
    other = _compare(tmp_path, "s:orig", "s:other", "fp32")
    assert not other.compared and not other.padded
    assert other.why_not == "output shapes differ ([64, 64] vs [32, 128])"
    padded = _compare(tmp_path, "s:orig", "s:pad", "fp32")  # sampled whole: its first 64 rows
    assert (padded.compared, padded.padded, padded.elements, padded.max_abs_error) == (
        True, True, 4096, 0.0,
    )  # fmt: skip
    missing = _compare(tmp_path, "s:orig", "s:none", "fp32")
    assert missing.why_not == "the alternative's output was not written"


def test_a_large_padded_output_is_not_compared(tmp_path: Path) -> None:
    """Past 2^18 elements the replay samples seeded positions of each output's own size: a
    padded output's are other positions, so the pair is not compared (and may still win)."""
    torch = import_or_skip("torch")

    big = torch.randn(600, 512, generator=torch.Generator().manual_seed(2))
    _written(tmp_path, {"s:orig": big, "s:pad": torch.cat([big, torch.zeros(40, 512)])})
    found = _compare(tmp_path, "s:orig", "s:pad", "bf16")
    assert (found.compared, found.padded) == (False, True)
    assert found.why_not == (
        "padded shape ([600, 512] vs [640, 512]): the same arithmetic on more rows, sampled at"
        " other positions"
    )


def test_a_large_output_is_sampled_at_the_same_logical_positions(tmp_path: Path) -> None:
    """2^18 seeded positions of a 3-million-element output, the same for a permuted layout."""
    torch = import_or_skip("torch")

    from ncu_classify.replay.outputs import SAMPLE, output_sample

    big = torch.randn(3, 1000, 1000, generator=torch.Generator().manual_seed(1))
    permuted = big.permute(2, 0, 1).contiguous().permute(1, 2, 0)  # same values, other strides
    assert torch.equal(output_sample(big), output_sample(permuted))
    assert output_sample(big).numel() == SAMPLE
    assert lowest_precision("tf32", "fp32", "bf16") == "bf16" and lowest_precision() == "fp32"
