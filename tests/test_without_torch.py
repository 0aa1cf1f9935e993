"""The suite where torch is not installed (docs/development.md allows it): every test that needs
torch skips, nothing else fails for its lack. Kept so two ways: the suite is collected, and its
`needs` tests run, in a child Python where torch cannot be imported; and every test module is
read for uses of torch outside the one guard of helpers.import_or_skip (its docstring says
which: a `needs("torch")` mark on a test, `import_or_skip("torch")` first in a fixture or at the
top of a module that is torch throughout)."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import ROOT
from test_layout import LOADS_TORCH, _face_homes

TESTS = ROOT / "tests"
# a child Python in which `import torch` fails as where it is not installed
NO_TORCH = """
import importlib.abc, sys

class NoTorch(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "torch":
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, NoTorch())
import pytest
sys.exit(pytest.main(sys.argv[1:]))
"""


def test_without_torch_the_torch_tests_skip_and_nothing_errs() -> None:
    """Collected with torch unimportable: no collection error; the tests marked `needs` run
    and skip (none fails, none errs in a fixture)."""
    env = {k: v for k, v in os.environ.items() if k != "NCU_CLASSIFY_REQUIRE_TORCH"}
    argv = ["-q", "-p", "no:cacheprovider", "-p", "no:randomly", "-m", "needs", "-rs", "tests"]
    done = subprocess.run(
        [sys.executable, "-c", NO_TORCH, *argv],
        capture_output=True, text=True, cwd=ROOT, env=env, timeout=280,
    )  # fmt: skip
    summary = done.stdout.strip().splitlines()[-1]
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert " skipped" in summary and "passed" not in summary and "error" not in summary, summary
    assert "could not import 'torch'" in done.stdout


def _names(node: ast.AST, bodies: bool) -> Iterator[ast.AST]:
    """The nodes of `node` that run when it does; the bodies of the functions it defines only
    with `bodies` (a function defined in a test is there to be called)."""
    todo = [node]
    while todo:
        here = todo.pop()
        yield here
        if isinstance(here, (ast.FunctionDef, ast.AsyncFunctionDef)) and not bodies:
            todo += [*here.decorator_list, *here.args.defaults, *here.args.kw_defaults]
            todo = [n for n in todo if n is not None]
            continue
        todo += ast.iter_child_nodes(here)


def _imported(node: ast.AST) -> set[str]:
    """The modules an import statement names (ncu_classify's without the prefix; a name a
    package face lends as the module it lives in)."""
    if isinstance(node, ast.Import):
        names = {a.name for a in node.names}
    elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
        names = {node.module, *(f"{node.module}.{a.name}" for a in node.names)}
    else:
        return set()
    out = set()
    for name in names:
        if name.split(".")[0] == "torch":
            out.add("torch")
        short = name.removeprefix("ncu_classify.")
        stage, _, attr = short.rpartition(".")
        face = ROOT / "ncu_classify" / stage / "__init__.py"
        if stage and "." not in stage and face.is_file() and attr in _face_homes(face):
            short = f"{stage}.{_face_homes(face)[attr]}"
        out.add(short)
    return out


def _touches_torch(node: ast.AST, helpers: set[str], bodies: bool = True) -> bool:
    """Whether running `node` needs torch: it imports torch or a module of ours that loads
    it, names `torch`, or calls a helper of the module that does."""
    for n in _names(node, bodies):
        if _imported(n) & (LOADS_TORCH | {"torch"}):
            return True
        loads = isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
        if loads and (n.id == "torch" or n.id in helpers):  # type: ignore[attr-defined]
            return True
    return False


def _guard(node: ast.AST) -> bool:
    """`import_or_skip("torch")`, alone or assigned."""
    call = node.value if isinstance(node, (ast.Expr, ast.Assign)) else None
    return (
        isinstance(call, ast.Call)
        and getattr(call.func, "id", "") == "import_or_skip"
        and bool(call.args)
        and getattr(call.args[0], "value", None) == "torch"
    )


def _marked(decorators: list[ast.expr]) -> bool:
    """A `needs(... "torch" ...)` mark (or `gpu`, whose tests skip without torch) among them."""
    for d in decorators:
        text = ast.unparse(d)
        if "mark.gpu" in text or ("mark.needs(" in text and "'torch'" in text):
            return True
    return False


def _unguarded(path: Path) -> list[str]:
    """Where a test module touches torch outside the guard."""
    tree = ast.parse(path.read_text())
    functions = {  # the module's own functions, which its tests call by name
        n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
    }
    helpers: set[str] = set()
    while more := {
        name
        for name, f in functions.items()
        if name not in helpers and _touches_torch_body(f, helpers)
    }:
        helpers |= more
    problems, module_marked = [], False
    for statement in tree.body:
        if _guard(statement):
            return problems  # torch throughout: the whole module skips from here
        if isinstance(statement, ast.Assign) and ast.unparse(statement.targets[0]) == "pytestmark":
            module_marked = _marked([statement.value])
        if _touches_torch(statement, helpers, bodies=False):
            problems.append(f"{path.name}:{statement.lineno}: torch at the top of the module")
    for owner, function in _functions(tree):
        if not _touches_torch_body(function, helpers):
            continue
        where = f"{path.name}:{function.lineno} {function.name}"
        if _is_fixture(function):
            body = _without_docstring(function.body)
            first = next(i for i, s in enumerate(body) if _touches_torch(s, helpers))
            if not any(_guard(s) for s in body[:first]):
                problems.append(f"{where}: a fixture that touches torch before import_or_skip")
        elif function.name.startswith("test_"):
            decorators = [*function.decorator_list, *(owner.decorator_list if owner else [])]
            if not (module_marked or _marked(decorators)):
                problems.append(f'{where}: uses torch without @pytest.mark.needs("torch")')
    return problems


def _touches_torch_body(
    function: ast.FunctionDef | ast.AsyncFunctionDef, helpers: set[str]
) -> bool:
    """Whether calling `function` needs torch (its body, not where it is defined)."""
    return any(_touches_torch(s, helpers - {function.name}) for s in function.body)


def _functions(
    tree: ast.Module,
) -> Iterator[tuple[ast.ClassDef | None, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """The module's functions and its classes' methods, with their class."""
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield None, node
        elif isinstance(node, ast.ClassDef):
            for inner in node.body:
                if isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    yield node, inner


def _is_fixture(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Decorated as a pytest fixture."""
    return any("fixture" in ast.unparse(d) for d in function.decorator_list)


def _without_docstring(body: list[ast.stmt]) -> list[ast.stmt]:
    """A function's statements after its docstring."""
    first = body[0]
    docstring = isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
    return body[1:] if docstring else body


MODULES = sorted(p for p in TESTS.rglob("*.py") if "fakebin" not in p.parts)


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(TESTS)))
def test_every_use_of_torch_is_guarded(path: Path) -> None:
    assert _unguarded(path) == []


def test_the_reading_finds_an_unguarded_test(tmp_path: Path) -> None:
    """The check above, on a module with each way of getting it wrong."""
    bad = tmp_path / "test_bad.py"
    bad.write_text(
        "import pytest\n"
        "from helpers import import_or_skip\n"
        "from ncu_classify.record import Recorder\n"
        "def _helper():\n"
        "    from ncu_classify.replay.aten import prepare\n"
        "@pytest.fixture\n"
        "def late():\n"
        "    import torch\n"
        "    import_or_skip('torch')\n"
        "@pytest.fixture\n"
        "def fine():\n"
        "    import_or_skip('torch')\n"
        "    import torch\n"
        "def test_helper():\n"
        "    _helper()\n"
        "def test_named():\n"
        "    torch.ones(1)\n"
        "@pytest.mark.needs('torch')\n"
        "def test_marked():\n"
        "    import torch\n"
        "def test_plain():\n"
        "    assert True\n"
    )
    assert _unguarded(bad) == [
        "test_bad.py:3: torch at the top of the module",
        "test_bad.py:7 late: a fixture that touches torch before import_or_skip",
        'test_bad.py:14 test_helper: uses torch without @pytest.mark.needs("torch")',
        'test_bad.py:16 test_named: uses torch without @pytest.mark.needs("torch")',
    ]


def test_without_torch_record_says_so(tmp_path: Path) -> None:
    """Before, an internal error (ModuleNotFoundError); now one line and the environment's
    exit code, before the program runs."""
    (tmp_path / "main.py").write_text("open('ran', 'w').close()\n")
    blocked = NO_TORCH.replace(
        "import pytest\nsys.exit(pytest.main(sys.argv[1:]))",
        "from ncu_classify.cli.entry import run\nsys.exit(run(sys.argv[1:]))",
    )
    argv = [sys.executable, "-c", blocked, "record", "-o", "s.yaml", "--", "python", "main.py"]
    done = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stderr) == (
        6,
        "ncu-classify: error: record runs the program under PyTorch, which is not installed"
        f" for {sys.executable} (pip install torch)\n",
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["main.py"]
