"""`ncu-classify try` as a user runs it without a GPU: the plan from real cards and their
shapes file (--plan-only), and every refusal as one line with its exit code."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import ROOT

from ncu_classify.cli.entry import run

TRIES = ROOT / "fixtures" / "tries_h200"


@pytest.fixture
def shapes(wan_shapes: Path) -> Path:
    return wan_shapes


def _error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err.strip()


def test_plan_only_writes_the_plan_the_h200_ran(
    wan_file: Path, shapes: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "tries"
    code = run(["try", str(wan_file), "--shapes", str(shapes), "-o", str(out), "--stage", "dit",
                "--plan-only"])  # fmt: skip
    assert code == 0
    assert capsys.readouterr().out.startswith("planned 10 moves, 23 shapes: ")
    assert (out / "shapes.yaml").read_text() == (TRIES / "dit" / "shapes.yaml").read_text().replace(
        '"/tmp/wan14b_cards.json" and "/tmp/wan14b_shapes.yaml"',
        f"{json.dumps(str(wan_file))} and {json.dumps(str(shapes))}",
    )
    plan = json.loads((out / "plan.json").read_text())
    committed = json.loads((TRIES / "dit" / "plan.json").read_text())
    assert plan["moves"] == committed["moves"] and not (out / "raw").exists()


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        (["--repeat", "1"], "--repeat must be 2 or more: the savings need intervals"),
        (["--stage", "nope"], "nothing to try: no timed card of stage nope"),
        (["--top", "0"], "--top"),
        (["-o", "-"], "capture writes a folder, not a stream"),
    ],
)
def test_refusals_are_one_line(
    wan_file: Path, shapes: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    extra: list[str], expected: str,
) -> None:  # fmt: skip
    args = ["try", str(wan_file), "--shapes", str(shapes), "-o", str(tmp_path / "t"), *extra]
    code = run(args)
    assert code == 2 and expected in _error(capsys)
    assert not (tmp_path / "t" / "raw").exists()


def test_cards_of_another_shapes_file_are_refused(
    wan_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = ROOT / "fixtures" / "shapes" / "smoke.yaml"
    code = run(["try", str(wan_file), "--shapes", str(other), "-o", str(tmp_path / "t")])
    assert code == 2
    assert f"nothing to try: none of their group ids is in {other}" in _error(capsys)
