"""The numerics reader on sample files a capture left broken (a write cut short, a sidecar
edited, an original that is itself NaN): each pair is not compared and says why, and the
results of the moves around it are still written (no exception). No torch: the files are
written here as the replay writes them."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from ncu_classify.tries.numerics import compare_outputs


def _sample(folder: Path, stem: str, values: list[float], sidecar: object = None) -> None:
    """`stem.f32` (little-endian float32) and its sidecar, as replay.outputs writes them."""
    (folder / f"{stem}.f32").write_bytes(struct.pack(f"<{len(values)}f", *values))
    facts = {"shape": [len(values)]} if sidecar is None else sidecar
    (folder / f"{stem}.json").write_text(json.dumps(facts), encoding="utf-8")


def test_a_truncated_sample_is_not_compared(tmp_path: Path) -> None:
    _sample(tmp_path, "orig", [1.0, 2.0, 3.0])
    _sample(tmp_path, "alt", [1.0, 2.0, 3.0])
    (tmp_path / "alt.f32").write_bytes((tmp_path / "alt.f32").read_bytes()[:-1])
    found = compare_outputs(tmp_path, "orig", "alt", "fp32")
    assert not found.compared and found.within is None
    assert found.why_not == "alt.f32: 11 bytes, not whole float32 values"


@pytest.mark.parametrize(
    ("sidecar", "why"),
    [
        ("{", "alt.json: not the JSON the replay writes"),
        ([3], "alt.json: no output shape (a list of sizes)"),
        ({}, "alt.json: no output shape (a list of sizes)"),
        ({"shape": [True]}, "alt.json: no output shape (a list of sizes)"),
        ({"shape": [-3]}, "alt.json: no output shape (a list of sizes)"),
        (b"\xff\xfe", "alt.json: not the JSON the replay writes"),
    ],
)
def test_a_broken_sidecar_is_not_compared(tmp_path: Path, sidecar: object, why: str) -> None:
    _sample(tmp_path, "orig", [1.0, 2.0, 3.0])
    _sample(tmp_path, "alt", [1.0, 2.0, 3.0])
    side = tmp_path / "alt.json"
    if isinstance(sidecar, bytes):
        side.write_bytes(sidecar)
    else:
        side.write_text(sidecar if isinstance(sidecar, str) else json.dumps(sidecar))
    found = compare_outputs(tmp_path, "orig", "alt", "fp32")
    assert (found.compared, found.why_not) == (False, why)


def test_an_original_that_is_not_finite_is_no_reference(tmp_path: Path) -> None:
    nan = float("nan")
    _sample(tmp_path, "orig", [1.0, nan, 3.0, float("inf")])
    _sample(tmp_path, "alt", [1.0, nan, 3.0, float("inf")])
    found = compare_outputs(tmp_path, "orig", "alt", "bf16")
    assert not found.compared and found.within is None
    assert found.why_not == (
        "2 elements of the original's output are not finite: nothing to compare against"
    )
    _sample(tmp_path, "fine", [1.0, 2.0, 3.0, 4.0])
    _sample(tmp_path, "nan", [1.0, nan, 3.0, 4.0])
    beyond = compare_outputs(tmp_path, "fine", "nan", "bf16")
    assert beyond.compared and beyond.within is False
    assert beyond.why_not == "1 elements are not finite in one output"


@pytest.mark.parametrize(
    ("orig", "alt", "padded"),
    [
        ([3, 2], [4, 2], [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 99.0, 99.0]),
        ([2, 3, 1], [2, 4, 1], [1.0, 2.0, 3.0, 99.0, 4.0, 5.0, 6.0, 99.0]),
    ],
)
def test_a_padded_output_sampled_whole_is_compared_over_the_original_s_positions(
    tmp_path: Path, orig: list[int], alt: list[int], padded: list[float]
) -> None:
    """Outputs up to 2^18 elements are sampled whole, in logical order: the padded one's extra
    rows (here 99.0) are left out and the rest set against the original's."""
    _sample(tmp_path, "orig", [1.0, 2.0, 3.0, 4.0, 5.0, 6.0], {"shape": orig})
    _sample(tmp_path, "alt", padded, {"shape": alt})
    found = compare_outputs(tmp_path, "orig", "alt", "fp32")
    assert (found.compared, found.padded, found.elements) == (True, True, 6)
    assert (found.max_abs_error, found.within) == (0.0, True)
    _sample(tmp_path, "alt", [padded[0] + 1.0, *padded[1:]], {"shape": alt})
    assert compare_outputs(tmp_path, "orig", "alt", "fp32").max_abs_error == 1.0
