"""The package as the pipeline, checked rather than described: which step may import which,
the one importer of ncu_report, the only importers of torch, nothing importing the CLI, lazy
package faces, and modules small enough to read. Every import counts, also those inside a
function (a lazy import is still a dependency)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import ROOT

PACKAGE = ROOT / "ncu_classify"
STEPS = (
    "core", "read", "shapes", "replay", "capture", "record", "cards", "verdicts", "tries",
    "compare", "present", "cli",
)  # fmt: skip
# stage -> the stages it may import (besides itself and the version module); the pipeline
# order, plus the dependencies kept on purpose (the replay target reads the report's range
# names; capture checks its own reports; verdicts read capture manifests; compare re-judges
# with --reclassify; present shows diffs). shapes/ is the grammar record/, replay/, capture/
# and verdicts/ share; capture/ runs replay/ (and imports its protocol alone: no torch).
ALLOWED = {
    "core": set(),
    "read": {"core"},
    "shapes": {"core"},
    "replay": {"core", "read", "shapes"},
    "capture": {"core", "read", "shapes", "replay"},
    "record": {"core", "shapes"},
    "cards": {"core"},
    "verdicts": {"core", "read", "shapes", "capture", "cards"},
    "tries": {"core", "shapes", "replay", "capture", "cards", "verdicts"},
    "compare": {"core", "read", "cards", "verdicts"},
    "present": {"core", "cards", "compare", "tries"},
    "cli": set(STEPS) - {"cli"},
}
TOP = {"__init__": {"core", "present"}, "__main__": {"cli"}, "_version": set()}
NCU_REPORT_HOME = "read.kernels"
TORCH_STEPS = {"record", "replay"}  # torch is imported by record/ and replay/ alone
TORCH_HOMES = {
    "replay.inputs",
    "replay.target",
    "replay.outputs",
    "replay.aten",
    "replay.chain",
    "replay.layouts",
    "record.recorder",
    "record.dataflow",
    "record.identity",
    "record.calls",
    "record.naming",
    "record.function_mode",
    "record.device_ops",
    "record.timing",
    "record.profiled_calls",
    "record.region_ops",
    "record.threads",
    "record.regions",
    "record.cudagraphs",
    "record.region_graph",
    "record.region_trace",
}
MAX_LINES = 350
MAX_FACE_LINES = 40


def _modules() -> dict[str, Path]:
    """Dotted name (below ncu_classify) -> file, for every module of the package."""
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
        out[".".join(parts[:-1] if parts[-1] == "__init__" and len(parts) > 1 else parts)] = path
    return out


MODULES = _modules()


def _imports(name: str, path: Path, tree: ast.AST | None = None) -> set[str]:
    """Every module this one imports (or `tree`, a part of it), absolute
    (`ncu_classify.read.kernels`, `torch`, ...)."""
    is_package = path.name == "__init__.py"
    here = ["ncu_classify", *name.split(".")]
    package = here if is_package else here[:-1]
    found: set[str] = set()
    for node in ast.walk(tree or ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            target = ".".join([*base, *([node.module] if node.module else [])])
            found.add(target)
            found.update(f"{target}.{alias.name}" for alias in node.names)
    return found


def _ours(imported: set[str]) -> set[str]:
    """The modules of this package among `imported` (names below ncu_classify)."""
    names = {m.removeprefix("ncu_classify.") for m in imported if m.startswith("ncu_classify.")}
    return {n for n in names if n in MODULES}


def _step(module: str) -> str:
    return module.split(".")[0]


GRAPH = {name: _ours(_imports(name, path)) for name, path in MODULES.items()}
ALL_IMPORTS = {name: _imports(name, path) for name, path in MODULES.items()}


def _loads_torch() -> set[str]:
    """The modules whose import imports torch: a torch import at their top level, or a top
    level import of one that does (imports inside a function wait for the call)."""
    top = {}
    for name, path in MODULES.items():
        tree = ast.parse(path.read_text())
        tree.body = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
        top[name] = _imports(name, path, tree)
    found = {m for m, names in top.items() if any(n.split(".")[0] == "torch" for n in names)}
    while more := {m for m, names in top.items() if m not in found and _ours(names) & found}:
        found |= more
    return found


LOADS_TORCH = _loads_torch()


def test_every_module_lives_in_a_step() -> None:
    loose = [m for m in MODULES if _step(m) not in STEPS and m not in TOP]
    assert loose == []


@pytest.mark.parametrize("module", sorted(MODULES))
def test_a_step_imports_only_the_steps_below_it(module: str) -> None:
    step = _step(module)
    allowed = TOP.get(module, ALLOWED.get(step, set()) | {step})
    wrong = sorted(dep for dep in GRAPH[module] if _step(dep) not in allowed and dep != "_version")
    assert wrong == [], f"{module} ({step}) may import only {sorted(allowed)}"


def test_only_the_report_reader_imports_ncu_report() -> None:
    importers = {m for m, found in ALL_IMPORTS.items() if "ncu_report" in found}
    assert importers == {NCU_REPORT_HOME}


def test_only_replay_and_record_import_torch() -> None:
    importers = {
        m for m, found in ALL_IMPORTS.items() if any(n.split(".")[0] == "torch" for n in found)
    }
    assert importers == TORCH_HOMES
    assert {_step(m) for m in importers} == TORCH_STEPS


def test_capture_imports_the_replay_protocol_alone() -> None:
    """capture/ hands ncu the replay target's command line and talks to it through files: it
    imports the protocol (no torch), never the target."""
    used = {d for m, deps in GRAPH.items() if _step(m) == "capture" for d in deps}
    assert {d for d in used if _step(d) == "replay"} == {"replay.protocol"}


def test_what_loads_torch_is_known() -> None:
    """(the modules no test may import at its top: tests/test_without_torch.py)"""
    assert TORCH_HOMES | {"record.document", "record.totals"} == LOADS_TORCH


def test_nothing_imports_the_cli() -> None:
    importers = {m for m, deps in GRAPH.items() if any(_step(d) == "cli" for d in deps)}
    assert importers - {m for m in MODULES if _step(m) == "cli"} == {"__main__"}


def test_no_import_cycle() -> None:
    done: set[str] = set()

    def visit(module: str, stack: tuple[str, ...]) -> None:
        assert module not in stack, " -> ".join((*stack, module))
        if module in done:
            return
        for dep in GRAPH[module]:
            if dep != module and MODULES[dep].name != "__init__.py":
                visit(dep, (*stack, module))
        done.add(module)

    for module in MODULES:
        visit(module, ())


def test_modules_stay_readable() -> None:
    long = {m: n for m, p in MODULES.items() if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert long == {}


UNTYPED_CAP = 32  # 117 before issue 38, 50 at its first step; record describes calls as CallShape


def test_untyped_mappings_stay_few() -> None:
    """`dict[str, Any]` only where data has no shape of ours (foreign mappings, open shape
    parameters); the legacy card readers take a foreign format as it comes and are not counted."""
    found = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if not path.name.startswith("legacy")
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if "dict[str, Any]" in line
    ]
    assert len(found) <= UNTYPED_CAP, found


@pytest.mark.parametrize("step", STEPS)
def test_package_faces_are_short_and_lazy(step: str) -> None:
    face = PACKAGE / step / "__init__.py"
    # the code under its docstring (the docstring names every module: tests/test_docs.py)
    body = ast.parse(face.read_text()).body
    docstring_end = body[0].end_lineno if ast.get_docstring(ast.parse(face.read_text())) else 0
    assert len(face.read_text().splitlines()) - (docstring_end or 0) <= MAX_FACE_LINES
    assert GRAPH[step] <= {"core.lazy"}, "a face imports its modules only on first use"
    module = __import__(f"ncu_classify.{step}", fromlist=["__all__"])
    exported = set(getattr(module, "__all__", []))
    submodules = {m.split(".")[-1] for m in MODULES if m.startswith(f"{step}.")}
    assert exported.isdisjoint(submodules), "a name must not mean a function and a module"
    homes = _face_homes(face)
    assert set(homes) == exported, "__all__ names what the face lends, no more, no less"
    for name, home in homes.items():  # read, not imported: torch need not be installed
        assert name in _top_level_names(MODULES[f"{step}.{home}"]), f"{step}.{home}.{name}"
        if f"{step}.{home}" not in LOADS_TORCH:  # and the lazy import works
            assert getattr(module, name) is not None


def _face_homes(face: Path) -> dict[str, str]:
    """name -> module of a package face, from its `lazy_face(__name__, {...})` call."""
    for node in ast.walk(ast.parse(face.read_text())):
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "lazy_face":
            return ast.literal_eval(node.args[1])
    return {}


def _top_level_names(path: Path) -> set[str]:
    """The functions, classes and variables a module defines at its top level."""
    names: set[str] = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
    return names


def test_the_cli_starts_without_the_heavy_libraries() -> None:
    """`ncu-classify --help` must not pay for ncu_report, pandas, torch or jinja2."""
    code = (
        "import sys, ncu_classify.cli.entry as e; e.app; "
        "print(' '.join(sorted(m for m in ('ncu_report', 'pandas', 'torch', 'jinja2', "
        "'pyarrow') if m in sys.modules)))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True
    )
    assert done.stdout.strip() == ""


def test_a_shape_hands_its_card_the_fields_the_card_has() -> None:
    """The shape identity is copied in one place (`ManifestShape.identity`) under the card's own
    field names: each must be a field of both models, of the same type."""
    from ncu_classify.capture.manifest import SHAPE_IDENTITY, ManifestShape
    from ncu_classify.cards.model import Card
    from ncu_classify.verdicts.classify import ID_TELLS

    assert set(ID_TELLS) <= set(SHAPE_IDENTITY)
    for name in SHAPE_IDENTITY:
        card, record = Card.model_fields[name], ManifestShape.model_fields[name]
        # a card may not know what a record always does (legacy cards, foreign reports)
        assert card.annotation in (record.annotation, record.annotation | None), name


def test_every_hardening_module_is_marked_as_one() -> None:
    """`-m hardening` runs every module that tests/hardening/ once held (docs/development.md):
    one moved into its step's folder without `pytestmark = pytest.mark.hardening` would drop
    out of the set silently."""
    modules = sorted((ROOT / "tests").rglob("test_*hardening*.py"))
    modules += [ROOT / "tests" / "cli" / n for n in ("test_bad_input.py", "test_hostile.py")]
    assert len(modules) >= 10
    unmarked = [
        str(m.relative_to(ROOT))
        for m in modules
        if "pytestmark = pytest.mark.hardening" not in m.read_text()
    ]
    assert unmarked == []


def test_scripts_name_only_modules_that_exist() -> None:
    """The device scripts and probes kept beside their logs (`reports/`, `bench/`, `.ci/`)
    look for the replay target by its module name: after a move (`capture.replay` became
    `replay`) a leak check grepping the old name could no longer find anything left running."""
    import re

    scripts = [p for d in ("reports", "bench", ".ci", "tests") for p in (ROOT / d).rglob("*.sh")]
    scripts.append(ROOT / ".ci" / "run")
    assert len(scripts) >= 10
    stale = [
        f"{path.relative_to(ROOT)}: {name}"
        for path in scripts
        for name in re.findall(r"ncu_classify(?:\.[a-z_]+)+", path.read_text())
        if not any((ROOT / name.replace(".", "/")).with_suffix(s).exists() for s in (".py", ""))
    ]
    assert stale == []
