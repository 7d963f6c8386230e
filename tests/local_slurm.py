"""A real single-machine Slurm cluster for the tests: munged, MariaDB, slurmdbd, slurmctld, slurmd.

Everything lives in one state directory (configs, keys, spool, logs, the accounting
database); nothing under ``/etc`` is touched. Client commands find the cluster through
``SLURM_CONF``, which :meth:`LocalSlurm.env` returns. The daemons are Debian's
(``apt-get install slurmctld slurmd slurm-client slurmdbd munge mariadb-server``, see
``.ci/run``). Accounting (slurmdbd) is part of it because submitit, like most cluster
tooling, reads job states with ``sacct``.

Memory limits are enforced by the cgroup-v1 memory controller (``ConstrainRAMSpace``), so
a job over ``--mem`` is killed by the kernel and ends ``OUT_OF_MEMORY``, as on a cluster.

Example (from the repository root, as root)::

    python tests/local_slurm.py start /tmp/perfzoo-slurm   # prints: export SLURM_CONF=...
    SLURM_CONF=/tmp/perfzoo-slurm/slurm.conf sinfo
    python tests/local_slurm.py stop /tmp/perfzoo-slurm
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from harness.launchers import free_port

DAEMONS = ("munged", "mariadbd", "slurmdbd", "slurmctld", "slurmd")
PACKAGES = "slurmctld slurmd slurm-client slurmdbd munge mariadb-server"
CLUSTER = "perfzoo"
MUNGE_SOCKET = Path("/run/munge/munge.socket.2")
PARTITION = "debug"
URGENT = "urgent"  # a higher-tier partition: its jobs preempt (cancel) those of PARTITION


class SlurmSetupError(RuntimeError):
    """The local cluster could not be started; the message says which daemon and its log."""


def missing_binaries() -> list[str]:
    """Daemons and clients the cluster needs that are not on ``PATH`` (or in ``/usr/sbin``)."""
    need = ["munged", "mariadb-install-db", "mariadbd", "slurmdbd", "slurmctld", "slurmd", "sbatch", "sacct"]
    return [b for b in need if _which(b) is None]


def _which(name: str):
    return shutil.which(name, path=os.environ.get("PATH", "") + os.pathsep + "/usr/sbin")


def _bin(name: str) -> str:
    return _which(name) or name


class LocalSlurm:
    """Configure, start and stop the daemons of a one-node cluster in ``root``.

    The node is this machine (``hostname -s``) with all its cores and most of its memory, in
    partition ``debug`` (the default) and ``urgent``, whose jobs preempt ``debug`` jobs
    (``PreemptMode=CANCEL``). ``KillWait`` and ``OverTimeLimit`` are short so that time
    limits act within a minute or so; ``JobRequeue=0``, so a failed node's jobs end
    ``NODE_FAIL`` instead of being requeued.
    """

    def __init__(self, root: str | Path):
        self.root = Path(root).resolve()
        self.conf = self.root / "slurm.conf"
        self.node = socket.gethostname().split(".")[0]

    def env(self) -> dict[str, str]:
        """What a client (sbatch, sacct, submitit) needs in its environment."""
        return {"SLURM_CONF": str(self.conf)}

    # configuration ---------------------------------------------------------------------

    def _write_configs(self) -> None:
        r = self.root
        for d in ("state", "spool", "log", "run", "mysql"):
            (r / d).mkdir(parents=True, exist_ok=True)
        cpus = os.cpu_count() or 1
        mem_mib = int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**20 * 0.9)
        self.ports = {"ctld": free_port(), "slurmd": free_port(), "dbd": free_port(), "mysql": free_port()}
        self.conf.write_text(f"""\
ClusterName={CLUSTER}
SlurmctldHost={self.node}(127.0.0.1)
SlurmctldPort={self.ports['ctld']}
SlurmdPort={self.ports['slurmd']}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation={r / 'state'}
SlurmdSpoolDir={r / 'spool'}
SlurmctldPidFile={r / 'run' / 'slurmctld.pid'}
SlurmdPidFile={r / 'run' / 'slurmd.pid'}
SlurmctldLogFile={r / 'log' / 'slurmctld.log'}
SlurmdLogFile={r / 'log' / 'slurmd.log'}
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/cgroup
TaskPlugin=task/cgroup
JobAcctGatherType=jobacct_gather/cgroup
JobAcctGatherFrequency=1
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort={self.ports['dbd']}
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
SchedulerType=sched/backfill
MpiDefault=none
ReturnToService=2
KillWait=2
OverTimeLimit=0
MinJobAge=600
InactiveLimit=0
MessageTimeout=20
JobRequeue=0
PreemptType=preempt/partition_prio
PreemptMode=CANCEL
NodeName={self.node} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory={mem_mib} State=UNKNOWN
PartitionName={PARTITION} Nodes=ALL Default=YES MaxTime=INFINITE State=UP PriorityTier=1
PartitionName={URGENT} Nodes=ALL MaxTime=INFINITE State=UP PriorityTier=2
""")
        (r / "cgroup.conf").write_text("CgroupPlugin=cgroup/v1\nConstrainCores=yes\nConstrainRAMSpace=yes\n"
                                        "ConstrainSwapSpace=yes\nAllowedSwapSpace=0\n")
        dbd = r / "slurmdbd.conf"
        dbd.write_text(f"""\
AuthType=auth/munge
DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort={self.ports['dbd']}
SlurmUser=root
LogFile={r / 'log' / 'slurmdbd.log'}
PidFile={r / 'run' / 'slurmdbd.pid'}
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort={self.ports['mysql']}
StorageUser=slurm
StoragePass=perfzoo
StorageLoc=slurm_acct_db
""")
        dbd.chmod(0o600)

    # daemons ---------------------------------------------------------------------------

    def _spawn(self, name: str, argv: list[str]) -> None:
        log = open(self.root / "log" / f"{name}.out", "ab")
        env = dict(os.environ, **self.env())
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env=env, start_new_session=True)
        (self.root / "run" / f"{name}.spawned").write_text(str(proc.pid))

    def _wait(self, what: str, check, log: str, timeout_s: float = 60.0) -> None:
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout_s:
            if check():
                return
            time.sleep(0.3)
        text = ""
        p = self.root / "log" / log
        if p.exists():
            text = "\n".join(p.read_text(errors="replace").splitlines()[-15:])
        raise SlurmSetupError(f"{what} did not come up within {timeout_s:.0f} s; last lines of {p}:\n{text}")

    def _run(self, argv: list[str], **kw) -> subprocess.CompletedProcess:
        return subprocess.run(argv, capture_output=True, text=True, env=dict(os.environ, **self.env()), **kw)

    def start(self) -> "LocalSlurm":
        """Write the configs and start every daemon; returns when the node is idle."""
        missing = missing_binaries()
        if missing:
            raise SlurmSetupError(f"missing {', '.join(missing)}: install Debian's {PACKAGES} "
                                  "(apt-get install -y ...; .ci/run does)")
        self._write_configs()
        r = self.root
        if not _munge_works():  # Slurm's clients talk to munged at its default socket
            key = r / "run" / "munge.key"
            key.write_bytes(os.urandom(1024))
            key.chmod(0o600)
            MUNGE_SOCKET.parent.mkdir(parents=True, exist_ok=True)
            self._spawn("munged", [_bin("munged"), "-F", "--force", f"--socket={MUNGE_SOCKET}",
                                   f"--key-file={key}", f"--pid-file={r / 'run' / 'munged.pid'}",
                                   f"--log-file={r / 'log' / 'munged.log'}", f"--seed-file={r / 'run' / 'munge.seed'}"])
            self._wait("munged", _munge_works, "munged.log", 20)

        mysql, sock = r / "mysql", r / "run" / "mysql.sock"
        if not (mysql / "mysql").exists():
            done = self._run([_bin("mariadb-install-db"), f"--datadir={mysql}", "--user=root",
                              "--auth-root-authentication-method=socket", "--skip-test-db"])
            if done.returncode:
                raise SlurmSetupError(f"mariadb-install-db failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
        self._spawn("mariadbd", [_bin("mariadbd"), "--no-defaults", f"--datadir={mysql}", "--user=root",
                                 f"--socket={sock}", "--bind-address=127.0.0.1", f"--port={self.ports['mysql']}",
                                 f"--pid-file={r / 'run' / 'mariadbd.pid'}", f"--log-error={r / 'log' / 'mariadbd.log'}",
                                 "--innodb-buffer-pool-size=64M", "--skip-log-bin"])
        sql = ("CREATE DATABASE IF NOT EXISTS slurm_acct_db; "
               "CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY 'perfzoo'; "
               "GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1'; FLUSH PRIVILEGES;")
        self._wait("mariadbd", lambda: sock.exists() and self._run(
            ["mariadb", f"--socket={sock}", "-uroot", "-e", sql]).returncode == 0, "mariadbd.log", 60)

        self._spawn("slurmdbd", [_bin("slurmdbd"), "-D"])
        self._wait("slurmdbd", lambda: self._run(["sacctmgr", "-n", "show", "cluster"]).returncode == 0,
                   "slurmdbd.log", 60)
        self._run(["sacctmgr", "-i", "add", "cluster", CLUSTER])
        self._spawn("slurmctld", [_bin("slurmctld"), "-D", "-i"])
        self._wait("slurmctld", lambda: self._run(["scontrol", "ping"]).returncode == 0, "slurmctld.log", 60)
        self._spawn("slurmd", [_bin("slurmd"), "-D", "-N", self.node])
        self._wait("slurmd (node idle)", lambda: "idle" in self._run(
            ["sinfo", "-h", "-N", "-o", "%T"]).stdout, "slurmd.log", 60)
        return self

    def stop(self) -> None:
        """Cancel every job, then stop the daemons in reverse order (SIGTERM, then SIGKILL)."""
        if (self.root / "run" / "slurmctld.spawned").exists():
            try:
                self._run(["scancel", "--full", "-u", "root"], timeout=20)
            except subprocess.TimeoutExpired:
                pass
        for name in reversed(DAEMONS):
            f = self.root / "run" / f"{name}.spawned"
            if not f.exists():
                continue
            pid = int(f.read_text())
            for sig, wait_s in ((signal.SIGTERM, 15.0), (signal.SIGKILL, 5.0)):
                try:
                    os.killpg(pid, sig)
                except ProcessLookupError:
                    break
                t0 = time.monotonic()
                while time.monotonic() - t0 < wait_s and _alive(pid):
                    time.sleep(0.2)
                if not _alive(pid):
                    break
            f.unlink()


def _munge_works() -> bool:
    try:
        cred = subprocess.run(["munge", "-n"], capture_output=True, timeout=5)
        return cred.returncode == 0 and subprocess.run(["unmunge"], input=cred.stdout, capture_output=True,
                                                       timeout=5).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def _alive(pid: int) -> bool:
    try:
        if os.waitpid(pid, os.WNOHANG)[0] == pid:  # our own child, now reaped
            return False
    except ChildProcessError:
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie child of ours counts as gone
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("start", "stop"):
        sys.exit("usage: python tests/local_slurm.py start|stop STATE_DIR")
    cluster = LocalSlurm(sys.argv[2])
    if sys.argv[1] == "start":
        cluster.start()
        print(f"export SLURM_CONF={cluster.conf}")
    else:
        cluster.stop()
