"""The name a top module goes by, its stage's default (`record/naming.py`): a stack of like
blocks run by a loop variable is named by its list, whatever the loop calls each; a list of
unlike models leaves each the variable that runs it. On the H200, `record_masked.py`'s `for
block in blocks` made the first block stage `block`, the other three `blocks`: one kind of
block in two stages."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from helpers import import_or_skip

torch = import_or_skip("torch")

from ncu_classify.record import naming  # noqa: E402
from ncu_classify.record.document import shapes_yaml, validated_document  # noqa: E402
from ncu_classify.record.recorder import Recorder  # noqa: E402
from ncu_classify.shapes.file import ShapesFile, load_shapes  # noqa: E402


def _recorded(tmp_path: Path, program: Any) -> ShapesFile:
    """`program()` recorded (Python API), its shapes file written and read back."""
    recorder = Recorder()
    with recorder, torch.no_grad():
        program()
    path = tmp_path / "s.yaml"
    path.write_text(shapes_yaml(validated_document(recorder, "test")))
    return load_shapes(path)


def _sources(shapes: ShapesFile) -> list[tuple[str, str, int]]:
    return [(stage, s.source or "", s.calls) for stage, ss in shapes.stages.items() for s in ss]


def _alternating() -> list[Any]:
    """A stack of two block classes in turn (self- then cross-attention blocks, say)."""
    return [
        torch.nn.Linear(4, 4) if i % 2 == 0 else torch.nn.Sequential(torch.nn.Linear(4, 4))
        for i in range(4)
    ]


@pytest.mark.parametrize(
    ("build", "source", "calls"),
    [
        (lambda: [torch.nn.Linear(4, 4) for _ in range(3)], "blocks.*", 3),
        (lambda: torch.nn.ModuleList(torch.nn.Linear(4, 4) for _ in range(3)), "blocks.*", 3),
        (_alternating, "blocks.*, blocks.*.*", 4),
    ],
    ids=["list", "module-list", "two-kinds"],
)
def test_a_loop_over_like_blocks_is_one_stage_named_by_the_list(
    tmp_path: Path, build: Any, source: str, calls: int
) -> None:
    """A list, a `ModuleList` held in a local (its blocks were stages `block`, `1` and `2`:
    the loop variable, then each block's path in the list), or blocks of two classes in turn
    (the first was stage `block`, the rest `blocks`), run by a loop variable: one stage."""

    def program() -> None:
        blocks = build()
        x = torch.ones(2, 4)
        for block in blocks:
            x = block(x)

    assert _sources(_recorded(tmp_path, program)) == [
        ("blocks", source, calls),
        ("main", "(no module)", 1),
    ]


def test_unlike_models_in_a_list_keep_the_variable_that_runs_them(tmp_path: Path) -> None:
    def program() -> None:
        models = [torch.nn.Linear(4, 8), torch.nn.Conv1d(8, 8, 1)]
        dit, vae = models
        vae(dit(torch.ones(2, 4))[:, :, None])

    shapes = _recorded(tmp_path, program)
    assert sorted({stage for stage, _, _ in _sources(shapes)}) == ["dit", "main", "vae"]


class _Dit(torch.nn.Linear):
    """A DiT of the loop tests below: a class of its own, so that its class names it."""


class _Vae(torch.nn.Linear):
    """A VAE of the loop tests below."""


def _in_a_list() -> None:
    models = [_Dit(4, 4), _Vae(4, 4)]
    x = torch.ones(2, 4)
    for m in models:
        x = m(x)


def _in_a_dict() -> None:
    components = {"transformer": _Dit(4, 4), "vae": _Vae(4, 4)}
    x = torch.ones(2, 4)
    for _, model in components.items():
        x = model(x)


def _made_in_the_loop() -> None:
    x = torch.ones(2, 4)
    for m in [_Dit(4, 4), _Vae(4, 4)]:
        x = m(x)


@pytest.mark.parametrize(
    ("program", "stages"),
    [
        (_in_a_list, ["_dit", "_vae", "main"]),
        (_in_a_dict, ["transformer", "vae", "main"]),
        (_made_in_the_loop, ["_dit", "_vae", "main"]),
    ],
    ids=["list", "dict", "temporary"],
)
def test_a_loop_variable_over_unlike_models_names_none_of_them(
    tmp_path: Path, program: Any, stages: list[str]
) -> None:
    """`for m in models` over a DiT and a VAE: the loop variable holds each in turn, so it
    names neither (they were stages `m` and `models`: the VAE's `m` was taken, so it went
    by `models.1`); a dict names each by its key, a list (seen or not) by its class."""
    assert [stage for stage, _, _ in _sources(_recorded(tmp_path, program))] == stages


def _starred() -> None:
    pairs = [(_Dit(4, 4), 1), (_Vae(4, 4), 2)]
    x = torch.ones(2, 4)
    for m, *_ in pairs:
        x = m(x)


def _timed(run: Any) -> Any:
    return run()


def _in_a_closure() -> None:
    components = {"transformer": _Dit(4, 4), "vae": _Vae(4, 4)}
    x = torch.ones(2, 4)
    for model in components.values():
        _timed(lambda: model(x))  # noqa: B023 (run at once)


def _compiled() -> None:
    torch._dynamo.reset()
    models = [
        torch.compile(_Dit(4, 4), backend="eager"),
        torch.compile(_Vae(4, 4), backend="eager"),
    ]
    x = torch.ones(2, 4)
    for m in models:
        x = m(x)


@pytest.mark.parametrize(
    ("program", "stages"),
    [
        (_starred, ["_dit", "_vae", "main"]),
        (_in_a_closure, ["transformer", "vae", "main"]),
        (_compiled, ["_dit", "_vae", "main"]),
    ],
    ids=["starred", "closure", "compiled"],
)
def test_a_loop_variable_names_none_unpacked_starred_in_a_closure_or_compiled(
    tmp_path: Path, program: Any, stages: list[str]
) -> None:
    """`for m, *_ in pairs` (UNPACK_EX: `m` named the DiT), a closure run in the loop
    (`lambda: model(x)`: its free `model` named the DiT), compiled models in a list (one class,
    OptimizedModule: a stack of blocks, stage `models` for both)."""
    assert [stage for stage, _, _ in _sources(_recorded(tmp_path, program))] == stages


def _instruction(opname: str, arg: int | None = None, argval: Any = None) -> Any:
    return SimpleNamespace(opname=opname, arg=arg, argval=argval)


@pytest.mark.parametrize(
    ("instructions", "names"),
    [
        (  # for m in models: x = m(x)
            [("FOR_ITER", 8), ("STORE_FAST_LOAD_FAST", 34, ("m", "m")), ("PUSH_NULL",)],
            {"m"},
        ),
        (  # for i, m in enumerate(models): x = m(x)
            [("FOR_ITER", 8), ("UNPACK_SEQUENCE", 2), ("STORE_FAST_STORE_FAST", 52, ("i", "m"))],
            {"i", "m"},
        ),
        (  # for m in models: pass, then x = y (the load after the loop's store is no store)
            [("FOR_ITER", 8), ("STORE_FAST_LOAD_FAST", 35, ("m", "y")), ("STORE_FAST", 1, "x")],
            {"m"},
        ),
    ],
    ids=["store-load", "store-store", "load-after"],
)
def test_python_3_13_s_joined_stores_are_loop_variables(
    monkeypatch: pytest.MonkeyPatch, instructions: list[tuple[Any, ...]], names: set[str]
) -> None:
    """Python 3.13 joins a store and the next load (or two stores) in one instruction, whose
    argval is both names: the loop variable was `"('m', 'm')"`, so `m` named the DiT."""
    fake = [_instruction(*i) for i in instructions]
    monkeypatch.setattr(naming.dis, "get_instructions", lambda code: iter(fake))
    assert naming._loop_variables.__wrapped__(_in_a_list.__code__) == names


def test_a_list_of_lists_of_blocks_and_a_list_of_one_are_named_by_the_list(
    tmp_path: Path,
) -> None:
    """Blocks in groups, run by two loops: one stage, named by the outer list (they were
    stages `group`, `block` and `linear`); a stack of one block is named as a stack of two
    (it was `block`, the loop variable: the stage changed with the depth)."""

    def program() -> None:
        groups = [[torch.nn.Linear(4, 4), torch.nn.Linear(4, 4)] for _ in range(2)]
        x = torch.ones(2, 4)
        for group in groups:
            for block in group:
                x = block(x)
        stack = [torch.nn.Linear(4, 4)]
        for layer in stack:
            x = layer(x)

    assert _sources(_recorded(tmp_path, program)) == [
        ("groups", "groups.*.*", 4),
        ("stack", "stack.*", 1),
        ("main", "(no module)", 1),
    ]
