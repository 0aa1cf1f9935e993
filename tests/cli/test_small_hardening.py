"""Issue 37 item 7, the smaller defects: a NaN figure of a repeated measurement read as
missing, counts of more than 18 digits named, closed stdout exit 7, a Ctrl-C window reduced to
Python's own start-up, a dry run that refuses the GPUs the run refuses, SOURCE_DATE_EPOCH
checked, and the HTML report's DRAM label, counts of one and `coverage unknown`."""

from __future__ import annotations

import json
import lzma
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import CLI, ROOT

import ncu_classify
from ncu_classify.cards.files import load_card_file
from ncu_classify.cli.entry import run
from ncu_classify.core.errors import CardsError
from ncu_classify.present.page import page_html
from ncu_classify.present.page_chart import build_chart, label_box
from ncu_classify.present.page_view import build_view

pytestmark = pytest.mark.hardening  # the hostile-input regressions, run as a set: -m hardening

REPEAT_CARDS = ROOT / "reports" / "repeat" / "cards" / "w480_rep5_b.json.xz"
WORKLOAD = ROOT / "fixtures" / "workload_h200_480x832" / "cards.json"
FAKEBIN = ROOT / "tests" / "fakebin"
SMOKE_SHAPES = ROOT / "fixtures" / "shapes" / "smoke.yaml"
CODE = Path(ncu_classify.__file__).resolve().parent.parent  # the package under test
ENV = {**os.environ, "PYTHONPATH": str(CODE)}


def _err(capsys: pytest.CaptureFixture[str]) -> str:
    return capsys.readouterr().err.strip()


# --- NaN in a repeated measurement ----------------------------------------------------------


def test_a_nan_figure_of_a_repeated_measurement_is_read_as_missing(tmp_path: Path) -> None:
    """NaN as a spread's mean, in an interval, as a hot unit's or a stall's share: that object
    is missing (the file is read), as NaN is everywhere else; before, the file was refused."""
    doc = json.loads(lzma.decompress(REPEAT_CARDS.read_bytes()))
    card = doc["cards"][1]  # dit:linear:M4680_N5120_K1536:bf16:bias, summed 103.578 us
    kernel = card["kernels"][0]
    card["measurement"]["summed_kernel_us"]["mean"] = "NaN"
    card["measurement"]["stability"]["interval"][0] = "NaN"
    kernel["repeats"]["metrics"]["sm_pct"]["median"] = "NaN"
    kernel["hot_units"]["sm"][0]["pct"] = "NaN"
    text = json.dumps(doc).replace('"NaN"', "NaN")
    path = tmp_path / "nan.json"
    path.write_text(text)
    read = load_card_file(path).cards[1]
    assert read.group == "dit:linear:M4680_N5120_K1536:bf16:bias"
    assert read.measurement is not None and read.measurement.summed_kernel_us is None
    assert read.measurement.stability is not None and read.measurement.stability.interval is None
    repeats = read.kernels[0].repeats
    assert (
        repeats is not None and "sm_pct" not in repeats.metrics and "tensor_pct" in repeats.metrics
    )
    assert [u.unit for u in read.kernels[0].hot_units["sm"]] == ["sm__pipe_shared_cycles_active"]


def test_a_stall_share_of_nan_leaves_that_stall_out(tmp_path: Path, derived_cards: Path) -> None:
    source = derived_cards / "cards_480x832_drilled.json"  # regenerate.sh's, not committed
    doc = json.loads(source.read_text())
    kernel = next(k for c in doc["cards"] for k in c["kernels"] if k.get("drill_down"))
    reasons = [s["reason"] for s in kernel["drill_down"]["stalls"]]
    kernel["drill_down"]["stalls"][0]["share_pct"] = "NaN"
    path = tmp_path / "nan.json"
    path.write_text(json.dumps(doc).replace('"NaN"', "NaN"))
    read = next(
        k for c in load_card_file(path).cards for k in c.kernels if k.drill_down is not None
    )
    assert read.drill_down is not None
    assert [s.reason for s in read.drill_down.stalls] == reasons[1:]


# --- counts of more than 18 digits ----------------------------------------------------------


@pytest.mark.parametrize("calls", ["1000000000000000000", "123456789012345678901234567890"])
def test_a_count_of_more_than_18_digits_names_the_bound(tmp_path: Path, calls: str) -> None:
    text = (ROOT / "reports" / "smoke_h200_cards.json").read_text()
    path = tmp_path / "big.json"
    path.write_text(text.replace('"calls":1,', f'"calls":{calls},', 1))
    at = text.index('"calls":1,') + len('"calls":')
    line, col = text.count("\n", 0, at) + 1, at - text.rfind("\n", 0, at)
    with pytest.raises(CardsError) as caught:
        load_card_file(path)
    value = f"{float(calls):.6g}"
    assert str(caught.value) == (
        f"{path}:{line}:{col}: cards.0.calls: {value} is beyond any count this tool reads (at"
        " most 18 digits, < 10**18)"
    )


# --- closed standard output -----------------------------------------------------------------


@pytest.mark.parametrize("argv", [["metrics"], ["--version"], ["summary", str(WORKLOAD)]])
def test_closed_stdout_is_exit_7_as_dev_full(argv: list[str]) -> None:
    """`>&-`: what the command prints cannot be written, as on /dev/full (before: exit 0, its
    output lost)."""
    done = subprocess.run(
        [*CLI, *argv], stderr=subprocess.PIPE, text=True, timeout=120, env=ENV, cwd=CODE,
        preexec_fn=lambda: os.close(1),
    )  # fmt: skip
    assert (done.returncode, done.stderr) == (
        7,
        "ncu-classify: error: cannot write to standard output or error: standard output is"
        " closed\n",
    )


def test_closed_stderr_keeps_the_exit_code() -> None:
    done = subprocess.run(
        [*CLI, "metrics"], stdout=open("/dev/full", "w"), timeout=120, env=ENV, cwd=CODE,  # noqa: SIM115
        preexec_fn=lambda: os.close(2),
    )  # fmt: skip
    assert done.returncode == 7  # before: 120, Python's own failure to flush at exit


# --- Ctrl-C while the tool starts -----------------------------------------------------------


def test_the_entry_point_imports_nothing_before_its_handler() -> None:
    """The console script imports `ncu_classify.cli.main` before main() can catch Ctrl-C: that
    import loads our six tiny modules and `signal` alone (before: `typing` and
    `collections.abc` too, some 8 ms in which Ctrl-C gave a traceback)."""
    probe = (
        "import sys; before = set(sys.modules)\n"
        "from ncu_classify.cli import main\n"
        "print(' '.join(sorted(set(sys.modules) - before)))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=ENV, cwd=CODE, check=True
    )
    assert set(done.stdout.split()) <= {
        "ncu_classify",
        "ncu_classify._version",
        "ncu_classify.cli",
        "ncu_classify.cli.start",
        "ncu_classify.core",
        "ncu_classify.core.lazy",
        "signal",
    }


# --- capture --dry-run checks the GPUs as the run does --------------------------------------


@pytest.mark.parametrize(
    ("extra", "env", "line"),
    [
        (
            ["--gpus", "5"],
            {},
            "GPU index 5 is out of range: this host has 1 GPU(s), indices 0",
        ),
        (
            [],
            {"CUDA_VISIBLE_DEVICES": "7"},
            "CUDA_VISIBLE_DEVICES=7: nvidia-smi lists no GPU 7 (it lists indices 0)",
        ),
    ],
)
def test_dry_run_refuses_the_gpus_the_run_refuses(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    extra: list[str],
    env: dict[str, str],
    line: str,
) -> None:
    monkeypatch.setenv("NCU_CLASSIFY_NVIDIA_SMI", str(FAKEBIN / "nvidia-smi"))
    monkeypatch.delenv("FAKE_GPU_COUNT", raising=False)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    argv = ["capture", "--shapes", str(SMOKE_SHAPES), "-o", str(tmp_path / "raw"), "--dry-run"]
    assert run([*argv, *extra]) == 6
    assert _err(capsys) == f"ncu-classify: error: {line}"
    monkeypatch.setenv("NCU_CLASSIFY_NVIDIA_SMI", str(tmp_path / "no-nvidia-smi"))
    assert run([*argv, *extra]) == 0  # no GPU here: a plan for another host


# --- SOURCE_DATE_EPOCH ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "value", ["abc", "-5", "1.5", "99999999999999999", "253402300800", " 5", "5\n"]
)
def test_a_malformed_source_date_epoch_is_a_usage_error(
    value: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """One line naming the variable and its value, exit 2, nothing done (before: `abc` and
    `-5` fell back to the wall clock silently, 17 digits ended in exit 7)."""
    monkeypatch.setenv("SOURCE_DATE_EPOCH", value)
    assert run(["summary", str(WORKLOAD)]) == 2
    assert _err(capsys) == (
        f"ncu-classify: error: SOURCE_DATE_EPOCH={value!r}: not a whole number of seconds since"
        " 1970 from 0 to 253402300799 (9999-12-31); set it to one, or unset it for the current"
        " time"
    )


def test_the_last_second_a_stamp_holds_is_accepted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "253402300799")
    out = tmp_path / "cards.json"
    assert run(["reclassify", str(WORKLOAD), "-o", str(out)]) == 0
    assert json.loads(out.read_text())["reclassified_at"] == "9999-12-31T23:59:59+00:00"


# --- the HTML report ------------------------------------------------------------------------


def test_the_dram_label_sits_clear_of_every_marker_and_stem() -> None:
    """On the 480x832 workload the DRAM slope's foot is crowded with the memory-bound kernels
    and their stems (before, the label sat there, under them): it sits above the slope now."""
    view = build_view([("w", load_card_file(WORKLOAD))], "t")
    chart = build_chart(view.points, view.ceilings)
    assert chart is not None
    [dram] = [line for line in chart.lines if line.label.startswith("DRAM")]
    left, top, right, bottom = label_box(dram)
    centres = [tuple(float(v) for v in re.findall(r"-?[\d.]+", m.path)[:2]) for m in chart.markers]
    for marker, (x, y) in zip(chart.markers, centres, strict=True):
        assert not (left - 6 < x < right + 6 and top - 6 < y < bottom + 6), marker.tooltip
        if marker.stem:
            sx, low, high = marker.stem
            assert not (left < sx < right and min(low, high) < bottom and top < max(low, high))
    assert dram.anchor == "end" and left >= 80  # inside the plot


def test_counts_of_one_are_singular_and_unknown_coverage_is_no_warning(tmp_path: Path) -> None:
    cards = load_card_file(ROOT / "reports" / "smoke_h200_cards.json")
    page = page_html([("smoke", cards)], "t")
    one = [c for c in cards.cards if len(c.kernels) == 1]
    assert one and page.count(", 1 kernel</summary>") == len(one)
    assert ", 1 kernels" not in page
    assert re.search(r'<p class="note coverage-unknown"[^>]*>', page)
    assert 'class="warn coverage-unknown"' not in page


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["capture", "--shapes", "s.yaml", "-o", "o", "--timeout", "abc"], "'--timeout': 'abc':"),
        (["capture", "--shapes", "s.yaml", "-o", "o", "--coverage=9x9"], "'--coverage': '9x9':"),
        (["classify", "r", "-o", "c.json", "--jobs", "2", "--jobs", "1.5"], "'--jobs': '1.5':"),
        (
            ["capture", "--shapes", "s", "-o", "o", "--coverage", "\x1b[2J" * 40],
            r"'--coverage': '\x1b[2J",
        ),
    ],
)
def test_a_number_that_does_not_parse_is_named(
    argv: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """typer's number parsing says "Input should be a valid number" without the value: the
    line names the value given (the option's last use, cut to 80 characters, escaped)."""
    assert run(argv) == 2
    line = _err(capsys)
    assert f"Invalid value for {said}" in line and "Input should be a valid" in line
    assert len(line.splitlines()) == 1 and "\x1b" not in line and len(line) < 500
