"""Shared fixtures: the real H200 reports committed under fixtures/, classified once."""

from __future__ import annotations

import datetime as dt
import importlib
import itertools
import json
import lzma
import os
import re
import shutil
import signal
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import ncu_classify.core.clock
from ncu_classify.cards.model import CardFile
from ncu_classify.verdicts.classify import classify
from ncu_classify.verdicts.rules import LoadedRules, load_rules

ROOT = Path(__file__).resolve().parent.parent
SMOKE = ROOT / "fixtures" / "smoke_h200"
CLI = (sys.executable, "-m", "ncu_classify")  # the tool as a user starts it, in a child process


USER_FULL = ROOT / "fixtures" / "user_set_full" / "linear_cast.ncu-rep.xz"
LEGACY = ROOT / "fixtures" / "legacy" / "legacy_cards_480x832.json"
SEED_SHAPES = ROOT / "fixtures" / "legacy" / "seed_shapes_all.json"


@pytest.fixture(autouse=True, scope="session")
def own_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The cache of validated rules files (core.cache) in a folder of this test session's, for
    this process and the CLI children it starts: the user's ~/.cache stays untouched."""
    saved = os.environ.get("NCU_CLASSIFY_CACHE")
    os.environ["NCU_CLASSIFY_CACHE"] = str(tmp_path_factory.mktemp("cache"))
    yield
    if saved is None:
        os.environ.pop("NCU_CLASSIFY_CACHE", None)
    else:
        os.environ["NCU_CLASSIFY_CACHE"] = saved


@pytest.fixture(autouse=True, scope="session")
def fake_ncu_python() -> Iterator[None]:
    """The stand-in ncu (tests/fakebin/ncu) runs with this session's Python, whatever python3
    comes first on PATH (a venv that is not activated has its own)."""
    saved = os.environ.get("FAKE_NCU_PYTHON")
    os.environ["FAKE_NCU_PYTHON"] = sys.executable
    yield
    if saved is None:
        os.environ.pop("FAKE_NCU_PYTHON", None)
    else:
        os.environ["FAKE_NCU_PYTHON"] = saved


@pytest.fixture(autouse=True)
def ticking_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every stamp an output carries is a second later than the last one, so that a test that
    compares outputs carrying a clock fails every time instead of once in a while."""
    ticks = itertools.count()
    start = dt.datetime(2026, 12, 1, tzinfo=dt.timezone.utc)
    monkeypatch.setattr(
        ncu_classify.core.clock, "_now", lambda: start + dt.timedelta(seconds=next(ticks))
    )
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)


STAMP_KEYS = ("generated_at", "created_at", "reclassified_at")
_STAMP = re.compile('("(?:' + "|".join(STAMP_KEYS) + r')"\s*:\s*)(?:"[^"]*"|null)')


def unstamped(text: str) -> str:
    """`text` (JSON, or anything quoting JSON) with every clock stamp replaced by `<stamp>`:
    outputs are compared without the clock, never with it."""
    return _STAMP.sub(r'\1"<stamp>"', text)


def copied_capture(tmp_path: Path, edit: Callable[[dict], None]) -> Path:
    """A copy of the smoke capture folder whose manifest `edit` changed (in place)."""
    capture = tmp_path / "raw"
    shutil.copytree(SMOKE, capture)
    manifest = json.loads((capture / "manifest.json").read_text())
    edit(manifest)
    (capture / "manifest.json").write_text(json.dumps(manifest))
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


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """A test marked `needs(MODULE, ...)` skips where one of the modules is not installed
    (fails with NCU_CLASSIFY_REQUIRE_TORCH set), before any of its fixtures is set up."""
    for mark in item.iter_markers("needs"):
        for name in mark.args:
            import_or_skip(name)


def has_gpu() -> bool:
    """A CUDA GPU with ncu: nvidia-smi and ncu on PATH and torch sees a device."""
    if not (shutil.which("nvidia-smi") and shutil.which("ncu")):
        return False
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if has_gpu():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU, torch and ncu on PATH")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def rules() -> LoadedRules:
    return load_rules()


@pytest.fixture(scope="session")
def smoke_cards(rules: LoadedRules) -> CardFile:
    """Cards of the committed smoke capture, read serially."""
    return classify([SMOKE], rules, jobs=1)


@pytest.fixture(scope="session")
def wan(rules: LoadedRules) -> CardFile:
    """The cards of the real Wan 2.1 14B recording (`fixtures/record_h200_wan14b`: 253 cards
    with their coverage), classified once a session: read-only, shared by the views' tests."""
    return classify([ROOT / "fixtures" / "record_h200_wan14b"], rules, jobs=2)


RECORD = ROOT / "reports" / "record"
DERIVED = (  # cards files regenerate.sh writes and does not commit: the tests classify their own
    RECORD / "cards_wan14b_every_op_480x832.json",
    RECORD / "cards_wan_480x832.json",
    ROOT / "reports" / "drill" / "cards_480x832_drilled.json",
    ROOT / "reports" / "drill" / "cards_704x1280_drilled.json",
)


def derived_path(path: Path, derived_cards: Path) -> Path:
    """`path`, or for a cards file regenerate.sh writes (DERIVED, not committed) the session's
    own, of the same name (`derived_cards`)."""
    return derived_cards / path.name if path in DERIVED else path


@pytest.fixture(scope="session")
def derived_cards(
    wan: CardFile, rules: LoadedRules, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """A folder of the DERIVED cards files as regenerate.sh writes them: the Wan 14B
    recording's (`wan`), its DiT step and VAE decode (fixtures/record_h200), and each workload
    with its drill-down capture under rules/roofline.yaml; once a session, read-only."""
    from ncu_classify.cards.files import write_card_file

    folder = tmp_path_factory.mktemp("derived")
    write_card_file(folder / "cards_wan14b_every_op_480x832.json", wan)
    recorded = classify([ROOT / "fixtures" / "record_h200"], rules, jobs=2)
    write_card_file(folder / "cards_wan_480x832.json", recorded)
    roofline = load_rules(ROOT / "rules" / "roofline.yaml")
    for size in ("480x832", "704x1280"):
        captures = [ROOT / "fixtures" / f"{kind}_h200_{size}" for kind in ("workload", "drill")]
        drilled = classify(captures, roofline, jobs=2)
        write_card_file(folder / f"cards_{size}_drilled.json", drilled)
    return folder


@pytest.fixture(scope="session")
def wan14b_plain(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`fixtures/record_h200_wan14b` with its report inflated (392 kernels, 15.6 MB, no source
    blocks: fixtures/README.md): a report that several jobs read in windows. Its committed
    0.44 MB `.xz` is read whole, as classify's plan takes a compressed report for 16x its size
    and cuts none under 8 MB (read/slices.py); once a session, read-only."""
    folder = tmp_path_factory.mktemp("wan14b") / "record_h200_wan14b"
    shutil.copytree(ROOT / "fixtures" / "record_h200_wan14b", folder)
    packed = folder / "all.ncu-rep.xz"
    with lzma.open(packed) as src, (folder / "all.ncu-rep").open("wb") as dst:
        shutil.copyfileobj(src, dst)
    packed.unlink()
    return folder


@pytest.fixture(scope="session")
def wan_file(wan: CardFile, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same cards written to a file, as the CLI reads them."""
    from ncu_classify.cards.files import write_card_file

    path = tmp_path_factory.mktemp("wan") / "cards.json"
    write_card_file(path, wan)
    return path


@pytest.fixture(scope="session")
def cards_by_group(smoke_cards: CardFile) -> dict:
    return {c.group: c for c in smoke_cards.cards}


@pytest.fixture(scope="session")
def legacy_path() -> Path:
    return LEGACY


@pytest.fixture(autouse=True)
def _signal_handlers_are_restored() -> Iterator[None]:
    """Every test leaves SIGTERM, SIGINT and SIGHUP as it found them: a handler left behind is
    inherited by every process forked later (the suite once hung that way)."""
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)}
    yield
    after = {sig: signal.getsignal(sig) for sig in before}
    assert after == before, f"signal handlers changed by this test: {before} -> {after}"


@pytest.fixture(scope="session")
def wan_recording(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The small Wan DiT + VAE of fixtures/models recorded once on CPU torch (2 DiT blocks, 16
    text tokens, 64x64, 5 frames): a shapes file whose stages hold typed shapes and every other
    device op as an `aten` shape, shared by the tests of record and of the op replay."""
    import_or_skip("torch")
    import_or_skip("diffusers")
    from ncu_classify.cli.entry import run

    out = tmp_path_factory.mktemp("rec") / "wan.yaml"
    script = ROOT / "fixtures" / "models" / "record_wan.py"
    argv = ["record", "-o", str(out), "--stage", "transformer*=dit", "--stage", "vae*=vae"]
    argv += ["--stage", "=output", "--", "python", str(script), "--layers", "2"]
    assert run([*argv, "--text-tokens", "16", "--height", "64", "--width", "64"]) == 0
    return out


REPEAT = ROOT / "fixtures" / "repeat_h200" / "w480_rep5.tar.xz"


@pytest.fixture(scope="session")
def repeat_capture(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The 480x832 workload captured with `--repeat 5 --one-process` on the H200 (one tarball:
    the counters and duration reports share most bytes, so xz packs them to 2.4 MB together
    against 5.6 MB apart), unpacked once per session."""
    import tarfile

    folder = tmp_path_factory.mktemp("repeat")
    with tarfile.open(REPEAT) as tar:
        tar.extractall(folder, filter="data")
    return folder / "w480_rep5"


@pytest.fixture(scope="session")
def repeat_cards(repeat_capture: Path) -> CardFile:
    """That capture classified under rules/roofline.yaml."""
    from ncu_classify.verdicts.classify import classify
    from ncu_classify.verdicts.rules import load_rules

    return classify([repeat_capture], load_rules(ROOT / "rules" / "roofline.yaml"), jobs=2)


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
