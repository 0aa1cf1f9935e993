"""What a cancelled array task leaves, per proctrack plugin and job-script form: the table and
the figures of #22 in docs/capture.md, measured on the one-node cluster of cluster.py with the
stand-in ncu (1 s per shape), scancel after two shapes finished.

    python tests/slurm/cancel_table.py [cgroup linuxproc pgid]     # as root, slurm-wlm + munge

CODE=DIR runs the capture of another checkout (its ncu_classify/ in DIR) with this stand-in: the
"before" rows of #22.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

from cluster import slurm_cluster
from test_slurm_array import FAKEBIN, _left_running, _script, _submit, _wait_gone, _wait_lines

from ncu_classify.capture.manifest import read_manifest


def cancelled(cluster, root: Path, form: str) -> str:  # type: ignore[no-untyped-def]
    """One row: submit shard 1/4 in `form`, scancel after two shapes, say what is left."""
    folder = root / f"{cluster.proctrack}-{form}"
    code = {}
    if os.environ.get("CODE"):  # older code runs nvidia-smi from PATH: the stand-in is put there
        code = {"PYTHONPATH": os.environ["CODE"], "PATH": f"{FAKEBIN}:{os.environ['PATH']}"}
    job = _submit(cluster, _script(folder, "1/4", form=form), FAKE_SHAPE_SECONDS="1.0", **code)
    try:
        _wait_lines(folder, 2, seconds=60)
    except AssertionError:
        _wait_gone(cluster, job)
        log = "".join(p.read_text() for p in root.glob(f"{folder.name}-*.out"))
        return f"not started: {log.strip().splitlines()[-1][:90]}"
    began = time.monotonic()
    cluster.run("scancel", job)
    _wait_gone(cluster, job)
    ended = time.monotonic() - began
    time.sleep(2)
    left = "none" if not _left_running(folder) else "ncu/target still running"
    if not (folder / "manifest.json").exists():
        return f"no manifest; job gone in {ended:.0f} s; left running: {left}"
    manifest = read_manifest(folder / "manifest.json")
    states = [s.status for s in manifest.shapes]
    counts = ", ".join(f"{states.count(s)} {s}" for s in ("ok", "pending", "failed"))
    ended_by = ",".join(str(b.ended_by) for b in manifest.batches) or "no batch recorded"
    return f"{counts}; batch {ended_by}; job gone in {ended:.0f} s; left running: {left}"


def main(plugins: list[str]) -> None:
    """Print the table's rows."""
    print("| proctrack | job script | what a cancelled task leaves |\n| --- | --- | --- |")
    for plugin in plugins:
        with tempfile.TemporaryDirectory() as tmp, slurm_cluster(Path(tmp), plugin) as cluster:
            Path(tmp).chmod(0o755)
            for form in ("exec", "srun", "shell"):
                print(f"| {plugin} | {form} | {cancelled(cluster, Path(tmp), form)} |", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:] or ["cgroup", "linuxproc", "pgid"])
