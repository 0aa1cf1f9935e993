"""The tries captures of the H200 (fixtures/tries_h200) as `tried_results` reads them, with an
output sample written beside each committed sidecar: the host's samples (1 MiB each) are not
committed, and an alternative whose output was not compared cannot win."""

from __future__ import annotations

import json
import shutil
from array import array
from dataclasses import dataclass
from pathlib import Path

from ncu_classify.capture.manifest import Manifest
from ncu_classify.cards.model import CardFile
from ncu_classify.shapes.file import ShapesFile
from ncu_classify.tries.plan_models import TryPlan


@dataclass
class TriesInputs:
    """What `tried_results` reads of one tries folder, its outputs/ a writable copy."""

    plan: TryPlan
    cards: CardFile
    manifest: Manifest
    shapes: ShapesFile
    outputs: Path


def write_samples(sidecars: Path, into: Path) -> Path:
    """`into`: each sidecar of `sidecars` with a sample of as many elements as it says were
    sampled, the same values for every output (so each pair compares exactly)."""
    shutil.copytree(sidecars, into)
    for side in sorted(into.glob("*.json")):
        count = json.loads(side.read_text())["sampled"]
        values = array("f", (float(i % 251) - 125.0 for i in range(count)))
        side.with_suffix(".f32").write_bytes(values.tobytes())
    return into
