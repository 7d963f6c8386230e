"""One collect run as a library: :func:`run` picks the space and calls :func:`run_sweep`, which
runs (or resumes) the jobs a :class:`~perfzoo.collect.config.CollectConfig` asks for, phase by
phase, each a function below:

1. :func:`check_request`: the configs checked against the space and the launch mode against the
   configs, before anything is created (a :class:`Sweep`);
2. :func:`open_checked_store`: the ``--out`` store opened, its records of the same space,
   command and metric source, and those ``--compare`` adds;
3. :func:`plan_jobs`: one job per config and repeat, repeats interleaved, those already in the
   store skipped (:func:`list_jobs` prints them with ``--dry-run``);
4. :func:`launch`: the job streams per mode (in-process, torchrun or a warm worker, your own
   command, Slurm);
5. :func:`store_records`: each record appended as its job ends, tallied, with a progress bar;
6. :func:`finish`: the summary, and the exit status (1: interrupted, run again to resume).

The command line is :mod:`perfzoo.collect.cli`; ``perfzoo.collect.run(config)`` is the call from
Python, and the closed loop's (:class:`perfzoo.loop.CollectLauncher`).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Iterator, Optional

from harness.command import CommandLauncher, MetricSource
from harness.environment import capture_hardware, capture_software, hardware_key, relevant_env
from harness.jobs import JobOutcome, JobSpec, to_record
from harness.launchers import InFlight, InProcessBatchLauncher, LocalTorchrunLauncher, WarmTorchrunLauncher, worker_env
from harness.sbatch import SlurmOptions
from harness.slurm import SlurmError, SlurmLauncher
from perfzoo import spaces as _spaces
from perfzoo import workloads
from perfzoo.collect.config import CollectConfig, default_space
from perfzoo.collect.jobs import command_of, infer_space, job_identity, resolve_configs, sweep_id
from perfzoo.collect.tally import Tally
from perfzoo.console import InputError, spelled_call
from perfzoo.hardware.accelerators import spec as accelerator_spec
from perfzoo.records import JobRecord, job_id_for
from perfzoo.records.store import RECORDS_FILE, RecordStore


def run(config: CollectConfig, provenance: Optional[str] = None) -> int:
    """Run (or resume) the jobs ``config`` describes, in its space (default: its workload's,
    :func:`~perfzoo.collect.config.default_space`, or the one every line of its ``configs`` fits);
    0 when every job has a record, 1 when interrupted (run again to resume). A :class:`InputError`
    names a bad field before anything runs. ``provenance`` is stored in every record (default:
    this call, spelled out).

    >>> run(CollectConfig(out="/tmp/doc-collect", n=1))
    Traceback (most recent call last):
    ...
    perfzoo.console.InputError: give --workload or --space
    """
    space_name = config.space or default_space(config.workload)
    if space_name is None and config.configs and not config.workload:
        space_name = infer_space(config.configs)
        print(f"perfzoo.collect: --configs {config.configs} fit space {space_name}", file=sys.stderr)
    if space_name is None:
        raise InputError("give --workload or --space")
    try:
        space = _spaces.get(space_name)
    except _spaces.SpaceError as exc:
        raise InputError(str(exc)) from None
    if config.out is None:
        config = replace(config, out=str(Path("runs") / space.name))
    try:
        return run_sweep(config, space, provenance or spelled_call("perfzoo.collect.run", config))
    except SlurmError as exc:
        raise InputError(str(exc)) from None


def run_sweep(config: CollectConfig, space: _spaces.Space, provenance: str) -> int:
    """Run (or resume) the jobs ``config`` asks for in ``space`` (the space its ``space`` field
    names), phase by phase (the module docstring); 0 when every job has a record, 1 when
    interrupted (run again to resume). A :class:`InputError` names a bad field before anything
    runs; ``provenance`` is stored in every record."""
    sweep = check_request(config, space)
    store, earlier = open_checked_store(sweep)
    plan_jobs(sweep, store.job_ids())
    if sweep.config.dry_run:
        list_jobs(sweep)
        return 0
    for line in in_flight(config).end_orphans():  # a collect killed outright (kill -9) left them running
        print(f"collect: {line}", file=sys.stderr, flush=True)
    tally = Tally(earlier=earlier)
    t0 = time.perf_counter()
    interrupted = store_records(sweep, launch(sweep), store, tally, provenance)
    return finish(sweep, tally, time.perf_counter() - t0, interrupted)


@dataclass
class Sweep:
    """A collect run once its request is checked (:func:`check_request`): the config (its workload
    the space's), the space, the configs, your command's ``(template, metric source)`` (None: a
    built-in workload) and the Slurm options (None: this machine); then the jobs the store lacks
    (:func:`plan_jobs`)."""

    config: CollectConfig
    space: _spaces.Space
    configs: list[dict]
    command: Optional[tuple[str, MetricSource]]
    slurm: Optional[SlurmOptions]
    in_process: list[JobSpec] = field(default_factory=list)  # world-size-1 jobs run in one worker
    launched: list[JobSpec] = field(default_factory=list)  # torchrun, your command or Slurm: one launch each
    skipped: int = 0  # jobs already in the store
    _hardware: dict[int, dict] = field(default_factory=dict, init=False, repr=False)  # by ranks, made once

    @property
    def total(self) -> int:
        """The jobs to run."""
        return len(self.in_process) + len(self.launched)

    def hardware(self, nproc: int) -> dict:
        """What a job of ``nproc`` ranks runs on, as its record says unless the job reports it
        (a Slurm job does): the accelerator ``--ran-on`` states, this machine's, or what a Slurm
        job asks for."""
        if nproc not in self._hardware:
            config = self.config
            if config.ran_on is not None:  # the command launches its jobs elsewhere: what they run on, as stated
                spec = accelerator_spec(config.ran_on)
                self._hardware[nproc] = {"accelerator": spec.name, "accelerator_count": nproc,
                                         "accelerator_memory_gib": spec.memory_gib,
                                         "nodes": max(1, -(-nproc // spec.node_size))}
            elif self.slurm is None:
                self._hardware[nproc] = capture_hardware(config.device, nproc)
            else:  # what the job asked for; its record gets what the node reported
                self._hardware[nproc] = {"accelerator": config.device, "accelerator_count": nproc,
                                         "nodes": self.slurm.nodes}
        return self._hardware[nproc]


def check_request(config: CollectConfig, space: _spaces.Space) -> Sweep:
    """Phase 1: ``config`` checked against ``space`` (its workload, runnable), its configs resolved
    and checked, the launch mode against them (in-process, warm, Slurm, CUDA); a :class:`InputError`
    names the first problem before anything is created."""
    if config.workload and config.workload != space.workload:
        raise InputError(f"--space {space.name} is a space of the '{space.workload}' workload, "
                         f"not '{config.workload}'")
    config = replace(config, workload=space.workload)
    if not space.runnable:
        raise InputError(f"--space {space.name} is a space for search only: the harness has no workload "
                         f"that runs its configs ({space.description}); collect runs "
                         f"{', '.join(n for n in _spaces.names() if _spaces.get(n).runnable)}")
    command = command_of(config, space)
    configs = resolve_configs(config, space)
    if config.mode == "inprocess":
        bad = [c for c in configs if int(c[space.world_size_key]) != 1]
        if bad:
            raise InputError(f"--mode inprocess runs world-size-1 jobs only; {len(bad)} configs have "
                             f"{space.world_size_key} = {bad[0][space.world_size_key]} (use --mode torchrun or auto)")
    if config.warm and config.device != "cpu":
        raise InputError("--warm is CPU-only (CUDA must not be set up before a fork); drop it with --device cuda")
    try:
        slurm = config.slurm.requested(config.launcher)
    except ValueError as exc:
        raise InputError(str(exc)) from None
    if slurm is not None and (config.warm or config.mode == "inprocess"):
        raise InputError("--warm and --mode inprocess are local launch modes; drop them with --launcher slurm")
    if slurm is not None:
        for cfg in configs:
            try:
                slurm.check(int(cfg[space.world_size_key]), config.device)
            except ValueError as exc:
                raise InputError(str(exc)) from None
    elif config.device == "cuda":
        import torch

        if not torch.cuda.is_available():
            raise InputError("--device cuda, but torch sees no CUDA GPU on this machine")
    if config.ran_on is not None and not command:
        raise InputError(f"--ran-on {config.ran_on}: only for your own command's jobs (the command workload); "
                         "a built-in workload runs here and records this machine")
    return Sweep(config, space, configs, command, slurm)


def open_store(path: str, flag: str) -> RecordStore:
    """The record store at ``path``, created if needed; a :class:`InputError` says why it cannot be."""
    try:
        store = RecordStore(path)
        if not os.access(store.path, os.W_OK):
            raise PermissionError(13, "not writable")
        return store
    except OSError as exc:
        why = exc.strerror or " ".join(str(exc).split())
        raise InputError(f"{flag} {path}: cannot be a record store ({why}); give a directory you can write, "
                         "e.g. runs/my-sweep") from None


def check_space(records: list, space, flag: str, path: str) -> None:
    """A :class:`InputError` where ``records`` (the store at ``path``, given as ``flag``) hold jobs of
    another workload or space than ``space``'s: one store, one space (their configs would be taken for
    this space's, measured, and fitted on)."""
    mixed = sorted({f"{r.workload}/{r.annotations.get('space') or 'any space'}" for r in records
                    if r.workload != space.workload or r.annotations.get("space") not in (None, space.name)})
    if mixed:
        raise InputError(f"{flag} {path} holds records of {', '.join(mixed)}, not of {space.workload}/"
                         f"{space.name}: one store, one space (splits and predictors need that); give another {flag}")


def earlier_records(config: CollectConfig, records: list) -> list:
    """The records this run's jobs are compared with (:class:`~perfzoo.collect.tally.Tally`): ``records``
    (the ``--out`` store's) and those of the ``--compare`` store (a folder or its records.jsonl)."""
    if config.compare is None:
        return records
    path = Path(config.compare)
    try:
        other = RecordStore(path.parent if path.name == RECORDS_FILE else path, create=False).records()
    except OSError as exc:
        raise InputError(f"--compare {config.compare}: {exc.strerror or exc}; give a record store (a folder "
                         f"holding {RECORDS_FILE}, e.g. datasets/llm-cpu)") from None
    ours = {r.record_id for r in records}
    return records + [r for r in other if r.record_id not in ours]


def open_checked_store(sweep: Sweep) -> tuple[RecordStore, list[JobRecord]]:
    """Phase 2: the ``--out`` store (created if needed) and the records this run's are compared with
    (:func:`earlier_records`); a :class:`InputError` where the store holds jobs of another space,
    command or metric source (their records would be taken for this run's)."""
    config, command = sweep.config, sweep.command
    store = open_store(config.out, "--out")
    records = store.records()
    earlier = earlier_records(config, records)
    check_space(records, sweep.space, "--out", config.out)
    if command is not None:
        other = sorted({r.annotations.get("command_template") for r in records} - {command[0], None})
        if other:
            raise InputError(f"--out {config.out} holds jobs of another command ({other[0]!r}): their records would "
                             "be taken for this command's; give another --out")
        other = sorted({r.annotations.get("metric_source") for r in records} - {command[1].describe(), None})
        if other:
            raise InputError(f"--out {config.out} holds jobs read with another metric source ({other[0]}): "
                             "give another --out")
    return store, earlier


def plan_jobs(sweep: Sweep, done_ids: set) -> None:
    """Phase 3: one job per config and repeat into ``sweep`` (in-process or launched), those whose
    id is in ``done_ids`` (the store's) skipped, and a line on stderr saying what will run."""
    config, space, command, slurm = sweep.config, sweep.space, sweep.command, sweep.slurm
    workload = workloads.get(config.workload)
    nprocs = [int(cfg[space.world_size_key]) for cfg in sweep.configs]
    keys = [hardware_key(sweep.hardware(n)) if slurm is None else slurm.identity(config.device, n) for n in nprocs]
    # repeats interleaved (every config's run 0, then every config's run 1, ...): the machine's
    # drift over the sweep then reaches every config's repeats alike
    for r in range(config.repeat):
        for cfg, nproc, key in zip(sweep.configs, nprocs, keys):
            jid = job_id_for(config.workload, job_identity(workload, cfg), key, r)
            if jid in done_ids:
                sweep.skipped += 1
                continue
            spec = JobSpec(workload=config.workload, config=cfg, job_id=jid, module=workload.harness,
                           nproc=nproc, device=config.device,
                           steps=config.steps, warmup=config.warmup, timeout_s=config.timeout, repeat=r,
                           require_quiet=config.require_quiet, quiet_wait_s=config.quiet_wait,
                           command=command[0] if command else None,
                           metrics=asdict(command[1]) if command else {})
            use_inproc = slurm is None and command is None and (
                config.mode == "inprocess" or (config.mode == "auto" and nproc == 1))
            (sweep.in_process if use_inproc else sweep.launched).append(spec)
    how = (f"{len(sweep.launched)} command jobs ({command[1].describe()})" if command and slurm is None else
           f"{len(sweep.in_process)} in-process, {len(sweep.launched)} torchrun{' (warm)' if config.warm else ''}"
           if slurm is None else f"Slurm arrays of {slurm.nodes} node(s) x {slurm.tasks_per_node} torchrun agent(s)")
    print(f"perfzoo.collect: {space.name} ({config.workload}), {len(sweep.configs)} configs x {config.repeat} "
          f"repeat(s): {sweep.total} jobs to run ({how}), {sweep.skipped} already in {config.out}", file=sys.stderr)


def list_jobs(sweep: Sweep) -> None:
    """Phase 3, ``--dry-run``: one JSON line per planned job (its id, ranks, repeat and config, and
    with Slurm what sbatch is asked for) instead of phases 4 to 6."""
    for spec in sweep.in_process + sweep.launched:
        row = {"job_id": spec.job_id, "nproc": spec.nproc, "repeat": spec.repeat, "config": spec.config}
        if sweep.slurm is not None:
            row["sbatch"] = sweep.slurm.executor_parameters(spec, "perfzoo-<batch>")
        print(json.dumps(row))


def in_flight(config: CollectConfig) -> InFlight:
    """Where the ``--out`` store marks the job sessions running (:class:`harness.launchers.InFlight`)."""
    return InFlight(Path(config.out) / "in-flight")


def launch(sweep: Sweep) -> list[tuple[Iterator[JobOutcome], Optional[int]]]:
    """Phase 4: ``(outcomes, threads per job)`` per launcher the jobs go to: the in-process worker
    (its threads), then Slurm, your command, or torchrun (a fresh one per job, or a warm worker);
    each stream launches its jobs as it is read."""
    config, out = sweep.config, Path(sweep.config.out)
    streams: list[tuple[Iterator[JobOutcome], Optional[int]]] = []
    if sweep.in_process:
        inproc = InProcessBatchLauncher(batch_size=config.batch_size)
        inproc.in_flight = in_flight(config)
        streams.append((inproc.run_many(sweep.in_process), inproc.threads))
    if sweep.launched and sweep.slurm is not None:
        slurm = SlurmLauncher(sweep.slurm, folder=sweep.slurm.folder or out / "slurm", ledger=out / "slurm-jobs.jsonl")
        streams.append((slurm.run_many(sweep.launched), None))
    elif sweep.launched:
        local = (CommandLauncher() if sweep.command is not None else
                 WarmTorchrunLauncher(batch_size=config.batch_size) if config.warm else LocalTorchrunLauncher())
        local.in_flight = in_flight(config)
        streams.append((local.run_many(sweep.launched), None))
    return streams


def _sigterm_to_interrupt(signum, frame):  # pragma: no cover - exercised by the resume test
    raise KeyboardInterrupt


def store_records(sweep: Sweep, streams: list[tuple[Iterator[JobOutcome], Optional[int]]], store: RecordStore,
                  tally: Tally, provenance: str) -> bool:
    """Phase 5: each job's record appended to ``store`` as its job ends and added to ``tally`` (a job
    another collect of the same sweep stored first counts as raced), behind a progress bar; True
    when interrupted (Ctrl-C, SIGTERM) before the last job ended."""
    config = sweep.config
    software = capture_software()
    unit = sweep.command[1].unit if sweep.command else workloads.get(config.workload).throughput_unit
    sweep_name = sweep_id(config, sweep.space.name, sweep.configs)
    previous = signal.signal(signal.SIGTERM, _sigterm_to_interrupt)
    bar = None
    if not config.no_progress:
        from tqdm import tqdm

        bar = tqdm(total=sweep.total, unit="job", desc=f"collect {sweep.space.name}", dynamic_ncols=True)
    try:
        for stream, threads in streams:
            for outcome in stream:
                env_extra = {"OMP_NUM_THREADS": str(threads)} if threads else None
                sw = dict(software, env=relevant_env(worker_env(outcome.spec, env_extra)))
                rec = to_record(outcome, hardware=outcome.hardware or sweep.hardware(outcome.spec.nproc), software=sw,
                                provenance=provenance, sweep_id=sweep_name, throughput_unit=unit,
                                space=sweep.space.name)
                if config.ran_on is not None:  # not seen by the harness: said so in the record
                    rec.annotations["hardware_stated"] = f"collect --ran-on {config.ran_on}: the command ran its job there"
                if store.append(rec):
                    tally.add(rec)
                else:  # another collect of the same sweep stored this job first: its record stands
                    tally.raced += 1
                if bar is not None:
                    bar.set_postfix_str(tally.postfix(), refresh=False)
                    bar.update(1)
    except KeyboardInterrupt:
        return True
    finally:
        signal.signal(signal.SIGTERM, previous)
        if bar is not None:
            bar.close()
    return False


def finish(sweep: Sweep, tally: Tally, seconds: float, interrupted: bool) -> int:
    """Phase 6: the run's summary (:meth:`Tally.table`) on stdout and, when ``interrupted``, how to
    resume on stderr; the exit status (0 done, 1 interrupted)."""
    print(tally.table(seconds, sweep.skipped, sweep.config.out))
    if not interrupted:
        return 0
    left = sweep.total - sum(tally.status.values())
    where = (f"; {left} job(s) stay queued or running on Slurm and the rerun waits for them instead of "
             "submitting them again" if sweep.slurm is not None and left else "")
    print(f"perfzoo.collect: interrupted; run the same command again to resume{where}", file=sys.stderr)
    return 1


__all__ = ["Sweep", "check_request", "check_space", "earlier_records", "finish", "in_flight", "launch", "list_jobs",
           "open_checked_store", "open_store", "plan_jobs", "run", "run_sweep", "store_records"]
