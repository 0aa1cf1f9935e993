"""Real capture on a GPU host with ncu (skipped elsewhere; run on the H200 in a session)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from conftest import CLI, SMOKE

pytestmark = pytest.mark.gpu


def test_capture_then_classify_on_the_gpu(tmp_path: Path) -> None:
    shapes = tmp_path / "shapes.yaml"
    shapes.write_text(
        "stages:\n  dit:\n    - {op: linear, M: 4680, N: 5120, K: 5120, dtype: bf16, bias: true}\n"
        "  output:\n    - {op: cast, shape: [1, 3, 13, 480, 832], from: fp32, to: bf16}\n"
    )
    raw = tmp_path / "raw"
    cli = [*CLI]
    proc = subprocess.run(
        [*cli, "capture", "--shapes", str(shapes), "-o", str(raw)],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    manifest = json.loads((raw / "manifest.json").read_text())
    assert [(s["status"], s["kernels"]) for s in manifest["shapes"]] == [("ok", 1), ("ok", 1)]
    assert all(p < 20 for s in manifest["shapes"] for p in s["replay_passes"])
    # Inputs come from a fixed seed on the CPU: the same shape hashes as in the committed capture.
    smoke = json.loads((SMOKE / "manifest.json").read_text())["shapes"][0]
    assert manifest["shapes"][0]["input_sha256"] == smoke["input_sha256"]
    cards_path = tmp_path / "cards.json"
    proc = subprocess.run(
        [*cli, "classify", str(raw), "-o", str(cards_path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    cards = json.loads(cards_path.read_text())["cards"]
    assert [c["primary"] for c in cards] == ["compute_bound", "dram_bandwidth_bound"]
    assert cards[0]["kernels"][0]["metrics"]["sm_pct"] >= 60
    assert cards[0]["kernels"][0]["missing_metrics"] == []


def test_record_on_the_gpu_then_capture_replays_the_recorded_inputs(tmp_path: Path) -> None:
    """A program run on the GPU under `record --save-inputs`; capture replays those tensors
    (their sha256 is the card's) and says so."""
    import torch

    script = tmp_path / "infer.py"
    script.write_text(
        "import torch\n"
        "torch.manual_seed(1)\n"
        "layer = torch.nn.Linear(5120, 5120, device='cuda', dtype=torch.bfloat16)\n"
        "x = torch.randn(4680, 5120, device='cuda', dtype=torch.bfloat16)\n"
        "for _ in range(3):\n"
        "    x = layer(x)\n"
    )
    shapes, inputs = tmp_path / "shapes.yaml", tmp_path / "inputs"
    cli = [*CLI]
    argv = ["record", "-o", str(shapes), "--save-inputs", str(inputs), "--", "python", str(script)]
    proc = subprocess.run([*cli, *argv], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "calls: 3" in shapes.read_text() and 'device: "cuda"' in shapes.read_text()
    [saved] = list(inputs.glob("*.pt"))
    tensors = torch.load(saved, weights_only=True)
    raw = tmp_path / "raw"
    proc = subprocess.run(
        [*cli, "capture", "--shapes", str(shapes), "-o", str(raw)],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    [shape] = json.loads((raw / "manifest.json").read_text())["shapes"]
    assert (shape["status"], shape["input_source"], shape["calls"]) == ("ok", "recorded", 3)
    import hashlib

    digest = hashlib.sha256()
    for t in tensors:
        digest.update(t.contiguous().view(torch.uint8).numpy().tobytes())
    assert shape["input_sha256"] == digest.hexdigest()
