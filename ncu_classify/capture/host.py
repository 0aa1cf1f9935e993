"""The capture host: ncu and its version, the GPUs and their memory, counter permissions.

Every problem is an EnvironmentProblem that says how to fix it (exit 6), found before any
shape is replayed where it can be.

The GPUs are those of the allocation: where CUDA_VISIBLE_DEVICES is set (a scheduler such as
Slurm sets it to the GPUs a job was given), nvidia-smi's rows (every GPU of the node) are
narrowed to those, in that order, and `--gpus` indices count within them, as CUDA's do. The
program run for the inventory is `nvidia-smi`, or the one NCU_CLASSIFY_NVIDIA_SMI names (the
seam the CPU tests and the Slurm test use to stand in for a GPU host).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import EnvironmentProblem

MIN_NCU = (2023, 1)
PERMISSION_MARK = "ERR_NVGPUCTRPERM"
SMI_VARIABLE = "NCU_CLASSIFY_NVIDIA_SMI"


def visible_devices() -> list[str] | None:
    """The devices CUDA_VISIBLE_DEVICES names (indices or UUIDs), or None where it is unset."""
    given = os.environ.get("CUDA_VISIBLE_DEVICES")
    if given is None:
        return None
    return [d.strip() for d in given.split(",") if d.strip()]


def device_of(index: int) -> str:
    """What CUDA_VISIBLE_DEVICES must say for `--gpus` index `index`: the index itself, or,
    inside an allocation, the allocated device at that position."""
    visible = visible_devices()
    return visible[index] if visible is not None and index < len(visible) else str(index)


@dataclass(frozen=True)
class Host:
    """What capture found: ncu's path and version, and the GPUs nvidia-smi lists."""

    ncu_path: str
    ncu_version: str
    gpus: list[dict[str, str]]
    pipeline_boost_state: str | None = None  # ncu's default, where its --help names one

    def memory_bytes(self, indices: tuple[int, ...]) -> int | None:
        """Memory of the smallest GPU among `indices` (all GPUs if none); None if unknown."""
        chosen = [g for g in self.gpus if not indices or int(g["index"]) in indices]
        sizes = [int(g["memory_mib"]) * 2**20 for g in chosen if g.get("memory_mib", "").isdigit()]
        return min(sizes) if sizes else None


def find_ncu(ncu: str) -> str:
    """Absolute path of ncu, or an EnvironmentProblem saying how to get it."""
    found = shutil.which(ncu)
    if found:
        return found
    if os.sep in ncu:
        why = "no such file" if not os.path.exists(ncu) else "not an executable file"
        raise EnvironmentProblem(f"--ncu {ncu}: {why}; give the path of Nsight Compute's ncu")
    raise EnvironmentProblem(
        f"ncu not found ({ncu!r} is not on PATH): install Nsight Compute or pass --ncu PATH"
    )


def ncu_version(ncu: str) -> str:
    """The version ncu prints, e.g. '2025.3.1.0'."""
    try:
        out = subprocess.run(
            [ncu, "--version"], capture_output=True, text=True, timeout=60, check=False
        ).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise EnvironmentProblem(
            f"--ncu {ncu}: cannot run it ({why}); give the path of Nsight Compute's ncu"
        ) from None
    match = re.search(r"Version\s+([\d.]+)", out)
    return match.group(1) if match else out.strip().splitlines()[-1] if out.strip() else "unknown"


def boost_state(ncu: str) -> str | None:
    """The Tensor Core boost state ncu profiles with by default (`--pipeline-boost-state`,
    `stable` in 2025.3), read from its --help; None where this ncu has no such option."""
    try:
        out = subprocess.run(
            [ncu, "--help"], capture_output=True, text=True, timeout=60, check=False
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    match = re.search(r"--pipeline-boost-state\s+arg\s+\(=(\w+)\)", out)
    return match.group(1) if match else None


def gpu_inventory() -> list[dict[str, str]]:
    """GPUs as nvidia-smi lists them (index, name, driver, uuid, memory_mib), narrowed to
    CUDA_VISIBLE_DEVICES (`allocated`); an EnvironmentProblem if there is none."""
    return allocated(node_gpus(), visible_devices())


def node_gpus() -> list[dict[str, str]]:
    """Every GPU nvidia-smi lists; an EnvironmentProblem if there is none."""
    query = "--query-gpu=index,name,driver_version,uuid,memory.total"
    smi = os.environ.get(SMI_VARIABLE) or "nvidia-smi"
    try:
        out = subprocess.run(
            [smi, query, "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        raise EnvironmentProblem(f"no NVIDIA GPU visible (nvidia-smi failed: {exc})") from None
    rows = [[c.strip() for c in line.split(",")] for line in out.strip().splitlines() if line]
    rows = [row for row in rows if row[0].isdigit() and len(row) >= 4]  # skip notices, garbage
    if not rows:
        raise EnvironmentProblem("no NVIDIA GPU visible: nvidia-smi lists none")
    keys = ("index", "name", "driver", "uuid", "memory_mib")
    return [dict(zip(keys, row, strict=False)) for row in rows]


def allocated(rows: list[dict[str, str]], visible: list[str] | None) -> list[dict[str, str]]:
    """nvidia-smi's rows narrowed to the devices CUDA_VISIBLE_DEVICES names, in its order and
    indexed from 0 as CUDA sees them (`node_index`: nvidia-smi's index); all rows where it is
    unset. An EnvironmentProblem where it names no GPU nvidia-smi lists."""
    if visible is None:
        return rows
    chosen: list[dict[str, str]] = []
    for device in visible:
        row = next((r for r in rows if device in (r["index"], r.get("uuid"))), None)
        if row is None:
            row = next((r for r in rows if r.get("uuid", "").startswith(device)), None)
        if row is None:
            raise EnvironmentProblem(
                f"CUDA_VISIBLE_DEVICES={','.join(visible)}: nvidia-smi lists no GPU {device}"
                f" (it lists indices {', '.join(r['index'] for r in rows)})"
            )
        chosen.append({**row, "index": str(len(chosen)), "node_index": row["index"]})
    if not chosen:
        raise EnvironmentProblem("no NVIDIA GPU visible: CUDA_VISIBLE_DEVICES names none")
    return chosen


def visible_gpu_bytes(gpus: tuple[int, ...]) -> int | None:
    """Memory of the smallest of `gpus` as nvidia-smi lists them (for a dry run, which needs
    no ncu); None where no GPU is visible (a plan for another host). Where GPUs are visible,
    `gpus` are checked as the run checks them (EnvironmentProblem for an index out of range)."""
    try:
        rows = node_gpus()
    except EnvironmentProblem:
        return None
    inventory = allocated(rows, visible_devices())  # what the run would refuse, refused
    check_indices(inventory, gpus)
    return Host("", "", inventory).memory_bytes(gpus)


def probe(ncu: str, gpus: tuple[int, ...]) -> Host:
    """ncu (found, new enough) and the GPUs (the ones asked for exist), or EnvironmentProblem."""
    ncu_path = find_ncu(ncu)
    version = ncu_version(ncu_path)
    parts = tuple(int(x) for x in re.findall(r"\d+", version)[:2])
    if len(parts) == 2 and parts < MIN_NCU:
        raise EnvironmentProblem(
            f"ncu {version} at {ncu_path} is too old: ncu-classify needs Nsight Compute"
            f" {MIN_NCU[0]}.{MIN_NCU[1]} or newer (pass --ncu PATH to pick another)"
        )
    inventory = gpu_inventory()
    check_indices(inventory, gpus)
    return Host(ncu_path, version, inventory, boost_state(ncu_path))


def check_indices(inventory: list[dict[str, str]], gpus: tuple[int, ...]) -> None:
    """EnvironmentProblem where one of `gpus` (--gpus) is not among the visible GPUs."""
    indices = [int(g["index"]) for g in inventory if g["index"].isdigit()]
    for wanted in gpus:
        if wanted not in indices:
            where = (
                "this host has"
                if visible_devices() is None
                else f"this allocation (CUDA_VISIBLE_DEVICES={os.environ['CUDA_VISIBLE_DEVICES']})"
                " was given"
            )
            raise EnvironmentProblem(
                f"GPU index {wanted} is out of range: {where} {len(inventory)} GPU(s),"
                f" indices {', '.join(map(str, indices))}"
            )


def counters_refused(log: Path) -> EnvironmentProblem | None:
    """The problem to raise if ncu's log says the driver refused counters to this user."""
    try:
        text = log.read_text(errors="replace")
    except OSError:
        return None
    if PERMISSION_MARK not in text:
        return None
    return EnvironmentProblem(
        "GPU performance counters are not permitted for this user (ERR_NVGPUCTRPERM): run as"
        " root or set NVreg_RestrictProfilingToAdminUsers=0; see log " + str(log)
    )
