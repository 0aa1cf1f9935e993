"""Report bytes per kernel of the committed H200 captures, as ncu wrote them and after
`capture --drop-sources` (the same rewrite, applied to a copy of each folder), and whether the
cards of both folders are the same (compared as JSON, the folder's own path taken out).
reports/speed/report_size.txt was measured on four captures as ncu wrote them; since
2026-12-04 only fixtures/smoke_h200 keeps its source blocks (fixtures/README.md), so the
default measures it alone (another folder given as ncu wrote it is measured the same way).

    python bench/report_size.py [CAPTURE_FOLDER ...]
"""

from __future__ import annotations

import argparse
import json
import lzma
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ncu_classify.capture.slim import drop_sources  # noqa: E402
from ncu_classify.read.framing import check_report  # noqa: E402
from ncu_classify.verdicts.classify import classify  # noqa: E402
from ncu_classify.verdicts.rules import load_rules  # noqa: E402

CAPTURES = ("smoke_h200",)  # the one committed capture with its source blocks


def plain_copy(folder: Path, into: Path) -> list[Path]:
    """The capture folder copied into `into`, its reports decompressed; the reports."""
    into.mkdir(parents=True)
    reports = []
    for item in sorted(folder.iterdir()):
        if item.name.endswith(".ncu-rep.xz"):
            target = into / item.name.removesuffix(".xz")
            with lzma.open(item) as src, target.open("wb") as dst:
                shutil.copyfileobj(src, dst)
            reports.append(target)
        elif item.is_file():
            shutil.copyfile(item, into / item.name)
    return reports


def cards_text(folder: Path) -> str:
    """The folder's cards as JSON, its own path taken out."""
    cards = classify([folder], load_rules(), jobs=2).cards
    text = json.dumps([c.model_dump(mode="json") for c in cards]).replace(str(folder), "F")
    return text.replace(f'"{folder.name}/', '"F/')  # reports are named from their folder


def measure(folder: Path, scratch: Path) -> str:
    """One table row: kernels, bytes per kernel before and after, the share dropped, cards."""
    whole = plain_copy(folder, scratch / "whole")
    slim = plain_copy(folder, scratch / "slim")
    kernels = sum(check_report(p).kernels or 0 for p in whole)
    before = sum(p.stat().st_size for p in whole)
    dropped = sum(drop_sources(p) or 0 for p in slim)
    after = sum(p.stat().st_size for p in slim)
    assert before - dropped == after, "the sizes disagree with the bytes dropped"
    same = "same" if cards_text(scratch / "whole") == cards_text(scratch / "slim") else "DIFFER"
    per = max(kernels, 1)
    return (
        f"{folder.name:<28} {kernels:>7} {before / 1e6:>9.1f} {before / per / 1e3:>8.1f}"
        f" {after / per / 1e3:>8.1f} {100 * dropped / max(before, 1):>7.1f} {same:>7}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", type=Path, nargs="*")
    args = parser.parse_args()
    folders = args.folders or [ROOT / "fixtures" / name for name in CAPTURES]
    print(
        f"{'capture':<28} {'kernels':>7} {'MB':>9} {'KB/kern':>8} {'after':>8} {'% gone':>7}"
        f" {'cards':>7}"
    )
    for folder in folders:
        with tempfile.TemporaryDirectory(prefix="ncu-size-") as tmp:
            print(measure(folder, Path(tmp)), flush=True)


if __name__ == "__main__":
    main()
