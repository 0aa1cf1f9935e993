"""`try` as a careless user runs it: an -o that is a link to nothing, a capture's folder or a
recording's folder (try would replace its files), and Ctrl-C during the capture (the plan and
the capture so far are kept, and the same command resumes)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from helpers import CLI, ROOT, terminal_signals

from ncu_classify.cli.entry import run


def _error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err.strip()


def _try(cards: Path, shapes: Path, out: Path, *extra: str) -> list[str]:
    return ["try", str(cards), "--shapes", str(shapes), "-o", str(out), "--stage", "dit",
            "--top", "2", "--chains", "0", *extra]  # fmt: skip


def test_odd_folders_are_refused_before_anything_is_written(
    wan_file: Path, wan_shapes: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A link to itself (was: exit 7, `cannot write the plan: File exists`); a capture's folder
    (its manifest.json beside the reports); a folder holding a cards.json that is no input and
    no plan.json (was: replaced by the tries' cards)."""
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    assert run([*_try(wan_file, wan_shapes, loop), "--plan-only"]) == 2
    assert _error(capsys) == (
        f"ncu-classify: error: -o {loop}: a symbolic link to nothing (a loop, or its target is"
        " gone); give a folder"
    )
    captured = tmp_path / "capture"
    captured.mkdir()
    (captured / "manifest.json").write_text("{}")
    assert run([*_try(wan_file, wan_shapes, captured), "--plan-only"]) == 2
    assert _error(capsys) == (
        f"ncu-classify: error: -o {captured}: holds a capture (manifest.json); try captures into"
        " its own folder's raw/: choose another folder"
    )
    recording = tmp_path / "recording"
    recording.mkdir()
    (recording / "cards.json").write_text("the user's")
    assert run([*_try(wan_file, wan_shapes, recording), "--plan-only"]) == 2
    assert _error(capsys) == (
        f"ncu-classify: error: -o {recording}: holds cards.json but no plan.json (not a try"
        " folder): try would replace it; choose another folder"
    )
    assert sorted(p.name for p in recording.iterdir()) == ["cards.json"]
    assert sorted(p.name for p in captured.iterdir()) == ["manifest.json"]


def test_ctrl_c_keeps_the_plan_and_the_same_command_resumes(
    wan_file: Path, wan_shapes: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C while the stand-in ncu replays (a shape a second): exit 130, one line, plan.json,
    shapes.yaml and raw/ kept, no tries.json; the same command, its paths typed otherwise, is
    the same plan (not refused as another) and resumes the capture."""
    fakebin = ROOT / "tests" / "fakebin"
    env = {**os.environ, "PATH": f"{fakebin}{os.pathsep}{os.environ['PATH']}",
           "FAKE_NCU_REPORTS": str(ROOT / "fixtures" / "fault_h200"), "FAKE_NCU_MODE": "slow",
           "FAKE_SHAPE_SECONDS": "1"}  # fmt: skip
    out = tmp_path / "t"
    proc = subprocess.Popen(
        [*CLI, *_try(wan_file, wan_shapes, out, "--repeat", "2")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        preexec_fn=terminal_signals,
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while not list(out.glob("raw/.work/*.status.jsonl")) and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and err.splitlines()[-1] == "ncu-classify: interrupted", err
    assert "Traceback" not in err
    assert sorted(p.name for p in out.iterdir()) == ["plan.json", "raw", "shapes.yaml"]
    pending = json.loads((out / "raw" / "manifest.json").read_text())["shapes"]
    assert len(pending) == 7 and all(s["status"] != "ok" for s in pending)
    monkeypatch.chdir(tmp_path)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("FAKE_NCU_MODE", "noreport")  # the stand-in has no report of these
    again = _try(Path(os.path.relpath(wan_file)), wan_shapes, Path("./t/"), "--repeat", "2")
    assert run(again) == 5  # resumed, not refused as another plan; every original failed
    manifest = json.loads((out / "raw" / "manifest.json").read_text())
    assert len(manifest["batches"]) >= 2 and (out / "tries.json").is_file()
