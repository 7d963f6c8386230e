"""Launchers: how jobs get onto ranks. Workloads and the worker never know which one ran them.

A :class:`Launcher` takes :class:`~harness.jobs.JobSpec` s and yields
:class:`~harness.jobs.JobOutcome` s. Both built-in launchers use the same protocol: a fresh
job directory holding ``job.json``, rank reports under ``results/``, and the worker
(:mod:`harness.worker`) as the process entry point.

- :class:`LocalTorchrunLauncher`: one fresh ``torchrun --standalone`` process group per job
  on this machine (gloo on CPU, NCCL on GPU). A job past its wall-clock limit has its whole
  process tree killed (SIGTERM, then SIGKILL after a grace period; torchrun starts each rank
  in its own session, so the tree is walked, not just the process group).
- :class:`InProcessBatchLauncher`: many world-size-1 jobs run one after another inside one
  worker process, which saves the interpreter, ``import torch`` and process-group start per
  job. Same failure handling: per-job timeouts kill the worker; after any job that did not end
  ``ok`` the worker exits and a fresh one takes the remaining jobs.

A cluster launcher subclasses :class:`Launcher`, starts :func:`torchrun_command` on its nodes
with its own rendezvous arguments and reuses :func:`harness.jobs.merge` on the reports:
:class:`harness.slurm.SlurmLauncher` does so for Slurm.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from abc import ABC, abstractmethod
from contextlib import ExitStack, contextmanager, nullcontext
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Iterable, Iterator, Optional

from harness.jobs import JobOutcome, JobSpec, merge, read_rank_reports, tail
from harness.memory import RLIMIT_MALLOC_ENV

KILL_GRACE_S = 3.0
POLL_S = 0.02


def _now() -> datetime:
    return datetime.now(timezone.utc)


def kill_tree(pid: int, grace_s: float = KILL_GRACE_S) -> None:
    """SIGTERM a process, its descendants and their process groups; SIGKILL what is left."""
    import psutil

    try:
        root = psutil.Process(pid)
        procs = [root] + root.children(recursive=True)
    except psutil.NoSuchProcess:
        return
    groups = set()
    for p in procs:
        try:
            groups.add(os.getpgid(p.pid))
        except (ProcessLookupError, OSError):
            pass
    groups.discard(os.getpgid(0))  # never signal our own group
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for g in groups:
            try:
                os.killpg(g, sig)
            except (ProcessLookupError, PermissionError, OSError):
                pass
        for p in procs:
            try:
                p.send_signal(sig)
            except psutil.NoSuchProcess:
                pass
        if sig == signal.SIGTERM:
            _, alive = psutil.wait_procs(procs, timeout=grace_s)
            if not alive:
                return
            procs = alive
    psutil.wait_procs(procs, timeout=grace_s)


def free_port() -> int:
    """A TCP port free on this host right now."""
    with socket.socket() as s:
        s.bind(("", 0))
        return s.getsockname()[1]


def worker_env(spec: JobSpec, extra: Optional[dict] = None) -> dict:
    """The environment for ``spec``'s ranks: quiet torchrun, on CPU one thread per rank, and for a
    job under an ``RLIMIT_DATA`` budget (:attr:`JobSpec.rlimit_budget`) :data:`RLIMIT_MALLOC_ENV`.

    One intra-op thread per CPU rank (unless ``OMP_NUM_THREADS`` is set) makes a CPU rank
    the analogue of one GPU: a 2-rank job uses 2 cores, a 1-rank job 1, and oversubscribed
    OpenMP spinning on a shared machine cannot wreck a measurement.
    """
    env = dict(os.environ)
    env.setdefault("PYTHONUNBUFFERED", "1")
    if spec.device == "cpu" and "OMP_NUM_THREADS" not in os.environ:
        env["OMP_NUM_THREADS"] = "1"
    env.setdefault("LOGLEVEL", "WARNING")
    env.setdefault("TORCH_NCCL_ASYNC_ERROR_HANDLING", "1")
    # the harness must import from this checkout even when run from elsewhere (the checkout, holding harness/)
    root = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    if spec.rlimit_budget:
        env.update(RLIMIT_MALLOC_ENV)
    env.update(extra or {})
    return env


def job_tmpdir(job_dir: Path) -> dict:
    """``TMPDIR`` inside the job's folder, which the launcher removes with it: torchrun's elastic agent
    makes a ``torchelastic_*`` folder in the temporary directory for every job and leaves it there."""
    tmp = job_dir / "tmp"
    tmp.mkdir(parents=True, exist_ok=True)
    return {"TMPDIR": str(tmp)}


def torchrun_command(job_file: Path, rendezvous: list[str]) -> list[str]:
    """``torchrun`` (as ``python -m torch.distributed.run``) running the worker on ``job_file``.

    ``rendezvous`` holds the launch arguments: ``["--standalone", "--nproc-per-node=2"]`` on
    one machine, or ``--nnodes/--node-rank/--master-addr/--master-port`` across nodes.
    """
    return [sys.executable, "-m", "torch.distributed.run", *rendezvous, "--monitor-interval=0.1",
            f"--log-dir={job_file.parent / 'torchelastic'}", "-m", "harness.worker", str(job_file)]


def _started(pid: int) -> Optional[float]:
    """When process ``pid`` started (None: no such process): what tells it from a later one given its pid."""
    import psutil

    try:
        return psutil.Process(pid).create_time()
    except psutil.Error:
        return None


class InFlight:
    """The job process groups a launcher has running, one marker each in ``folder``
    (``<pgid>.json``: the group, its leader's start time, the job's folder with its ``TMPDIR``, and
    the launching process), removed when the job ends. A launcher killed outright (``kill -9`` of
    ``collect``) leaves its markers: :meth:`end_orphans` at the next start ends those groups and
    removes their folders; a marker whose launcher still runs (another collect's) is left alone."""

    def __init__(self, folder: Path):
        self.folder = Path(folder)

    @contextmanager
    def held(self, pgid: int, *folders: Path) -> Iterator[None]:
        """A marker for the group ``pgid`` (a session leader's pid) and its job ``folders`` while the block runs."""
        self.folder.mkdir(parents=True, exist_ok=True)
        marker = self.folder / f"{pgid}.json"
        marker.write_text(json.dumps({"pgid": pgid, "started": _started(pgid), "folders": [str(f) for f in folders],
                                      "owner": os.getpid(), "owner_started": _started(os.getpid())}))
        try:
            yield
        finally:
            marker.unlink(missing_ok=True)
            try:
                self.folder.rmdir()  # none left running: no folder left behind
            except OSError:
                pass

    def end_orphans(self) -> list[str]:
        """End every group whose launcher is gone and remove its job folder; one line for each."""
        said = []
        for marker in sorted(self.folder.glob("*.json")) if self.folder.is_dir() else []:
            try:
                m = json.loads(marker.read_text())
            except (OSError, ValueError):  # a marker torn by the kill itself: nothing to end by it
                marker.unlink(missing_ok=True)
                continue
            if m["owner_started"] is not None and _started(m["owner"]) == m["owner_started"]:
                continue  # its launcher still runs: another collect's job
            leader = _started(m["pgid"])
            if leader is not None and leader == m["started"]:
                kill_tree(m["pgid"], grace_s=1.0)
            elif leader is None:  # the leader is gone; its group's members may not be (no pid reuse while they live)
                try:
                    os.killpg(m["pgid"], signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            for folder in m["folders"]:
                shutil.rmtree(folder, ignore_errors=True)
            marker.unlink(missing_ok=True)
            said.append(f"ended process group {m['pgid']}, the job an earlier launcher killed outright left running, "
                        f"and removed {', '.join(m['folders'])} (its TMPDIR with it)")
        return said


def run_process(argv: list[str], env: dict, log_path: Path, timeout_s: float,
                preexec: Optional[Callable[[], None]] = None, in_flight: Optional[InFlight] = None,
                job_dir: Optional[Path] = None) -> tuple[Optional[int], bool]:
    """Run ``argv`` (its output to ``log_path``) in a new session; ``(exit_code, timed_out)``.

    ``preexec`` runs in the child before it starts ``argv`` (e.g. to set a memory limit).
    Past ``timeout_s`` its whole process tree is killed (:func:`kill_tree`). Ctrl-C or SIGTERM
    of the caller kills the tree too and re-raises: nothing is left running. ``in_flight``: the
    session marked there while it runs, with ``job_dir`` (:class:`InFlight`), for a SIGKILL of the caller.
    """
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env=env, start_new_session=True, preexec_fn=preexec)
        with in_flight.held(proc.pid, job_dir or log_path.parent) if in_flight is not None else nullcontext():
            return _wait(proc, timeout_s)


def _wait(proc: subprocess.Popen, timeout_s: float) -> tuple[Optional[int], bool]:
    """:func:`run_process`'s wait: the exit code, or the tree killed past ``timeout_s`` or on an interrupt."""
    try:
        return proc.wait(timeout=timeout_s), False
    except subprocess.TimeoutExpired:
        kill_tree(proc.pid)
        try:
            return proc.wait(timeout=KILL_GRACE_S), True
        except subprocess.TimeoutExpired:
            return None, True
    except BaseException:
        kill_tree(proc.pid, grace_s=1.0)
        raise


class Launcher(ABC):
    """Runs jobs and says what happened to each. Subclasses implement :meth:`run`."""

    name = "launcher"
    in_flight: Optional[InFlight] = None  # where its jobs' process groups are marked while they run

    def __init__(self, workdir: Optional[str] = None, keep_dirs: bool = False):
        self.workdir = workdir
        self.keep_dirs = keep_dirs

    def _job_dir(self, spec: JobSpec) -> Path:
        d = Path(tempfile.mkdtemp(prefix=f"perfzoo-{spec.job_id[:8]}-", dir=self.workdir))
        (d / "results").mkdir()
        (d / "job.json").write_text(spec.to_json())
        return d

    def _cleanup(self, d: Path) -> None:
        if not self.keep_dirs:
            shutil.rmtree(d, ignore_errors=True)

    @abstractmethod
    def run(self, spec: JobSpec) -> JobOutcome:
        """Run one job to its end (ok, oom, timeout or failed); never raises for job failures."""

    def run_many(self, specs: Iterable[JobSpec]) -> Iterator[JobOutcome]:
        """Run jobs in order, yielding each outcome as soon as it is known."""
        for spec in specs:
            yield self.run(spec)


class LocalTorchrunLauncher(Launcher):
    """One fresh ``torchrun --standalone --nproc-per-node N`` per job on this machine."""

    name = "torchrun"

    def command(self, spec: JobSpec, job_file: Path) -> list[str]:
        return torchrun_command(job_file, ["--standalone", f"--nproc-per-node={spec.nproc}"])

    def run(self, spec: JobSpec) -> JobOutcome:
        d = self._job_dir(spec)
        log_path = d / "log.txt"
        started = _now()
        t0 = time.perf_counter()
        try:
            exit_code, timed_out = run_process(self.command(spec, d / "job.json"), worker_env(spec, job_tmpdir(d)),
                                               log_path, spec.timeout_s, in_flight=self.in_flight, job_dir=d)
        except BaseException:
            self._cleanup(d)
            raise
        wall = time.perf_counter() - t0
        log_tail = tail(log_path.read_text(errors="replace"))
        reports = read_rank_reports(d / "results")
        outcome = merge(spec, reports, exit_code=exit_code, timed_out=timed_out, log_tail=log_tail,
                        started_at=started, ended_at=_now(), wall_time_s=wall, launcher=self.name)
        self._cleanup(d)
        return outcome


class InProcessBatchLauncher(Launcher):
    """Runs world-size-1 jobs inside one long-lived worker process (see the module docstring).

    ``batch_size`` jobs are handed to a worker at a time; ``threads`` is the worker's torch
    thread count on CPU (default: ``OMP_NUM_THREADS`` if set, else 1, like a torchrun rank).
    """

    name = "inprocess"
    worker_flag = "--batch"
    world_size_1_only = True

    def __init__(self, workdir: Optional[str] = None, keep_dirs: bool = False, batch_size: int = 50,
                 threads: Optional[int] = None):
        super().__init__(workdir, keep_dirs)
        self.batch_size = batch_size
        self.threads = threads or int(os.environ.get("OMP_NUM_THREADS") or 1)
        self.worker_starts: list[float] = []  # seconds from spawn to 'ready', per worker started

    def run(self, spec: JobSpec) -> JobOutcome:
        return next(iter(self.run_many([spec])))

    def run_many(self, specs: Iterable[JobSpec]) -> Iterator[JobOutcome]:
        pending: list[JobSpec] = []
        for spec in specs:
            if self.world_size_1_only and spec.nproc != 1:
                raise ValueError(f"in-process mode runs world-size-1 jobs only; job {spec.job_id} "
                                 f"has nproc={spec.nproc} (use the torchrun launcher)")
            # a job under an RLIMIT_DATA budget gets a worker of its own: the worker's malloc is set at its
            # start, and the heap its ranks inherit must not depend on the jobs that ran before
            if pending and (spec.rlimit_budget or pending[0].rlimit_budget):
                yield from self._run_batch(pending)
                pending = []
            pending.append(spec)
            if len(pending) >= self.batch_size:
                yield from self._run_batch(pending)
                pending = []
        if pending:
            yield from self._run_batch(pending)

    def _run_batch(self, specs: list[JobSpec]) -> Iterator[JobOutcome]:
        remaining = [(s, self._job_dir(s)) for s in specs]
        while remaining:
            batch_dir = Path(tempfile.mkdtemp(prefix="perfzoo-batch-", dir=self.workdir))
            batch_file = batch_dir / "batch.json"
            device = remaining[0][0].device
            threads = self.threads if device == "cpu" and self.world_size_1_only else 0
            batch_file.write_text(json.dumps({"threads": threads,
                                              "jobs": [{"spec": json.loads(s.to_json()), "dir": str(d)}
                                                       for s, d in remaining]}))
            log_path = batch_dir / "log.txt"
            t_spawn = time.perf_counter()
            log = open(log_path, "wb")
            extra = {"OMP_NUM_THREADS": str(self.threads)} if self.world_size_1_only and device == "cpu" else {}
            proc = subprocess.Popen([sys.executable, "-m", "harness.worker", self.worker_flag, str(batch_file)],
                                    stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    env=worker_env(remaining[0][0], {**extra, **job_tmpdir(batch_dir)}),
                                    start_new_session=True)
            marked = ExitStack()  # its session marked while it runs, with the job folders it holds
            if self.in_flight is not None:
                marked.enter_context(self.in_flight.held(proc.pid, batch_dir, *(d for _, d in remaining)))
            ready_seen = False
            finished_here = 0
            try:
                while remaining:
                    spec, d = remaining[0]
                    if not ready_seen and batch_file.with_suffix(".ready").exists():
                        ready_seen = True
                        self.worker_starts.append(time.perf_counter() - t_spawn)
                    started = d / "started.json"
                    done = d / "done.json"
                    if done.exists():
                        yield self._finish(spec, d, started, done, exit_code=None, timed_out=False,
                                           log_path=log_path)
                        remaining.pop(0)
                        finished_here += 1
                        continue
                    if started.exists():
                        t_start = json.loads(started.read_text())["t"]
                        if time.time() - t_start > spec.timeout_s:
                            kill_tree(proc.pid)
                            proc.wait()
                            yield self._finish(spec, d, started, None, exit_code=proc.returncode,
                                               timed_out=True, log_path=log_path)
                            remaining.pop(0)
                            break  # start a fresh worker for the rest
                    code = proc.poll()
                    if code is not None:
                        if done.exists():
                            continue  # finished between the checks above
                        if started.exists() or finished_here == 0:
                            # the worker died in this job (or before it could run any job)
                            yield self._finish(spec, d, started, None, exit_code=code, timed_out=False,
                                               log_path=log_path)
                            remaining.pop(0)
                        break  # a fresh worker takes the rest
                    time.sleep(POLL_S)
            except BaseException:
                kill_tree(proc.pid, grace_s=1.0)
                for _, d in remaining:
                    self._cleanup(d)
                raise
            finally:
                if proc.poll() is None and not remaining:
                    proc.wait(timeout=30)
                log.close()
                shutil.rmtree(batch_dir, ignore_errors=True)
                marked.close()

    def _finish(self, spec: JobSpec, d: Path, started: Path, done: Optional[Path], exit_code,
                timed_out: bool, log_path: Path) -> JobOutcome:
        t_end = time.time()
        t_start = json.loads(started.read_text())["t"] if started.exists() else t_end
        done_info = json.loads(done.read_text()) if done is not None else {}
        wall = done_info.get("wall_s", t_end - t_start)
        if exit_code is None:
            exit_code = done_info.get("exit_code")
        log_tail = tail(log_path.read_text(errors="replace")) if log_path.exists() else ""
        outcome = merge(spec, read_rank_reports(d / "results"), exit_code=exit_code, timed_out=timed_out,
                        log_tail=log_tail, started_at=datetime.fromtimestamp(t_start, timezone.utc),
                        ended_at=datetime.fromtimestamp(t_start + wall, timezone.utc) if done else _now(),
                        wall_time_s=wall, launcher=self.name)
        if self.worker_starts:
            outcome.annotations["batch_worker_start_s"] = round(self.worker_starts[-1], 4)
        self._cleanup(d)
        return outcome


class WarmTorchrunLauncher(InProcessBatchLauncher):
    """A fresh torchrun-standalone process group per job, ranks forked from a warm worker.

    One worker process (``python -m harness.worker --batch-torchrun``) imports torch, FSDP
    and the workloads once, then runs each job through ``torch.distributed.launcher.api.
    elastic_launch`` -- the function behind ``torchrun`` -- with the ``--standalone``
    settings (c10d rendezvous on a free localhost port, a new run id, no restarts) and
    ``start_method='fork'``: every job gets new rank processes, a new rendezvous and a new
    process group, but the ranks skip the interpreter start and the imports. Timeouts kill
    the worker and everything under it; a fresh worker takes the remaining jobs. Rank
    failures (oom, crash) are reported by the ranks and do not touch the worker.
    """

    name = "torchrun-warm"
    worker_flag = "--batch-torchrun"
    world_size_1_only = False


LAUNCHERS = {"torchrun": LocalTorchrunLauncher, "torchrun-warm": WarmTorchrunLauncher,
             "inprocess": InProcessBatchLauncher}
