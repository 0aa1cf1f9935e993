"""`record --start-at MODULE:N` (issue 40): a program's warm-up runs unrecorded, the recording
starts at the Nth call of a module. On the H200 the compiled Wan decode's recording counted its
warm-up inference too (the DiT twice the plain program's time per inference), so it could not
be checked against the plain program per inference. On the CPU: typed shapes, device ops and a
compiled region's calls before the cut are not counted, a graph compiled in the warm-up is kept
with its later calls, and the warm-up's kernels (timing, stand-in events) are model building."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import import_or_skip

torch = import_or_skip("torch")

from ncu_classify.cli.entry import run  # noqa: E402
from ncu_classify.record.warmup import WARMUP, parse_start_at  # noqa: E402
from ncu_classify.shapes.chain_shape import CompiledShape  # noqa: E402
from ncu_classify.shapes.file import load_shapes  # noqa: E402

PROGRAM = """
import torch
layer = torch.nn.Linear(8, 8)
step = torch.compile(torch.nn.Linear(8, 8), backend="aot_eager")
with torch.no_grad():
    for rows in (2, 3, 4):  # a warm-up of two calls, then the call that counts
        x = layer(torch.ones(rows, 8)).sin()
        step(torch.ones(4, 8))
"""


def _record(tmp_path: Path, *options: str) -> tuple[int, Path]:
    script = tmp_path / "prog.py"
    script.write_text(PROGRAM)
    out = tmp_path / "s.yaml"
    return run(["record", "-o", str(out), *options, "--", "python", str(script)]), out


def test_the_recording_starts_at_the_nth_call_of_the_module(tmp_path: Path) -> None:
    code, out = _record(tmp_path, "--start-at", "layer:3")
    assert code == 0
    shapes = load_shapes(out)
    got = sorted(
        (stage, s.op, getattr(s, "M", None), s.calls)
        for stage, ss in shapes.stages.items()
        for s in ss
    )
    # the third call's linear (4 rows) and its sin; the compiled step once (its third call),
    # though compiled in the warm-up; the warm-up's draws and two calls of each: not counted
    assert [g for g in got if g[1] != "aten"] == [
        ("layer", "linear", 4, 1), ("step", "compiled", None, 1),
    ]  # fmt: skip
    # after the cut: the sin of the linear's output and the draw for the step (main: outside
    # any module); the third draw for `layer` ran before its call, in the warm-up
    atens = sorted(
        (stage, s.overload) for stage, ss in shapes.stages.items() for s in ss if s.op == "aten"
    )
    assert atens == [("main", "aten.ones.default"), ("main", "aten.sin.default")]
    (region,) = [s for ss in shapes.stages.values() for s in ss if isinstance(s, CompiledShape)]
    assert (region.graph, region.calls) == (0, 1)  # compiled in the warm-up, its third call


def test_without_it_every_call_is_recorded(tmp_path: Path) -> None:
    code, out = _record(tmp_path)
    assert code == 0
    shapes = load_shapes(out)
    linears = sorted(
        getattr(s, "M", 0) for ss in shapes.stages.values() for s in ss if s.op == "linear"
    )
    regions = [s for ss in shapes.stages.values() for s in ss if isinstance(s, CompiledShape)]
    assert linears == [2, 3, 4] and [r.calls for r in regions] == [3]


def test_a_start_never_reached_writes_nothing_and_says_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = _record(tmp_path, "--start-at", "layer:4")
    assert code == 5 and not out.exists()
    said = capsys.readouterr().err
    assert "--start-at layer:4: a module matching 'layer' ran 3 times" in said
    assert "nothing was recorded, no shapes file written" in said


@pytest.mark.parametrize("text", ["layer", "layer:0", ":3", "layer:x", "layer:-1"])
def test_a_bad_start_is_refused_before_the_program_runs(
    tmp_path: Path, text: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = _record(tmp_path, "--start-at", text)
    assert code == 2 and not out.exists()
    assert "expected MODULE:N" in capsys.readouterr().err


def test_the_pattern_is_a_module_path_pattern() -> None:
    start = parse_start_at("vae*:2")
    assert [start.entered(p) for p in ("transformer", "vae.decoder", "vae.decoder", "vae")] == [
        False, False, True, False,
    ]  # fmt: skip
    assert start.started and start.seen == 2


def test_the_warm_up_s_kernels_are_model_building() -> None:
    """Kernels whose op ran inside the warm-up's range go to `TUNING` (setup), whatever mark
    held them; those after it to their mark (stand-in profiler events, as test_timing's)."""
    from test_timing import CPU, CUDA, MARK, Event

    from ncu_classify.record.timing import TUNING, attribute

    events = [
        Event(WARMUP, CPU, 0, 100, 1, 1, 0),
        Event(f"{MARK}0", CPU, 10, 20, 1, 2, 0, annotation=True),
        Event("aten::mm", CPU, 12, 18, 1, 3, 0),
        Event("gemm", CUDA, 30, 40, 0, 30, 3),
        Event(f"{MARK}1", CPU, 110, 120, 1, 4, 0, annotation=True),
        Event("aten::mm", CPU, 112, 118, 1, 5, 0),
        Event("gemm", CUDA, 130, 145, 0, 31, 5),
    ]
    per_mark, outside = attribute(events)
    assert (per_mark[TUNING].ns, per_mark[1].ns, outside.kernels) == (10, 15, 0)
    assert 0 not in per_mark
