"""Shared fixtures: the real H200 reports committed under fixtures/, classified once."""

from __future__ import annotations

import datetime as dt
import itertools
import lzma
import os
import shutil
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import LEGACY, REPEAT, ROOT, SMOKE, has_gpu, import_or_skip

import ncu_classify.core.clock
from ncu_classify.cards.model import CardFile
from ncu_classify.verdicts.classify import classify
from ncu_classify.verdicts.rules import LoadedRules, load_rules


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


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """A test marked `needs(MODULE, ...)` skips where one of the modules is not installed
    (fails with NCU_CLASSIFY_REQUIRE_TORCH set), before any of its fixtures is set up."""
    for mark in item.iter_markers("needs"):
        for name in mark.args:
            import_or_skip(name)


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


@pytest.fixture(scope="session")
def derived_cards(
    wan: CardFile, rules: LoadedRules, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """A folder of the DERIVED cards files (helpers.py) as regenerate.sh writes them: the Wan
    14B recording's (`wan`), its DiT step and VAE decode (fixtures/record_h200), and each
    workload with its drill-down capture under rules/roofline.yaml; once a session, read-only."""
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
    blocks: fixtures/README.md): a plain report that several jobs read in windows, each
    from the file itself; once a session, read-only."""
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


@pytest.fixture(scope="session")
def wan_shapes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The Wan 14B recording's shapes file (the shapes of `wan`'s cards), decompressed once a
    session: read-only."""
    path = tmp_path_factory.mktemp("wan_shapes") / "wan14b_shapes.yaml"
    recorded = ROOT / "reports" / "record" / "wan_14b_480x832_h200_shapes.yaml.xz"
    path.write_bytes(lzma.decompress(recorded.read_bytes()))
    return path
