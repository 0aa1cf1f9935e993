"""Capture by time on a GPU host with ncu (issue 41; skipped elsewhere): the Wan 2.1 14B
recording captured at a coverage target with the light tier, then classified."""

from __future__ import annotations

import collections
import json
import lzma
from pathlib import Path

import pytest
from helpers import ROOT, run_cli

pytestmark = pytest.mark.gpu

WAN = ROOT / "reports" / "record" / "wan_14b_480x832_h200_shapes.yaml.xz"


def test_the_wan_recording_at_a_coverage_target_with_the_light_tier(tmp_path: Path) -> None:
    """`--coverage 99.5 --light-after 80` on the 254-shape recording: 167 shapes captured (129
    of them with the light list, one replay pass each kernel, the rest 12), 87 recorded below
    the target and not captured, every stage covered to the target (the figures of
    reports/coverage/README.md: 65-66 s on an H100)."""
    shapes = tmp_path / "wan.yaml"
    shapes.write_bytes(lzma.decompress(WAN.read_bytes()))
    raw = tmp_path / "raw"
    target = ["--coverage", "99.5", "--light-after", "80"]
    done = run_cli("capture", "--shapes", shapes, "-o", raw, "--one-process", *target, timeout=600)
    assert done.rc == 0, done.stderr[-2000:]
    assert "87 shapes below the target, 2.643 ms" in done.stdout + done.stderr
    manifest = json.loads((raw / "manifest.json").read_text())
    assert len(manifest["below_target"]) == 87 and manifest["light_after_pct"] == 80.0
    shapes_by_light = collections.Counter(
        (s["status"], s.get("light", False)) for s in manifest["shapes"]
    )
    assert shapes_by_light == {("ok", True): 129, ("ok", False): 38}
    passes = collections.Counter(
        (s.get("light", False), p) for s in manifest["shapes"] for p in s["replay_passes"]
    )
    assert set(passes) == {(True, 1), (False, 12)}
    cards_path = tmp_path / "cards.json"
    done = run_cli("classify", raw, "-o", cards_path, timeout=300)
    assert done.rc == 0, done.stderr[-2000:]
    cards = json.loads(cards_path.read_text())
    assert {s["stage"]: s["coverage_pct"] for s in cards["coverage"]} == {
        "dit": 99.57, "output": 100.0, "vae": 99.52
    }  # fmt: skip
    light = [c for c in cards["cards"] if c.get("captured_light")]
    assert len(light) == 129
    assert all(k["metrics"]["sm_pct"] is None for c in light for k in c["kernels"])
    full = [c for c in cards["cards"] if not c.get("captured_light")]
    assert all(k["metrics"]["sm_pct"] is not None for c in full for k in c["kernels"])
