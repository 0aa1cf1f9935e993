"""A one-node Slurm cluster on localhost for the array test: munged, slurmctld and slurmd from
Debian's packages (`slurm-wlm`, `munge`), started as plain background processes as root (no
systemd), with two fake GPUs as gres backed by dummy device files so that `#SBATCH --gpus=1`
works and Slurm sets CUDA_VISIBLE_DEVICES. Credentials live 10 s (`cred_expire`, 120 s by
default), which is also how long Slurm holds a requeued job before it runs again. Every daemon
it starts is stopped by its PID when the block ends, also when the test fails.

    python tests/slurm/cluster.py linuxproc   # starts one, prints its SLURM_CONF, Enter stops it
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

DAEMONS = ("munged", "slurmctld", "slurmd", "sbatch", "squeue", "scontrol", "scancel")
GPUS = 2


def missing() -> str | None:
    """Why a cluster cannot start here, or None."""
    if os.geteuid() != 0:
        return "needs root (slurmd runs jobs as their user)"
    absent = [name for name in DAEMONS if shutil.which(name) is None]
    if absent:
        return f"{', '.join(absent)} not installed (apt-get install slurm-wlm munge)"
    return None


@dataclass
class Cluster:
    """A running cluster: its folder, config and the daemons' processes."""

    root: Path
    proctrack: str
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def env(self) -> dict[str, str]:
        """The environment for sbatch, squeue, scontrol and scancel."""
        return {**os.environ, "SLURM_CONF": str(self.root / "slurm.conf")}

    def run(self, *argv: str) -> str:
        """A Slurm client command's output; CalledProcessError (with its stderr) if it fails."""
        done = subprocess.run(argv, env=self.env, capture_output=True, text=True, timeout=60)
        if done.returncode:
            raise subprocess.CalledProcessError(done.returncode, argv, done.stdout, done.stderr)
        return done.stdout

    def logs(self) -> str:
        """The tail of every daemon's log, for a failing test's message."""
        out = []
        for name in ("munged", "slurmctld", "slurmd"):
            path = self.root / f"{name}.log"
            if path.exists():
                out.append(f"--- {name}.log\n" + "\n".join(path.read_text().splitlines()[-15:]))
        return "\n".join(out)


def _config(root: Path, proctrack: str) -> None:
    host = socket.gethostname()
    cpus = os.cpu_count() or 1
    devices = []
    for index in range(GPUS):
        device = root / f"fakegpu{index}"
        if not device.exists():
            os.mknod(device, 0o666 | 0o020000, os.makedev(1, 3))  # a char device like /dev/null
        devices.append(str(device))
    (root / "gres.conf").write_text(
        "".join(f"NodeName={host} Name=gpu File={d}\n" for d in devices)
    )
    (root / "cgroup.conf").write_text("CgroupPlugin=cgroup/v1\nCgroupAutomount=yes\n")
    (root / "slurm.conf").write_text(
        f"""ClusterName=ci
SlurmctldHost={host}
AuthType=auth/munge
AuthInfo=socket={root}/munge.socket,cred_expire=10
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
SlurmctldPort={_port()}
SlurmdPort={_port()}
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool
SlurmctldPidFile={root}/slurmctld.pid
SlurmdPidFile={root}/slurmd.pid
SlurmctldLogFile={root}/slurmctld.log
SlurmdLogFile={root}/slurmd.log
ProctrackType=proctrack/{proctrack}
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
MpiDefault=none
ReturnToService=2
KillWait=30
SchedulerParameters=sched_interval=1
MinJobAge=300
NodeName={host} CPUs={cpus} Gres=gpu:{GPUS} State=UNKNOWN
PartitionName=ci Nodes={host} Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
"""
    )


def _port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _start(cluster: Cluster, argv: list[str], log: str) -> None:
    handle = (cluster.root / log).open("ab")
    cluster.procs.append(
        subprocess.Popen(argv, stdout=handle, stderr=subprocess.STDOUT, env=cluster.env)
    )


def _wait_idle(cluster: Cluster, seconds: float) -> None:
    end = time.monotonic() + seconds
    state = ""
    while time.monotonic() < end:
        with contextlib.suppress(subprocess.SubprocessError):
            state = cluster.run("sinfo", "-h", "-o", "%t").strip()
            if state == "idle":
                return
        for proc in cluster.procs:
            if proc.poll() is not None:
                raise RuntimeError(f"{proc.args[0]} exited {proc.returncode}\n{cluster.logs()}")
        time.sleep(0.5)
    raise RuntimeError(f"the node is {state!r}, not idle, after {seconds} s\n{cluster.logs()}")


def stop(cluster: Cluster) -> None:
    """Cancel what still runs (its slurmstepd would outlive slurmd), then stop the daemons this
    cluster started, by PID, last started first."""
    if len(cluster.procs) == 3 and all(p.poll() is None for p in cluster.procs):
        with contextlib.suppress(subprocess.SubprocessError, OSError):
            cluster.run("scancel", "--full", "--partition=ci")
            end = time.monotonic() + 40
            while cluster.run("squeue", "-h", "-o", "%i").strip() and time.monotonic() < end:
                time.sleep(1)
    for proc in reversed(cluster.procs):
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@contextlib.contextmanager
def slurm_cluster(root: Path, proctrack: str) -> Iterator[Cluster]:
    """A cluster in `root` with the given proctrack plugin (cgroup, linuxproc, pgid)."""
    for name in ("state", "spool"):
        (root / name).mkdir(parents=True, exist_ok=True)
    _config(root, proctrack)
    key = root / "munge.key"
    if not key.exists():
        key.write_bytes(os.urandom(1024))
        key.chmod(0o600)
    cluster = Cluster(root, proctrack)
    try:
        _start(cluster, ["munged", "-F", "--force", f"--socket={root}/munge.socket",
                         f"--key-file={key}", f"--pid-file={root}/munged.pid",
                         f"--seed-file={root}/munged.seed", f"--log-file={root}/munged.log"],
               "munged.out")  # fmt: skip
        conf = str(root / "slurm.conf")
        time.sleep(0.5)
        _start(cluster, ["slurmctld", "-D", "-i", "-f", conf], "slurmctld.out")
        _start(cluster, ["slurmd", "-D", "-f", conf], "slurmd.out")
        _wait_idle(cluster, 60)
        yield cluster
    finally:
        stop(cluster)


if __name__ == "__main__":
    folder = Path(sys.argv[2] if len(sys.argv) > 2 else "/tmp/slurm-ci")
    with slurm_cluster(folder, sys.argv[1] if len(sys.argv) > 1 else "cgroup") as running:
        print(f"SLURM_CONF={running.root / 'slurm.conf'}", flush=True)
        input("running; Enter stops it\n")
