"""A sweep: the profiling jobs one collect run asks for (:class:`CollectConfig`) and running them
(:func:`run_sweep`): configs checked against the space, one job per config and repeat, the jobs
already in the store skipped, the rest launched (in-process, torchrun, a warm worker, your own
command or Slurm), one record appended per job, the counts tallied.

The command line, and picking a space when only the workload is given, are
:mod:`perfzoo.collect`; ``perfzoo.collect.run(config)`` is the call from Python.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import signal
import sys
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Optional

from harness.command import CommandLauncher, MetricSource, check_template
from harness.environment import capture_hardware, capture_software, hardware_key, relevant_env
from harness.jobs import JobSpec, to_record
from harness.launchers import InProcessBatchLauncher, LocalTorchrunLauncher, WarmTorchrunLauncher, worker_env
from harness.protocol import default_quiet_wait
from harness.slurm import SlurmLauncher, SlurmOptions
from perfzoo import spaces as _spaces
from perfzoo import workloads
from perfzoo.collect.tally import Tally
from perfzoo.console import UsageError, check_choice
from perfzoo.console import read_configs, read_located
from perfzoo.hardware.accelerators import spec as accelerator_spec
from perfzoo.records import Metrics, job_id_for
from perfzoo.records.store import RECORDS_FILE, RecordStore

@dataclass(frozen=True)
class JobDefaults:
    """How long each job runs unless told otherwise: the measurement protocol's figures
    (``datasets/fsdp-cpu/README.md``), shared by collect, tune and the closed loop."""

    steps: int = 10  # measured steps: repeat CV 1-5% on the bundled datasets
    warmup: int = 2  # steps run first and not measured
    timeout_s: float = 120.0  # wall-clock limit per job


JOB_DEFAULTS = JobDefaults()


@dataclass
class CollectConfig:
    """One collect run, as :func:`perfzoo.collect.run` takes it; the command line
    (:func:`perfzoo.collect.build_parser`, whose ``--help`` documents every field) only translates
    onto it, field for field.

    >>> cfg = CollectConfig(out="runs/llm", space="llm-small", n=4, steps=3)
    >>> cfg.repeat, cfg.device, cfg.timeout
    (1, 'cpu', 120.0)
    """

    out: Optional[str] = None  # the record store directory (default runs/<space>)
    space: Optional[str] = None  # a space name or a .toml space file (default: the workload's, or the one
    #                              every line of `configs` fits)
    workload: Optional[str] = None  # fsdp | llm | command (default: the space's)
    n: Optional[int] = None  # N random distinct configs from the space ...
    configs: Optional[str] = None  # ... or the configs in this JSONL file
    nproc: Optional[int] = None  # ranks per job (default: each config's world size)
    device: str = "cpu"  # cpu (gloo) or cuda (NCCL)
    repeat: int = 1  # runs of each config (repeat index 0 .. repeat - 1; interleaved over the configs)
    timeout: float = JOB_DEFAULTS.timeout_s  # wall-clock limit per job, seconds
    seed: int = 0  # seed of the random configs
    steps: int = JOB_DEFAULTS.steps  # measured steps per job
    warmup: int = JOB_DEFAULTS.warmup  # warm-up steps per job, not measured
    mode: str = "auto"  # auto | torchrun | inprocess
    warm: bool = False  # CPU: fork each job's ranks from a warm worker
    batch_size: int = 50  # jobs per in-process or warm worker
    launcher: str = "local"  # local | slurm
    sweep_id: Optional[str] = None  # default: derived from the arguments
    require_quiet: bool = False  # a job on a busy machine fails (noisy_machine) instead of being timed
    quiet_wait: float = field(default_factory=default_quiet_wait)  # seconds a CPU job waits for quiet before timing
    dry_run: bool = False  # validate and list the jobs, run nothing
    no_progress: bool = False  # no progress bar
    compare: Optional[str] = None  # also compare the throughput measured with this record store's records of the same configs
    command: Optional[str] = None  # the command workload: the launch template (default: the space file's)
    metric_parser: Optional[str] = None  # file | torchtitan
    metric_regex: Optional[str] = None  # metrics from output lines matching this
    throughput_unit: Optional[str] = None  # what the command's throughput counts
    ran_on: Optional[str] = None  # the command workload: the accelerator its jobs run on, where it launches them elsewhere
    partition: Optional[str] = None  # Slurm (with launcher='slurm'): sbatch's options of these names
    nodes: Optional[int] = None
    tasks_per_node: Optional[int] = None
    gpus_per_node: Optional[int] = None
    cpus_per_task: Optional[int] = None
    time: Optional[int] = None
    mem_gb: Optional[float] = None
    account: Optional[str] = None
    qos: Optional[str] = None
    constraint: Optional[str] = None
    array_parallelism: Optional[int] = None
    slurm_arg: list = field(default_factory=list)  # more sbatch options, KEY=VALUE
    slurm_folder: Optional[str] = None
    poll: Optional[float] = None

    def __post_init__(self):
        if (self.n is None) == (self.configs is None):
            raise UsageError("give exactly one of --n and --configs")
        for name in ("repeat", "steps"):
            if getattr(self, name) < 1:
                raise UsageError(f"--{name} must be at least 1")
        if self.warmup < 0 or self.timeout <= 0:
            raise UsageError("--warmup must be >= 0 and --timeout > 0")
        check_choice("--device", self.device, ("cpu", "cuda"))
        check_choice("--mode", self.mode, ("auto", "torchrun", "inprocess"))
        check_choice("--launcher", self.launcher, ("local", "slurm"))
        check_choice("--metric-parser", self.metric_parser, (None, "file", "torchtitan"))
        if self.ran_on is not None and accelerator_spec(self.ran_on) is None:
            raise UsageError(f"--ran-on {self.ran_on}: not a row of the accelerator table (e.g. H100-SXM-80GB, B200)")


SLURM_FLAGS = {"partition": "partition", "nodes": "nodes", "tasks_per_node": "tasks_per_node",
               "gpus_per_node": "gpus_per_node", "cpus_per_task": "cpus_per_task", "time": "time_min",
               "mem_gb": "mem_gb", "account": "account", "qos": "qos", "constraint": "constraint",
               "array_parallelism": "array_parallelism", "poll": "poll_s"}


def slurm_options(config) -> Optional[SlurmOptions]:
    """The :class:`harness.slurm.SlurmOptions` of a command's config: collect's, or any with a
    ``launcher`` and some of the fields of :data:`SLURM_FLAGS` (bench's); ``None`` without
    ``launcher='slurm'``; a :class:`UsageError` names a misuse."""
    flags = [f for f in SLURM_FLAGS if hasattr(config, f)]
    given = [f for f in (*flags, "slurm_folder") if getattr(config, f) is not None] + (
        ["slurm_arg"] if config.slurm_arg else [])
    if config.launcher != "slurm":
        if given:
            raise UsageError(f"--{given[0].replace('_', '-')} is a Slurm option; add --launcher slurm")
        return None
    for flag in ("nodes", "tasks_per_node", "gpus_per_node", "cpus_per_task", "time", "array_parallelism"):
        if flag in flags and getattr(config, flag) is not None and getattr(config, flag) < 1:
            raise UsageError(f"--{flag.replace('_', '-')} must be at least 1")
    for flag in ("mem_gb", "poll"):
        if flag in flags and getattr(config, flag) is not None and getattr(config, flag) <= 0:
            raise UsageError(f"--{flag.replace('_', '-')} must be positive")
    extra = {}
    for item in config.slurm_arg:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--slurm-arg {item!r}: expected KEY=VALUE, e.g. reservation=r1")
        extra[key.strip().lstrip("-").replace("-", "_")] = value
    return SlurmOptions(extra=extra, **{SLURM_FLAGS[flag]: getattr(config, flag) for flag in flags
                                        if getattr(config, flag) is not None})


def add_sbatch_arguments(group) -> None:
    """The Slurm options whose meaning is the same for every command that submits (collect's jobs,
    bench's fits) to an argparse ``group``; each command adds those that differ (cores, time, memory,
    array, folder). :func:`slurm_options` reads them back."""
    group.add_argument("--partition", help="partition to submit to (default: the cluster's default)")
    group.add_argument("--account", help="account to charge")
    group.add_argument("--qos", help="quality of service")
    group.add_argument("--constraint", help="node features (sbatch --constraint)")
    group.add_argument("--slurm-arg", action="append", metavar="KEY=VALUE",
                       help="any other sbatch option, e.g. --slurm-arg reservation=r1 (repeatable)")
    group.add_argument("--poll", type=float, help="seconds between sacct polls (default 2)")


# configs ---------------------------------------------------------------------------------

def infer_space(path: str) -> str:
    r"""The one registered space that every config in ``path`` fits (collect's ``--configs`` with
    neither ``--space`` nor ``--workload``); a :class:`UsageError` when none or several do.

    >>> import json, tempfile
    >>> f = tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False)
    >>> _ = f.write(json.dumps({"config": _spaces.get("fsdp-ads-v3").sample(1, seed=0)[0]}) + "\n"); f.close()
    >>> infer_space(f.name)
    'fsdp-ads-v3'
    """
    raws = read_configs(path)

    def fits(name: str) -> bool:
        space = _spaces.get(name)
        try:
            for raw in raws:
                space.validate(raw)
        except _spaces.SpaceError:
            return False
        return True

    matches = [name for name in _spaces.names() if fits(name)]
    if len(matches) != 1:
        found = f"fit the spaces {', '.join(matches)}" if matches else "fit no registered space"
        raise UsageError(f"--configs {path}: the configs {found}; name one with --space")
    return matches[0]


def resolve_configs(config: CollectConfig, space: _spaces.Space) -> list[dict]:
    """Validated, complete configs (a :class:`UsageError` names the first bad one)."""
    wkey = space.world_size_key
    if config.configs:
        configs = []
        for where, raw in read_located(config.configs):
            raw = dict(raw)
            if config.nproc is not None:
                if wkey in raw and int(raw[wkey]) != config.nproc:
                    raise UsageError(f"{where}: knob '{wkey}' = {raw[wkey]} but --nproc {config.nproc}")
                raw.setdefault(wkey, config.nproc)
            try:
                configs.append(space.validate(raw))
            except _spaces.SpaceError as exc:
                raise UsageError(f"{where}: {exc}") from None
        unique = list({json.dumps(c, sort_keys=True, default=str): c for c in configs}.values())
        if len(unique) < len(configs):
            print(f"perfzoo.collect: {len(configs) - len(unique)} repeated config(s) in {config.configs} run "
                  "once (measure a config several times with --repeat)", file=sys.stderr)
        return unique
    if config.n is None or config.n < 1:
        raise UsageError("--n must be at least 1")
    if config.nproc is None:
        return space.sample(config.n, seed=config.seed)
    dim = space._dims.get(wkey)
    allowed = dim.values if dim is not None else (space.constants.get(wkey),)
    if not any(_spaces._same(config.nproc, v) for v in allowed):
        raise UsageError(f"--nproc {config.nproc}: space '{space.name}' allows {wkey} in {list(allowed)}")
    if dim is None:
        return space.sample(config.n, seed=config.seed)
    sub = _spaces.Space(name=space.name, workload=space.workload,
                        dimensions=[d for d in space.dimensions if d.name != wkey],
                        constants={**space.constants, wkey: config.nproc}, derived=space.derived,
                        constraints=space.constraints, world_size_key=wkey)
    return [space.validate({k: c[k] for k in c}) for c in sub.sample(config.n, seed=config.seed)]


def command_of(config: CollectConfig, space: _spaces.Space):
    """``(template, MetricSource)`` for a space of the command workload, else ``None``."""
    given = [f"--{f.replace('_', '-')}" for f in ("command", "metric_parser", "metric_regex", "throughput_unit")
             if getattr(config, f) is not None]
    if space.workload != "command":
        if given:
            raise UsageError(f"{given[0]} is for your own job (a .toml space of the command workload); "
                             f"space {space.name} runs the built-in '{space.workload}' workload")
        return None
    template = config.command or (space.command if isinstance(space, _spaces.FileSpace) else None)
    if not template:
        raise UsageError(f"space {space.name} runs a command: give --command 'TEMPLATE' (e.g. 'torchrun "
                         "--standalone --nproc-per-node {nproc} train.py --batch {batch}') or command = \"...\" "
                         "in the space file")
    if isinstance(space, _spaces.FileSpace):  # a command that finds the files beside its space file
        template = template.replace("{space_dir}", shlex.quote(str(Path(space.path).resolve().parent)))
    if config.warm or config.mode == "inprocess":
        raise UsageError("--warm and --mode inprocess run the built-in workloads; a command job is its own process")
    if config.metric_parser and config.metric_regex:
        raise UsageError("give --metric-parser or --metric-regex, not both")
    parser = "regex" if config.metric_regex else (config.metric_parser or "file")
    default_unit = "tokens/s" if parser == "torchtitan" else (
        space.throughput_unit if isinstance(space, _spaces.FileSpace) else "items/s")
    try:
        check_template(template, space.knobs())
        source = MetricSource(parser=parser, regex=config.metric_regex, unit=config.throughput_unit or default_unit)
        Metrics(throughput_unit=source.unit)
    except ValueError as exc:
        raise UsageError(" ".join(str(exc).split())[:300]) from None
    return template, source


# running ---------------------------------------------------------------------------------

def open_store(path: str, flag: str):
    """The record store at ``path``, created if needed; a :class:`UsageError` says why it cannot be."""
    try:
        store = RecordStore(path)
        if not os.access(store.path, os.W_OK):
            raise PermissionError(13, "not writable")
        return store
    except OSError as exc:
        why = exc.strerror or " ".join(str(exc).split())
        raise UsageError(f"{flag} {path}: cannot be a record store ({why}); give a directory you can write, "
                         "e.g. runs/my-sweep") from None


def check_space(records: list, space, flag: str, path: str) -> None:
    """A :class:`UsageError` where ``records`` (the store at ``path``, given as ``flag``) hold jobs of
    another workload or space than ``space``'s: one store, one space (their configs would be taken for
    this space's, measured, and fitted on)."""
    mixed = sorted({f"{r.workload}/{r.annotations.get('space') or 'any space'}" for r in records
                    if r.workload != space.workload or r.annotations.get("space") not in (None, space.name)})
    if mixed:
        raise UsageError(f"{flag} {path} holds records of {', '.join(mixed)}, not of {space.workload}/"
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
        raise UsageError(f"--compare {config.compare}: {exc.strerror or exc}; give a record store (a folder "
                         f"holding {RECORDS_FILE}, e.g. datasets/llm-cpu)") from None
    ours = {r.record_id for r in records}
    return records + [r for r in other if r.record_id not in ours]


def job_identity(workload: workloads.WorkloadSpec, cfg: dict) -> dict:
    """A config as its job id sees it: without the keys its workload's harness implies (a record
    that predates such a key keeps its id, so a resumed sweep still skips it).

    >>> llm = workloads.get("llm")
    >>> job_identity(llm, {"precision": "fp8", "low_precision_backward": False})
    {'precision': 'fp8'}
    """
    said = workload.implied(cfg) if workload.implied else {}
    return {k: v for k, v in cfg.items() if not (k in said and said[k] == v)}


def _sweep_id(config: CollectConfig, space_name: str, configs: list[dict]) -> str:
    if config.sweep_id:
        return config.sweep_id
    h = hashlib.sha256(json.dumps([config.workload, space_name, config.repeat, configs],
                                  sort_keys=True, default=str).encode()).hexdigest()[:10]
    return f"{space_name}-{h}"


def _sigterm_to_interrupt(signum, frame):  # pragma: no cover - exercised by the resume test
    raise KeyboardInterrupt


def run_sweep(config: CollectConfig, space: _spaces.Space, provenance: str) -> int:
    """Run (or resume) the jobs ``config`` asks for in ``space`` (the space its ``space`` field
    names); 0 when every job has a record, 1 when interrupted (run again to resume). A
    :class:`UsageError` names a bad field before anything runs; ``provenance`` is stored in
    every record."""
    if config.workload and config.workload != space.workload:
        raise UsageError(f"--space {space.name} is a space of the '{space.workload}' workload, "
                         f"not '{config.workload}'")
    config = replace(config, workload=space.workload)
    if not space.runnable:
        raise UsageError(f"--space {space.name} is a space for search only: the harness has no workload "
                         f"that runs its configs ({space.description}); collect runs "
                         f"{', '.join(n for n in _spaces.names() if _spaces.get(n).runnable)}")
    command = command_of(config, space)
    configs = resolve_configs(config, space)
    if config.mode == "inprocess":
        bad = [c for c in configs if int(c[space.world_size_key]) != 1]
        if bad:
            raise UsageError(f"--mode inprocess runs world-size-1 jobs only; {len(bad)} configs have "
                             f"{space.world_size_key} = {bad[0][space.world_size_key]} (use --mode torchrun or auto)")

    if config.warm and config.device != "cpu":
        raise UsageError("--warm is CPU-only (CUDA must not be set up before a fork); drop it with --device cuda")
    slurm = slurm_options(config)
    if slurm is not None and (config.warm or config.mode == "inprocess"):
        raise UsageError("--warm and --mode inprocess are local launch modes; drop them with --launcher slurm")
    if slurm is not None:
        for cfg in configs:
            try:
                slurm.check(int(cfg[space.world_size_key]), config.device)
            except ValueError as exc:
                raise UsageError(str(exc)) from None
    elif config.device == "cuda":
        import torch

        if not torch.cuda.is_available():
            raise UsageError("--device cuda, but torch sees no CUDA GPU on this machine")
    store = open_store(config.out, "--out")
    done_ids = store.job_ids()
    records = store.records()
    earlier = earlier_records(config, records)
    check_space(records, space, "--out", config.out)
    if command is not None:
        other = sorted({r.annotations.get("command_template") for r in records} - {command[0], None})
        if other:
            raise UsageError(f"--out {config.out} holds jobs of another command ({other[0]!r}): their records would "
                             "be taken for this command's; give another --out")
        other = sorted({r.annotations.get("metric_source") for r in records} - {command[1].describe(), None})
        if other:
            raise UsageError(f"--out {config.out} holds jobs read with another metric source ({other[0]}): "
                             "give another --out")
    sweep_id = _sweep_id(config, space.name, configs)
    workload = workloads.get(config.workload)
    if config.ran_on is not None and not command:
        raise UsageError(f"--ran-on {config.ran_on}: only for your own command's jobs (the command workload); "
                         "a built-in workload runs here and records this machine")
    unit = command[1].unit if command else workload.throughput_unit
    harness_module = workload.harness
    software = capture_software()
    inproc = InProcessBatchLauncher(batch_size=config.batch_size)
    hardware_cache: dict[int, dict] = {}

    def hardware_for(n: int) -> dict:
        if n not in hardware_cache:
            if config.ran_on is not None:  # the command launches its jobs elsewhere: what they run on, as stated
                spec = accelerator_spec(config.ran_on)
                hardware_cache[n] = {"accelerator": spec.name, "accelerator_count": n,
                                     "accelerator_memory_gib": spec.memory_gib,
                                     "nodes": max(1, -(-n // spec.node_size))}
            elif slurm is None:
                hardware_cache[n] = capture_hardware(config.device, n)
            else:  # what the job asked for; its record gets what the node reported
                hardware_cache[n] = {"accelerator": config.device, "accelerator_count": n, "nodes": slurm.nodes}
        return hardware_cache[n]

    jobs_in, jobs_tr, skipped = [], [], 0
    nprocs = [int(cfg[space.world_size_key]) for cfg in configs]
    keys = [hardware_key(hardware_for(n)) if slurm is None else slurm.identity(config.device, n) for n in nprocs]
    # repeats interleaved (every config's run 0, then every config's run 1, ...): the machine's
    # drift over the sweep then reaches every config's repeats alike
    for r in range(config.repeat):
        for cfg, nproc, key in zip(configs, nprocs, keys):
            jid = job_id_for(config.workload, job_identity(workload, cfg), key, r)
            if jid in done_ids:
                skipped += 1
                continue
            spec = JobSpec(workload=config.workload, config=cfg, job_id=jid, module=harness_module,
                           nproc=nproc, device=config.device,
                           steps=config.steps, warmup=config.warmup, timeout_s=config.timeout, repeat=r,
                           require_quiet=config.require_quiet, quiet_wait_s=config.quiet_wait,
                           command=command[0] if command else None,
                           metrics=asdict(command[1]) if command else {})
            use_inproc = slurm is None and command is None and (
                config.mode == "inprocess" or (config.mode == "auto" and nproc == 1))
            (jobs_in if use_inproc else jobs_tr).append(spec)
    total = len(jobs_in) + len(jobs_tr)
    how = (f"{len(jobs_tr)} command jobs ({command[1].describe()})" if command and slurm is None else
           f"{len(jobs_in)} in-process, {len(jobs_tr)} torchrun{' (warm)' if config.warm else ''}" if slurm is None
           else f"Slurm arrays of {slurm.nodes} node(s) x {slurm.tasks_per_node} torchrun agent(s)")
    print(f"perfzoo.collect: {space.name} ({config.workload}), {len(configs)} configs x {config.repeat} "
          f"repeat(s): {total} jobs to run ({how}), {skipped} already in {config.out}", file=sys.stderr)
    if config.dry_run:
        for spec in jobs_in + jobs_tr:
            row = {"job_id": spec.job_id, "nproc": spec.nproc, "repeat": spec.repeat, "config": spec.config}
            if slurm is not None:
                row["sbatch"] = slurm.executor_parameters(spec, "perfzoo-<batch>")
            print(json.dumps(row))
        return 0

    tally = Tally(earlier=earlier)
    t0 = time.perf_counter()
    previous = signal.signal(signal.SIGTERM, _sigterm_to_interrupt)
    bar = None
    if not config.no_progress:
        from tqdm import tqdm

        bar = tqdm(total=total, unit="job", desc=f"collect {space.name}", dynamic_ncols=True)
    interrupted = False
    try:
        streams = []
        if jobs_in:
            streams.append((inproc.run_many(jobs_in), inproc.threads))
        if jobs_tr and slurm is not None:
            tr = SlurmLauncher(slurm, folder=config.slurm_folder or Path(config.out) / "slurm",
                               ledger=Path(config.out) / "slurm-jobs.jsonl")
            streams.append((tr.run_many(jobs_tr), None))
        elif jobs_tr and command is not None:
            streams.append((CommandLauncher().run_many(jobs_tr), None))
        elif jobs_tr:
            tr = WarmTorchrunLauncher(batch_size=config.batch_size) if config.warm else LocalTorchrunLauncher()
            streams.append((tr.run_many(jobs_tr), None))
        for stream, threads in streams:
            for outcome in stream:
                n = outcome.spec.nproc
                env_extra = {"OMP_NUM_THREADS": str(threads)} if threads else None
                sw = dict(software, env=relevant_env(worker_env(outcome.spec, env_extra)))
                rec = to_record(outcome, hardware=outcome.hardware or hardware_for(n), software=sw,
                                provenance=provenance, sweep_id=sweep_id, throughput_unit=unit,
                                space=space.name)
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
        interrupted = True
    finally:
        signal.signal(signal.SIGTERM, previous)
        if bar is not None:
            bar.close()
    print(tally.table(time.perf_counter() - t0, skipped, config.out))
    if interrupted:
        left = total - sum(tally.status.values())
        where = (f"; {left} job(s) stay queued or running on Slurm and the rerun waits for them instead of "
                 "submitting them again" if slurm is not None and left else "")
        print(f"perfzoo.collect: interrupted; run the same command again to resume{where}", file=sys.stderr)
        return 1
    return 0

