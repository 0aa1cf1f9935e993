"""The tries captures of the H200 (fixtures/tries_h200) classified once for the tests of this
folder, each output with a sample written (helpers_tries.write_samples)."""

from __future__ import annotations

import pytest
from helpers import ROOT
from helpers_tries import TriesInputs, write_samples

from ncu_classify.capture.manifest import read_manifest
from ncu_classify.shapes.file import load_shapes
from ncu_classify.tries.plan_models import TryPlan
from ncu_classify.verdicts.rules import LoadedRules

TRIES = ROOT / "fixtures" / "tries_h200"


@pytest.fixture(scope="session")
def tries_inputs(
    rules: LoadedRules, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, TriesInputs]:
    """The tries captures of the H200 classified here, by folder name."""
    from ncu_classify.verdicts.classify import classify

    found = {}
    for stage in ("vae", "dit", "chains_vae", "chains_dit", "folds_vae"):
        folder = TRIES / stage
        found[stage] = TriesInputs(
            plan=TryPlan.model_validate_json((folder / "plan.json").read_text()),
            cards=classify([folder / "raw"], rules, jobs=1),
            manifest=read_manifest(folder / "raw" / "manifest.json"),
            shapes=load_shapes(folder / "shapes.yaml"),
            outputs=write_samples(folder / "outputs", tmp_path_factory.mktemp(stage) / "outputs"),
        )
    return found
