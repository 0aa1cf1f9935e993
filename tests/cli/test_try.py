"""`ncu-classify try` as a user runs it without a GPU: the plan from real cards and their
shapes file (--plan-only), and every refusal as one line with its exit code."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from helpers import ROOT

from ncu_classify.cli.entry import run

TRIES = ROOT / "fixtures" / "tries_h200"


@pytest.fixture
def shapes(wan_shapes: Path) -> Path:
    return wan_shapes


def _sources(*paths: Path) -> str:
    """The inputs as the first line of a tries shapes file names them: name and digest."""
    named = [
        f'"{p.name}" (sha256 {hashlib.sha256(p.read_bytes()).hexdigest()[:16]})' for p in paths
    ]
    return " and ".join(named)


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
    printed = capsys.readouterr().out
    assert printed.startswith("planned 10 moves, 23 shapes: ")
    # the 10 moves' measured time x calls over the DiT cards' 258,147.0 us per inference
    assert printed.splitlines()[1] == (
        "dit: the moves tried hold 75,608.9 us of the stage's 258,147.0 us per inference"
        " (29.3 % of the cards' kernel time)"
    )
    assert (out / "shapes.yaml").read_text() == (TRIES / "dit" / "shapes.yaml").read_text().replace(
        '"/tmp/wan14b_cards.json" and "/tmp/wan14b_shapes.yaml"', _sources(wan_file, shapes)
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
        (
            ["--program", "bf16", "--stage", "vae", "--top", "3"],
            "--program bf16 changes every shape of the --stage; --top picks moves of the cards"
            " and cannot go with it: try those into another folder",
        ),
        (
            ["--program", "bf16", "--stage", "vae", "--chains", "0", "--top", "10"],
            "; --top and --chains pick moves of the cards and cannot go with it",
        ),
        (
            ["--program", "bf16", "--folds", "2", "--chains", "1", "--top", "1"],
            "; --top, --chains and --folds pick moves of the cards and cannot go with it",
        ),
    ],
)
def test_refusals_are_one_line(
    wan_file: Path, shapes: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    extra: list[str], expected: str,
) -> None:  # fmt: skip
    args = ["try", str(wan_file), "--shapes", str(shapes), "-o", str(tmp_path / "t"), *extra]
    code = run(args)
    assert code == 2 and expected in _error(capsys)
    assert not (tmp_path / "t" / "raw").exists() and not (tmp_path / "t" / "plan.json").exists()


def test_cards_of_another_shapes_file_are_refused(
    wan_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = ROOT / "fixtures" / "shapes" / "smoke.yaml"
    code = run(["try", str(wan_file), "--shapes", str(other), "-o", str(tmp_path / "t")])
    assert code == 2
    assert f"nothing to try: none of their group ids is in {other}" in _error(capsys)


def test_without_ncu_the_plan_stays_and_the_error_is_one_line(
    wan_file: Path, shapes: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "tries"
    missing = tmp_path / "no" / "ncu"
    code = run(["try", str(wan_file), "--shapes", str(shapes), "-o", str(out), "--stage", "dit",
                "--ncu", str(missing)])  # fmt: skip
    assert code == 6
    assert _error(capsys) == (
        f"ncu-classify: error: --ncu {missing}: no such file; give the path of Nsight Compute's ncu"
    )
    assert sorted(p.name for p in out.iterdir()) == ["plan.json", "shapes.yaml"]


def _captured_folder(tmp_path: Path, wan_file: Path, shapes: Path) -> Path:
    """The committed dit tries folder, its shapes.yaml (and the manifest's sha256 of it) as
    this machine's paths would have written it."""
    import hashlib
    import shutil

    folder = tmp_path / "dit"
    shutil.copytree(TRIES / "dit", folder)
    text = (
        (folder / "shapes.yaml")
        .read_text()
        .replace(
            '"/tmp/wan14b_cards.json" and "/tmp/wan14b_shapes.yaml"', _sources(wan_file, shapes)
        )
    )
    (folder / "shapes.yaml").write_text(text)
    manifest = json.loads((folder / "raw" / "manifest.json").read_text())
    manifest["shapes_sha256"] = hashlib.sha256(text.encode()).hexdigest()
    (folder / "raw" / "manifest.json").write_text(json.dumps(manifest))
    return folder


def test_a_folder_holding_the_capture_of_another_plan_is_left_alone(
    wan_file: Path, shapes: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Another --top over a tries folder that holds a capture: refused before its plan.json
    and shapes.yaml are replaced (they must keep describing raw/ and tries.json); the same
    plan again is written (byte-identical) and would resume the capture."""
    folder = _captured_folder(tmp_path, wan_file, shapes)
    before = {n: (folder / n).read_bytes() for n in ("plan.json", "shapes.yaml")}
    args = ["try", str(wan_file), "--shapes", str(shapes), "-o", str(folder), "--stage", "dit"]
    assert run([*args, "--top", "5", "--plan-only"]) == 2
    assert _error(capsys) == (
        f"ncu-classify: error: {folder}: holds the capture of another plan (raw/ was captured"
        " from another shapes.yaml: other cards, shapes file or options); try into another"
        " folder"
    )
    assert {n: (folder / n).read_bytes() for n in before} == before
    assert run([*args, "--plan-only"]) == 0
    assert (folder / "shapes.yaml").read_bytes() == before["shapes.yaml"]


def test_the_same_inputs_typed_otherwise_are_the_same_plan(
    wan_file: Path, shapes: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    """`x`, `./x` and `/abs/x` name the same inputs: the same shapes.yaml bytes (its first line
    names them by file name and digest), and a capture made from it resumes; an older try's
    folder (its first line holds the paths as typed on the H200) resumes too, its shapes.yaml
    kept as its capture was made from it."""
    import shutil

    monkeypatch.chdir(tmp_path)
    shutil.copy(wan_file, "cards.json")
    shutil.copy(shapes, "shapes_in.yaml")
    first = ["try", "cards.json", "--shapes", "shapes_in.yaml", "-o", "out", "--stage", "dit"]
    assert run([*first, "--plan-only"]) == 0
    written = (tmp_path / "out" / "shapes.yaml").read_bytes()
    assert written.decode().splitlines()[0] == (
        f"# Written by ncu-classify try from {_sources(Path('cards.json'), Path('shapes_in.yaml'))}"
    )
    manifest = json.loads((TRIES / "dit" / "raw" / "manifest.json").read_text())
    manifest["shapes_sha256"] = hashlib.sha256(written).hexdigest()  # as if captured
    (tmp_path / "out" / "raw").mkdir()
    (tmp_path / "out" / "raw" / "manifest.json").write_text(json.dumps(manifest))
    again = ["try", "./cards.json", "--shapes", str(tmp_path / "shapes_in.yaml"), "-o", "./out/"]
    assert run([*again, "--stage", "dit", "--plan-only"]) == 0
    assert (tmp_path / "out" / "shapes.yaml").read_bytes() == written
    old = tmp_path / "old"
    shutil.copytree(TRIES / "dit", old)
    assert run([*again[:4], "-o", str(old), "--stage", "dit", "--plan-only"]) == 0
    assert (old / "shapes.yaml").read_bytes() == (TRIES / "dit" / "shapes.yaml").read_bytes()
    capsys.readouterr()
    assert run([*again[:4], "-o", str(old), "--stage", "dit", "--top", "3", "--plan-only"]) == 2
    assert "holds the capture of another plan" in _error(capsys)
    (old / "shapes.yaml").write_text("edited")  # the plan can no longer be told
    assert run([*again[:4], "-o", str(old), "--stage", "dit", "--plan-only"]) == 2
    assert _error(capsys) == (
        f"ncu-classify: error: {old}: raw/ holds a capture, and shapes.yaml is not the file it"
        " was captured from (gone or edited): its plan cannot be told; try into another folder"
    )


@pytest.mark.parametrize(
    ("output", "code", "expected"),
    [
        ("a" * 300, 2, "-o {out}: cannot use it: File name too long"),
        ("plan_is_a_folder", 7, "{out}: cannot write the plan: Is a directory"),
    ],
)
def test_a_folder_that_cannot_be_written_is_named(
    wan_file: Path, shapes: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    output: str, code: int, expected: str,
) -> None:  # fmt: skip
    """Not `cannot write to standard output or error`: the folder, and why."""
    out = tmp_path / output
    (tmp_path / "plan_is_a_folder" / "plan.json").mkdir(parents=True)
    args = ["try", str(wan_file), "--shapes", str(shapes), "-o", str(out), "--plan-only"]
    assert run(args) == code
    assert _error(capsys) == "ncu-classify: error: " + expected.format(out=out)


def test_names_that_are_not_utf8_or_carry_control_characters(
    wan_file: Path, shapes: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Input paths whose bytes are not UTF-8 are written as escapes (was: an internal error
    serialising plan.json); an -o with an escape sequence is printed escaped; the cards passed
    over for want of a shape are counted."""
    import os

    cards = Path(os.fsdecode(bytes(tmp_path) + b"/c\xfe.json"))
    cards.write_bytes(wan_file.read_bytes())
    out = tmp_path / "esc\x1b[31mred"
    args = ["try", str(cards), "--shapes", str(shapes), "-o", str(out), "--top", "1"]
    assert run([*args, "--plan-only"]) == 0
    shown = str(tmp_path / "esc\\x1b[31mred")
    assert capsys.readouterr().out == (
        f"planned 1 move, 4 shapes: {shown}/plan.json, {shown}/shapes.yaml\n"
        "vae: the moves tried hold 82,004.4 us of the stage's 306,613.7 us per inference (26.7 %"
        " of the cards' kernel time)\n"
        "vae:fold: not folded: the recording keeps no chains (record --chains): no pad can be"
        " tied to its conv\n"  # --folds 5 by default: a pad is tied to its conv by the chains
    )
    plan = json.loads((out / "plan.json").read_text(encoding="utf-8"))
    label = f"{tmp_path}/c" + "\\xfe.json"
    assert plan["cards_file"] == label
    head = (out / "shapes.yaml").read_text().splitlines()[0]
    digest = hashlib.sha256(wan_file.read_bytes()).hexdigest()[:16]
    assert head.startswith(
        f'# Written by ncu-classify try from "c\\\\xfe.json" (sha256 {digest}) and '
    )


def test_cards_passed_over_for_want_of_a_shape_are_counted(
    shapes: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The 480x832 workload's cards over the Wan 14B recording: one group in common."""
    cards = ROOT / "fixtures" / "workload_h200_480x832" / "cards.json"
    out = tmp_path / "t"
    assert run(["try", str(cards), "--shapes", str(shapes), "-o", str(out), "--plan-only"]) == 0
    assert capsys.readouterr().out == (
        f"planned 1 move, 2 shapes: {out}/plan.json, {out}/shapes.yaml; 31 timed cards passed"
        f" over, not in {shapes} (not_found)\n"
        "output: the moves tried hold 30.3 us of the stage's 69.1 us per inference (43.9 % of"
        " the cards' kernel time)\n"
        "vae:fold: not folded: the recording keeps no chains (record --chains): no pad can be"
        " tied to its conv\n"
    )


@pytest.mark.parametrize("name", ["shapes.yaml", "cards.json"])
def test_a_folder_whose_written_files_are_inputs_is_refused(
    wan_file: Path, shapes: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    name: str,
) -> None:  # fmt: skip
    """`-o .` beside the recording's shapes.yaml (or the cards.json that try writes after the
    capture): refused before anything is written (was: the recording replaced, --plan-only
    too)."""
    here = tmp_path / "here"
    here.mkdir()
    cards = here / ("cards.json" if name == "cards.json" else "c.json")
    recording = here / ("shapes.yaml" if name == "shapes.yaml" else "r.yaml")
    cards.write_bytes(wan_file.read_bytes())
    recording.write_bytes(shapes.read_bytes())
    before = recording.read_bytes()
    code = run(["try", str(cards), "--shapes", str(recording), "-o", str(here), "--plan-only"])
    assert code == 2
    given = recording if name == "shapes.yaml" else cards
    assert _error(capsys) == (
        f"ncu-classify: error: -o {here}: try writes {name} there, and it is an input"
        f" ({given}); choose another folder"
    )
    assert recording.read_bytes() == before and not (here / "plan.json").exists()


def test_a_move_whose_original_failed_is_exit_5(
    wan_file: Path, shapes: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """The stand-in ncu replays every shape and writes no report: each move's original failed,
    so nothing was measured; the results are still written, and the exit is 5 (was 0)."""
    import os

    monkeypatch.setenv("PATH", f"{ROOT / 'tests' / 'fakebin'}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_NCU_REPORTS", str(ROOT / "fixtures" / "fault_h200"))
    monkeypatch.setenv("FAKE_NCU_MODE", "noreport")
    monkeypatch.delenv("FAKE_SHAPE_SECONDS", raising=False)
    out = tmp_path / "t"
    args = ["try", str(wan_file), "--shapes", str(shapes), "-o", str(out), "--stage", "dit",
            "--top", "2", "--chains", "0", "--repeat", "2"]  # fmt: skip
    assert run(args) == 5
    assert capsys.readouterr().err.splitlines()[-1] == (
        "ncu-classify: error: 2 of 2 moves measured nothing: the op as recorded failed to"
        f" capture; see {out / 'raw' / 'manifest.json'}"
    )
    results = json.loads((out / "tries.json").read_text())
    assert [m["original"]["status"][:31] for m in results["moves"]] == [
        "failed: replayed, but ncu wrote", "failed: replayed, but ncu wrote"
    ]  # fmt: skip


def test_a_move_without_repeats_is_exit_5(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The H200's dit results with one original's interval gone (its repeats failed) and
    another's capture failed: exit 5, both counted; the results as committed: nothing."""
    import typer

    from ncu_classify.cli.tries import _check_measured
    from ncu_classify.tries.results import load_results

    results = load_results(TRIES / "dit" / "tries.json")
    _check_measured(results, tmp_path)
    time = results.moves[0].original.time
    assert time is not None
    time.ci95_low_us = None
    results.moves[1].original.status = "failed: out of memory"
    with pytest.raises(typer.Exit) as stopped:
        _check_measured(results, tmp_path)
    assert stopped.value.exit_code == 5
    assert _error(capsys) == (
        "ncu-classify: error: 1 of 10 moves measured nothing: the op as recorded failed to"
        f" capture; 1 of 10 moves have no repeats (no intervals); see {tmp_path}/raw/manifest.json"
    )


def test_a_resume_with_another_repeat_names_try_s_option(
    wan_file: Path, shapes: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The dit capture was made with --repeat 5: --repeat 3 on it is refused before ncu is
    looked for, naming what to give (was: capture's line, naming a --resume try lacks)."""
    folder = _captured_folder(tmp_path, wan_file, shapes)
    args = ["try", str(wan_file), "--shapes", str(shapes), "-o", str(folder), "--stage", "dit",
            "--repeat", "3", "--ncu", str(tmp_path / "no-ncu")]  # fmt: skip
    assert run(args) == 2
    assert _error(capsys) == (
        f"ncu-classify: error: {folder}: its capture was made with --repeat 5: give that to"
        " resume it, or try into another folder"
    )


def test_a_legacy_cards_file_is_named_as_such(
    legacy_path: Path, shapes: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Read (old inputs stay readable), but its group ids name no shape: said as such."""
    out = tmp_path / "t"
    args = ["try", str(legacy_path), "--shapes", str(shapes), "-o", str(out), "--plan-only"]
    assert run(args) == 2
    assert _error(capsys) == (
        f"ncu-classify: error: {legacy_path}: a legacy cards file; its group ids are not a"
        " capture's: try the cards classify wrote from a capture of the shapes file"
    )
    assert not out.exists()
