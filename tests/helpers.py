"""What tests share that is not a fixture: the repository's paths, the tool as a user starts it
(`run_cli`, in a child process), output comparison without the clock, the torch skip. A module
of its own, not conftest.py: a folder's conftest.py shares that basename, so `from conftest
import ...` would find whichever conftest pytest loaded last."""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, NamedTuple

import pytest

ROOT = Path(__file__).resolve().parent.parent
SMOKE = ROOT / "fixtures" / "smoke_h200"
CLI = (sys.executable, "-m", "ncu_classify")  # the tool as a user starts it, in a child process


USER_FULL = ROOT / "fixtures" / "user_set_full" / "linear_cast.ncu-rep.xz"
LEGACY = ROOT / "fixtures" / "legacy" / "legacy_cards_480x832.json"
SEED_SHAPES = ROOT / "fixtures" / "legacy" / "seed_shapes_all.json"


STAMP_KEYS = ("generated_at", "created_at", "reclassified_at")
_STAMP = re.compile('("(?:' + "|".join(STAMP_KEYS) + r')"\s*:\s*)(?:"[^"]*"|null)')


def unstamped(text: str) -> str:
    """`text` (JSON, or anything quoting JSON) with every clock stamp replaced by `<stamp>`:
    outputs are compared without the clock, never with it."""
    return _STAMP.sub(r'\1"<stamp>"', text)


def copied_capture(
    tmp_path: Path, edit: Callable[[dict], None], source: Path = SMOKE, name: str = "raw"
) -> Path:
    """A copy of a capture folder (the smoke capture unless `source`) as `tmp_path / name`,
    whose manifest `edit` changed (in place)."""
    capture = tmp_path / name
    shutil.copytree(source, capture)
    manifest = json.loads((capture / "manifest.json").read_text())
    edit(manifest)
    (capture / "manifest.json").write_text(json.dumps(manifest))
    return capture


def unpacked_capture(source: Path, into: Path) -> Path:
    """A copy of a committed capture folder whose manifest is kept compressed
    (`manifest.json.xz`, too large plain), as `into / "cap"` with the manifest unpacked."""
    import lzma

    capture = into / "cap"
    shutil.copytree(source, capture)
    packed = capture / "manifest.json.xz"
    (capture / "manifest.json").write_bytes(lzma.decompress(packed.read_bytes()))
    packed.unlink()
    return capture


# Evidence of an unremarkable kernel: no rule but the fallback fires on it.
QUIET_EVIDENCE = {
    "sm_pct": 10.0,
    "tensor_pct": 5.0,
    "dram_pct": 10.0,
    "l2_pct": 10.0,
    "warps_active_pct": 50.0,
    "waves": 4.0,
    "sm_active_over_elapsed": 0.95,
}


def import_or_skip(name: str):  # type: ignore[no-untyped-def]
    """The module, or a skip; with NCU_CLASSIFY_REQUIRE_TORCH set (CI) a missing module is an
    error, so that CI cannot go green with the replay tests skipped.

    The one way a test needs torch (or diffusers), kept so by tests/test_without_torch.py: a
    test is marked `@pytest.mark.needs("torch")` (itself, its class, or the module's
    `pytestmark`), which skips it before any of its fixtures run; a fixture calls
    `import_or_skip("torch")` before it touches torch; a module that is torch through and
    through starts with `torch = import_or_skip("torch")` (the whole module skips). No test
    module imports torch, or a module of ours that imports it, at its top otherwise."""
    if os.environ.get("NCU_CLASSIFY_REQUIRE_TORCH"):
        return importlib.import_module(name)
    return pytest.importorskip(name)


def has_gpu() -> bool:
    """A CUDA GPU with ncu: nvidia-smi and ncu on PATH and torch sees a device."""
    if not (shutil.which("nvidia-smi") and shutil.which("ncu")):
        return False
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


REPEAT = ROOT / "fixtures" / "repeat_h200" / "w480_rep5.tar.xz"
RECORD = ROOT / "reports" / "record"
DERIVED = (  # cards files regenerate.sh writes and does not commit: the tests classify their own
    RECORD / "cards_wan14b_every_op_480x832.json",
    RECORD / "cards_wan_480x832.json",
    ROOT / "reports" / "drill" / "cards_480x832_drilled.json",
    ROOT / "reports" / "drill" / "cards_704x1280_drilled.json",
)


def derived_path(path: Path, derived_cards: Path) -> Path:
    """`path`, or for a cards file regenerate.sh writes (DERIVED, not committed) the session's
    own, of the same name (the `derived_cards` fixture)."""
    return derived_cards / path.name if path in DERIVED else path


class CliRun(NamedTuple):
    """What a child `ncu-classify` left: its exit code and both streams."""

    rc: int
    stdout: str
    stderr: str


def run_cli(
    *args: str | Path,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    input: str | None = None,
    timeout: float | None = 120,
) -> CliRun:
    """(exit code, stdout, stderr) of `ncu-classify ARGS` in a child process of this Python,
    with this worktree first on PYTHONPATH and `env` added to this environment: for what only a
    child shows (signals, closed or full streams, a terminal, start-up, the environment). Its
    standard input is empty unless `input` gives one. Where a child is not what a test is
    about, it runs the command in-process (`ncu_classify.cli.entry.run`, typer's CliRunner)."""
    base = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    done = subprocess.run(
        [*CLI, *map(str, args)], env={**base, **(env or {})}, cwd=cwd, input=input,
        stdin=subprocess.DEVNULL if input is None else None,
        capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip
    return CliRun(done.returncode, done.stdout, done.stderr)


def raw_actions(report: Path) -> Iterator[tuple[str, Any]]:
    """(innermost NVTX range, ncu_report action) of every kernel of a report, read by
    ncu_report alone (tests that recompute card figures must not use the reader)."""
    import ncu_report

    from ncu_classify.read.inflate import plain_file

    with plain_file(report) as plain:
        context = ncu_report.load_report(str(plain))
        for r in range(context.num_ranges()):
            for a in range(context.range_by_idx(r).num_actions()):
                action = context.range_by_idx(r).action_by_idx(a)
                ranges = list(action.nvtx_state().domain_by_id(0).push_pop_ranges())
                yield (str(ranges[-1]) if ranges else ""), action


def terminal_signals() -> None:
    """In a child (`Popen(preexec_fn=...)`): SIGINT, SIGTERM and SIGHUP at their defaults, as
    from a terminal. A suite started in the background by a non-interactive shell hands its
    children an ignored SIGINT (and nohup an ignored SIGHUP), which the CLI leaves ignored:
    a test of Ctrl-C would then see the command run to its end."""
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)


def inductor_kernels(code: str) -> dict[str, str]:
    """Inductor's generated C++ kernels in one module's output code: name -> source."""
    found = re.findall(r"^(cpp_fused_\w+) = async_compile\.cpp_pybinding\((.*?)'''\)", code,
                       flags=re.M | re.S)  # fmt: skip
    return dict(found)


@contextlib.contextmanager
def inductor_code(kept: list[str]) -> Iterator[None]:
    """Inductor's output code of each compile inside appended to `kept`, its caches off (a
    compile found in a cache writes none)."""
    from unittest import mock

    from torch._inductor import config
    from torch._inductor.graph import GraphLowering

    saved = mock.patch.object(GraphLowering, "save_output_code", kept.append)
    with config.patch(force_disable_caches=True), saved:
        yield
