"""The Slurm launcher: profiling jobs as Slurm job arrays, submitted with submitit.

How a job runs
--------------
:class:`SlurmLauncher` writes each job's ``job.json`` into a job directory under
``folder`` (which must be on a file system the compute nodes share), and submits the jobs
of one world size as one job array through :class:`submitit.SlurmExecutor`. Every Slurm
task of an array element is one torchrun *agent* (:func:`run_agent`): normally one task
per node, each starting ``nproc / (nodes * tasks_per_node)`` ranks. Agent 0 picks the
rendezvous port and publishes ``host:port`` in the job directory; the others read it and
join (``torchrun --nnodes --node-rank --master-addr --master-port``). The ranks are the
same :mod:`harness.worker` as on one machine and write the same rank reports, so
:func:`harness.jobs.merge` decides the job's status as usual (a job of the command workload
runs the user's command as each agent, with ``{nnodes} {node_rank} {master_addr}
{master_port}`` filled in, and :func:`harness.command.outcome_of` decides); then the Slurm state, read
with ``sacct`` by submitit's watcher, has the last word (:data:`SLURM_STATES`).

Resume
------
Before an array is submitted, a ``submitting`` line (the job ids and a unique Slurm job
name) is fsynced to ``slurm-jobs.jsonl`` in the record store; after ``sbatch`` answers, a
``submitted`` line maps each job id to its Slurm id. A restarted collect reads that file,
re-attaches to the jobs still queued or running and waits for them. If it was killed
between the two lines it finds the array by its name with ``sacct``; nothing is submitted
twice and no submitted job is forgotten. Ctrl-C (or SIGTERM) of the collect stops the
waiting and leaves the jobs to Slurm.

What every array asks Slurm for (partition, nodes, time, ...) is a
:class:`harness.sbatch.SlurmOptions`, the flags that set it declared there once.

Python calls
------------
:func:`run_calls` submits work that is a Python function of picklable arguments (the
benchmark's fits, ``python -m perfzoo.bench --launcher slurm``) as one array, with the same
options, and yields each element's return value as it ends.

Example::

    opts = SlurmOptions(partition="gpu", nodes=2, gpus_per_node=8, time_min=20)
    launcher = SlurmLauncher(opts, folder="runs/fsdp/slurm", ledger="runs/fsdp/slurm-jobs.jsonl")
    for outcome in launcher.run_many(specs):
        ...
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Optional, Sequence

from harness.command import harness_values, outcome_of as command_outcome, run_command
from harness.environment import capture_hardware
from harness.jobs import JobOutcome, JobSpec, merge, read_rank_reports, tail, write_json_atomic
from harness.launchers import Launcher, free_port, job_tmpdir, run_process, torchrun_command, worker_env
from harness.sbatch import NO_OP_SIGNAL, SlurmOptions
from perfzoo.records.store import append_line

JOB_NAME_PREFIX = "perfzoo-"
RENDEZVOUS_WAIT_S = 300.0

# final Slurm state -> (record status, failure kind); None: the rank reports decide
SLURM_STATES: dict[str, Optional[tuple[str, str]]] = {
    "COMPLETED": None,
    "FAILED": None,
    "OUT_OF_MEMORY": ("oom", "oom"),
    "TIMEOUT": ("timeout", "timeout"),
    "DEADLINE": ("timeout", "timeout"),
    "NODE_FAIL": ("failed", "node_fail"),
    "PREEMPTED": ("failed", "preempted"),
    "CANCELLED": ("failed", "cancelled"),
    "BOOT_FAIL": ("failed", "boot_fail"),
}


class SlurmError(RuntimeError):
    """Slurm refused or could not be asked (the message holds what the command said)."""


def _now() -> datetime:
    return datetime.now(timezone.utc)


# on the compute node ---------------------------------------------------------------------

def run_agent(job_dir: str) -> dict:
    """One torchrun agent of a job (one per Slurm task); submitit runs it on the node.

    Writes ``agent<k>.json`` (exit code, timing, host) into the job directory and returns
    the same dict; agent 0 also writes ``hardware.json`` and the rendezvous file.
    """
    import submitit

    signal.signal(signal.SIGUSR2, signal.SIG_IGN)  # no checkpoint/requeue: see executor_parameters
    env = submitit.JobEnvironment()
    d = Path(job_dir)
    spec = JobSpec.from_dict(json.loads((d / "job.json").read_text()))
    agent, n_agents = env.global_rank, env.num_tasks
    rdzv = d / f"rendezvous-{os.environ.get('SLURM_JOB_ID', env.job_id)}.json"
    if agent == 0:
        write_json_atomic(d / "hardware.json", capture_hardware(spec.device, spec.nproc, nodes=env.num_nodes))
        host = socket.gethostname() if n_agents > 1 else "127.0.0.1"
        write_json_atomic(rdzv, {"host": host, "port": free_port()})
    t0 = time.monotonic()
    while not rdzv.exists():
        if time.monotonic() - t0 > RENDEZVOUS_WAIT_S:
            raise SlurmError(f"agent {agent}: no rendezvous file {rdzv} after {RENDEZVOUS_WAIT_S:g} s")
        time.sleep(0.2)
    where = json.loads(rdzv.read_text())
    launch = [f"--nnodes={n_agents}", f"--node-rank={agent}", f"--nproc-per-node={spec.nproc // n_agents}",
              f"--master-addr={where['host']}", f"--master-port={where['port']}"]
    started = _now()
    if spec.command is not None:  # the command workload: the user's command is this node's agent
        values = harness_values(spec, d, nnodes=n_agents, node_rank=agent, master_addr=where["host"],
                                master_port=where["port"])
        code, timed_out, _ = run_command(spec, d, values, d / f"log-agent{agent}.txt")
    else:
        code, timed_out = run_process(torchrun_command(d / "job.json", launch),
                                      worker_env(spec, job_tmpdir(d / f"tmp-agent{agent}")), d / f"log-agent{agent}.txt",
                                      spec.timeout_s)
    ended = _now()
    info = {"agent": agent, "host": socket.gethostname(), "exit_code": code, "timed_out": timed_out,
            "started_at": started.isoformat(), "ended_at": ended.isoformat(),
            "wall_s": (ended - started).total_seconds()}
    write_json_atomic(d / f"agent{agent}.json", info)
    return info


# on the submitting machine -----------------------------------------------------------------

def outcome_of(spec: JobSpec, job_dir: Path, slurm_id: str, facts: dict) -> JobOutcome:
    """The outcome of a finished Slurm job: rank reports merged as usual, then the Slurm state.

    ``facts`` is :func:`slurm_facts` of the job: ``state`` (sacct's, ``CANCELLED by 0``
    included), ``steps``, ``nodelist`` and ``start``/``end`` (used where no agent said when
    it ran: a job killed by Slurm).
    """
    agents = [json.loads(p.read_text()) for p in sorted(job_dir.glob("agent*.json"))]
    logs = "\n".join(p.read_text(errors="replace") for p in sorted(job_dir.glob("log-agent*.txt")))
    codes = [a["exit_code"] for a in agents]
    exit_code = next((c for c in codes if c not in (0, None)), codes[0] if codes else None)
    started = min((datetime.fromisoformat(a["started_at"]) for a in agents), default=facts.get("start") or _now())
    ended = max((datetime.fromisoformat(a["ended_at"]) for a in agents), default=facts.get("end") or _now())
    wall = max((a["wall_s"] for a in agents), default=(ended - started).total_seconds())
    timed_out = any(a["timed_out"] for a in agents)
    if spec.command is not None:
        outcome = command_outcome(spec, job_dir, logs, exit_code=exit_code, timed_out=timed_out, started_at=started,
                                  ended_at=ended, wall_time_s=wall, launcher="slurm")
    else:
        outcome = merge(spec, read_rank_reports(job_dir / "results"), exit_code=exit_code, timed_out=timed_out,
                        log_tail=tail(logs), started_at=started, ended_at=ended, wall_time_s=wall, launcher="slurm")
    state = facts["state"]
    word = state.split()[0] if state else "UNKNOWN"
    forced = SLURM_STATES.get(word)
    if forced is None and word == "FAILED" and outcome.status == "ok":
        forced = ("failed", "crash")
    if forced is not None and not (forced[0] == "failed" and outcome.status == "oom"):
        status, kind = forced
        why = f"Slurm job {slurm_id} ended {state}"
        detail = (outcome.failure or {}).get("message") or logs
        outcome.status = status
        outcome.failure = {"kind": kind, "rank": (outcome.failure or {}).get("rank"), "exit_code": exit_code,
                           "message": tail(f"{why}\n{detail}"),
                           "memory": (outcome.failure or {}).get("memory") or {}}
    outcome.annotations.update(slurm_job_id=slurm_id, slurm_state=state, slurm_steps=facts.get("steps", ""),
                               slurm_nodelist=facts.get("nodelist") or None)
    hw = job_dir / "hardware.json"
    outcome.hardware = json.loads(hw.read_text()) if hw.exists() else {}
    return outcome


class SubmissionLedger:
    """``slurm-jobs.jsonl``: which job ids went to Slurm under which Slurm ids (append-only).

    Lines: ``{"event": "submitting", "batch", "name", "folder", "jobs": {job_id: job_dir}}``,
    ``{"event": "submitted", "batch", "slurm": {job_id: slurm_id}}`` and
    ``{"event": "abandoned", "batch", "why"}``. A torn last line (a kill mid-write) is skipped.
    """

    def __init__(self, path: str | Path):
        self.path = Path(path)

    def append(self, event: str, **fields) -> None:
        append_line(self.path, json.dumps({"event": event, "at": _now().isoformat(), **fields}))

    def batches(self) -> dict[str, dict]:
        """Every batch by its id, with its ``submitting``, ``submitted`` and ``abandoned`` lines merged."""
        out: dict[str, dict] = {}
        if not self.path.exists():
            return out
        for line in self.path.read_text().splitlines():
            try:
                entry = json.loads(line)
            except json.JSONDecodeError:
                continue  # a torn last line: its batch is recovered by name
            out.setdefault(entry["batch"], {}).setdefault(entry["event"], entry)
        return out


def _sacct(args: list[str]) -> list[list[str]]:
    """Rows of ``sacct -n -P ARGS`` (a SlurmError says what sacct said if it failed)."""
    done = subprocess.run(["sacct", "-n", "-P", *args], capture_output=True, text=True)
    if done.returncode:
        raise SlurmError(f"sacct {' '.join(args)} failed: {done.stderr.strip()}")
    return [line.split("|") for line in done.stdout.splitlines() if line.strip()]


def _sacct_time(text: str) -> Optional[datetime]:
    """A sacct timestamp (the cluster's local time) as an aware datetime; None for Unknown/None."""
    try:
        return datetime.fromisoformat(text).astimezone()
    except ValueError:
        return None


def slurm_facts(slurm_id: str, job_state: str) -> dict:
    """What sacct says of a finished job: ``state``, ``steps``, ``nodelist``, ``start``, ``end``.

    ``state`` is ``OUT_OF_MEMORY`` if the kernel killed a process of any step (Slurm then often
    marks the job itself only ``FAILED``), else the job's own state (``job_state``, the
    watcher's, if sacct has no row of the job); ``steps`` lists every step's state, e.g.
    ``1.batch=FAILED 1.0=OUT_OF_MEMORY``.
    """
    rows = _sacct(["-j", slurm_id, "-o", "JobID,State,NodeList,Start,End"])
    job = next((r for r in rows if r[0] == slurm_id), None)
    steps = [r for r in rows if r[0].startswith(slurm_id + ".")]
    state = job[1] if job else job_state
    if any(r[1].startswith("OUT_OF_MEMORY") for r in steps):
        state = "OUT_OF_MEMORY"
    return {"state": state, "steps": " ".join(f"{r[0]}={r[1]}" for r in steps),
            "nodelist": job[2] if job else None, "start": _sacct_time(job[3]) if job else None,
            "end": _sacct_time(job[4]) if job else None}


def _ids_by_name(name: str) -> list[str]:
    """The Slurm job ids (e.g. ``123_[0-3]`` or ``123_0``) of jobs named ``name``: squeue first
    (a job just submitted may not have reached the accounting database yet), then sacct."""
    queued = subprocess.run(["squeue", "-h", "--states=all", "--name", name, "-o", "%i"],
                            capture_output=True, text=True)
    ids = queued.stdout.split() if queued.returncode == 0 else []
    return ids or [r[0] for r in _sacct(["-X", "-S", "2000-01-01", "--name", name, "-o", "JobID"])]


def run_calls(fn: Callable[[Any], Any], items: Sequence[Any], options: SlurmOptions, folder: str | Path,
              time_min: int = 60) -> Iterator[tuple[int, Any, Optional[str]]]:
    """``fn(item)`` for each of ``items`` as one element of one Slurm job array, submitted with
    submitit like the profiling jobs (``options``: the same sbatch options, one core per element
    unless ``cpus_per_task`` says more, ``time_min`` unless ``options.time_min`` is set). Yields
    ``(position, result, None)`` as each element ends, or ``(position, None, why)`` where it ended
    without a result (Slurm killed it, or ``fn`` raised): work that is a Python function of
    picklable arguments, such as the benchmark's fits (:mod:`perfzoo.evaluation.runner`)."""
    import submitit

    missing = [c for c in ("sbatch", "sacct") if shutil.which(c) is None]
    if items and missing:
        raise SlurmError(f"{', '.join(missing)} not found: run --launcher slurm on a Slurm login node, "
                         "where Slurm's commands are on PATH")
    if not items:
        return
    executor = submitit.SlurmExecutor(folder=Path(folder).resolve(), python=sys.executable)
    params = {"job_name": JOB_NAME_PREFIX + uuid.uuid4().hex[:12], "time": options.time_min or time_min,
              "cpus_per_task": options.cpus_per_task or 1, "array_parallelism": options.array_parallelism,
              "stderr_to_stdout": True, "additional_parameters": {"signal": f"{NO_OP_SIGNAL}@60", **options.extra}}
    for key in ("partition", "account", "qos", "constraint"):
        if getattr(options, key) is not None:
            params[key] = getattr(options, key)
    if options.mem_gb is not None:
        params["mem"] = f"{int(options.mem_gb * 1024)}MB"
    executor.update_parameters(**params)
    try:
        with executor.batch():
            jobs = [executor.submit(fn, item) for item in items]
    except Exception as exc:  # sbatch said no: nothing was queued
        said = [line for line in str(exc).splitlines() if line.strip()]
        raise SlurmError(f"sbatch refused the array: {said[-1] if said else exc}") from exc
    waiting = dict(enumerate(jobs))
    while waiting:
        for i, job in list(waiting.items()):
            if not job.done():
                continue
            del waiting[i]
            try:
                yield i, job.result(), None
            except Exception as exc:  # submitit's: the job failed, timed out, ran out of memory or was cancelled
                yield i, None, f"Slurm job {job.job_id} ended {job.state}: {' '.join(str(exc).split())[-300:]}"
        if waiting:
            time.sleep(options.poll_s)


class SlurmLauncher(Launcher):
    """Runs jobs as Slurm job arrays and yields their outcomes as they end (module docstring)."""

    name = "slurm"

    def __init__(self, options: SlurmOptions, folder: str | Path, ledger: str | Path):
        super().__init__()
        self.options = options
        self.folder = Path(folder).resolve()
        self.ledger = SubmissionLedger(ledger)
        self.reattached = 0  # jobs found queued, running or finished from an earlier run

    def run(self, spec: JobSpec) -> JobOutcome:
        return next(iter(self.run_many([spec])))

    def run_many(self, specs: Iterable[JobSpec]) -> Iterator[JobOutcome]:
        specs = list(specs)
        for spec in specs:
            self.options.check(spec.nproc, spec.device)
        missing = [c for c in ("sbatch", "sacct", "scancel") if shutil.which(c) is None]
        if specs and missing:
            raise SlurmError(f"{', '.join(missing)} not found: run --launcher slurm on a Slurm login node, "
                             "where Slurm's commands are on PATH")
        known = self._recover()
        waiting: dict[str, tuple[JobSpec, Path, str, str]] = {}
        new: dict[int, list[JobSpec]] = {}
        for spec in specs:
            if spec.job_id in known:
                waiting[spec.job_id] = (spec, *known[spec.job_id])
                self.reattached += 1
            else:
                new.setdefault(spec.nproc, []).append(spec)
        for group in new.values():
            for spec, *where in self._submit(group):
                waiting[spec.job_id] = (spec, *where)
        yield from self._wait(waiting)

    def _recover(self) -> dict[str, tuple[Path, str, str]]:
        """``{job_id: (job_dir, slurm_id, submitted_at)}`` of every job submitted before (*Resume*)."""
        known: dict[str, tuple[Path, str, str]] = {}
        for batch, lines in self.ledger.batches().items():
            if "abandoned" in lines or "submitting" not in lines:
                continue
            intent = lines["submitting"]
            mapping = (lines.get("submitted") or {}).get("slurm")
            if mapping is None:
                mapping = self._find_by_name(batch, intent)
                if mapping is None:
                    continue
            for job_id, job_dir in intent["jobs"].items():
                known[job_id] = (Path(job_dir), mapping[job_id], intent["at"])
        return known

    def _find_by_name(self, batch: str, intent: dict) -> Optional[dict]:
        """The Slurm ids of a batch whose ``submitted`` line was never written, or None."""
        ids = _ids_by_name(intent["name"])
        if not ids:
            self.ledger.append("abandoned", batch=batch, why="never reached Slurm")
            return None
        main = ids[0].split("_")[0]
        job_ids = list(intent["jobs"])
        mapping = {j: (f"{main}_{i}" if len(job_ids) > 1 else main) for i, j in enumerate(job_ids)}
        folder = Path(intent["folder"])
        if not all((folder / f"{sid}_submitted.pkl").exists() for sid in mapping.values()):
            # killed before submitit moved the pickles into place: those tasks cannot run
            subprocess.run(["scancel", main], capture_output=True)
            self.ledger.append("abandoned", batch=batch, why=f"Slurm job {main} had no submitted pickles; cancelled")
            return None
        self.ledger.append("submitted", batch=batch, slurm=mapping, recovered=True)
        return mapping

    def _submit(self, specs: list[JobSpec]) -> list[tuple[JobSpec, Path, str, str]]:
        import submitit

        batch = uuid.uuid4().hex[:12]
        name = JOB_NAME_PREFIX + batch
        dirs = {}
        for spec in specs:
            d = self.folder / "jobs" / batch / spec.job_id  # fresh, even for a job submitted before
            (d / "results").mkdir(parents=True, exist_ok=True)
            (d / "job.json").write_text(spec.to_json())
            dirs[spec.job_id] = d
        executor = submitit.SlurmExecutor(folder=self.folder, python=sys.executable)
        executor.update_parameters(**self.options.executor_parameters(specs[0], name))
        at = _now().isoformat()
        self.ledger.append("submitting", batch=batch, name=name, folder=str(self.folder),
                           jobs={j: str(d) for j, d in dirs.items()}, at=at)
        try:
            with executor.batch():
                jobs = [executor.submit(run_agent, str(dirs[s.job_id])) for s in specs]
        except Exception as exc:  # sbatch said no: nothing was queued
            self.ledger.append("abandoned", batch=batch, why=f"{type(exc).__name__}: {exc}")
            said = [line for line in str(exc).splitlines() if line.strip()]
            raise SlurmError(f"sbatch refused the array: {said[-1] if said else exc} (its whole answer is in "
                             f"{self.ledger.path})") from exc
        mapping = {s.job_id: j.job_id for s, j in zip(specs, jobs)}
        self.ledger.append("submitted", batch=batch, slurm=mapping)
        return [(s, dirs[s.job_id], mapping[s.job_id], at) for s in specs]

    def _wait(self, waiting: dict[str, tuple[JobSpec, Path, str, str]]) -> Iterator[JobOutcome]:
        from submitit.slurm.slurm import SlurmJob

        watcher = SlurmJob.watcher
        for _, _, slurm_id, _ in waiting.values():
            watcher.register_job(slurm_id)
        while waiting:
            watcher.update()
            for job_id, (spec, job_dir, slurm_id, submitted_at) in list(waiting.items()):
                info = watcher.get_info(slurm_id, mode="cache")
                state = info.get("State") or ""
                if (state.split() or [""])[0] not in SLURM_STATES:
                    continue
                try:
                    facts = slurm_facts(slurm_id, state)
                except SlurmError:
                    continue  # sacct did not answer: ask again at the next poll
                del waiting[job_id]
                outcome = outcome_of(spec, job_dir, slurm_id, facts)
                outcome.annotations["slurm_submitted_at"] = submitted_at
                if outcome.status == "oom" and self.options.mem_gb and outcome.failure is not None:
                    outcome.failure["memory"]["limit_gib"] = self.options.mem_gb  # sbatch --mem, per node
                yield outcome
            if waiting:
                time.sleep(self.options.poll_s)

