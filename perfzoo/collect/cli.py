"""``python -m perfzoo.collect``: run profiling jobs and append one job record each to a store.

Examples
--------
Random configs from a built-in space, 2 ranks each, into a store directory::

    python -m perfzoo.collect --workload fsdp --space fsdp-ads --n 100 --seed 0 --out runs/fsdp

Explicit configs (one JSON object per line, or ``{"config": {...}}`` lines from the searcher)::

    python -m perfzoo.collect --workload llm --configs proposals.jsonl --out runs/llm

Killed and started again with the same arguments, it skips every job already in the store
(job ids hash the config, the hardware and the repeat index) and loses nothing: each
record is fsynced as soon as its job ends.

Configs measured before (in the ``--out`` store, or in ``--compare STORE``) are compared with
their records at the end: the summary's ``vs earlier records`` line gives the throughput ratio,
and whether it is a drift or the machines differ (another CPU capability, e.g. AVX2 against
AVX-512 BF16, or a record that does not say: :mod:`perfzoo.hardware.capability`)::

    python -m perfzoo.collect --configs datasets/llm-cpu/repeat-configs.jsonl --compare datasets/llm-cpu --out runs/again

Python API
----------
:func:`run` takes a :class:`CollectConfig` (one field per flag, the same defaults) and returns
the exit status; running the jobs is :mod:`perfzoo.collect.sweep`. Listing two jobs without running them::

    from perfzoo.collect import CollectConfig, run
    run(CollectConfig(out="runs/llm", space="llm-small", n=2, dry_run=True))
"""

from __future__ import annotations

import argparse
import shlex
import sys
from dataclasses import fields, replace
from pathlib import Path
from typing import Optional, Sequence

from harness.protocol import QUIET_WAIT_ENV, QUIET_WAIT_S
from harness.slurm import SlurmError
from perfzoo import spaces as _spaces
from perfzoo import workloads
from perfzoo.collect.sweep import JOB_DEFAULTS, CollectConfig, JobDefaults, add_sbatch_arguments, infer_space, run_sweep
from perfzoo.console import UsageError, config_from_args, field_defaults, guarded, spelled_call


def default_space(workload: Optional[str]) -> Optional[str]:
    """The space collect runs when only ``workload`` is given: its bundle's ``default_space``
    (:mod:`perfzoo.workloads`); ``None`` for no workload or one without a default."""
    return workloads.get(workload).default_space if workload in workloads.names() else None


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m perfzoo.collect",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n"
               "  python -m perfzoo.collect --workload fsdp --n 100 --seed 0 --out runs/fsdp\n"
               "  python -m perfzoo.collect --workload llm --configs proposals.jsonl --repeat 3 --out runs/llm\n"
               "exit status: 0 done (failed jobs are records, not errors), 1 interrupted (run again "
               "to resume), 2 usage or input error",
        description="Run real training jobs (one torchrun process group each, or many world-size-1 "
                    "jobs in one worker) and append one job record per job to a record store. "
                    "Resumable: finished job ids are skipped.")
    p.add_argument("--workload", choices=workloads.names(),
                   help="workload to run (default: the space's workload)")
    defaults = ", ".join(f"{s.default_space} for {s.name}" for s in workloads.specs() if s.default_space)
    p.add_argument("--space", help=f"search space: one of {_spaces.names()}, or a .toml space file "
                                   f"(default: {defaults})")
    g = p.add_argument_group("your own job (the command workload of a .toml space; see harness/command.py)")
    g.add_argument("--command", metavar="TEMPLATE",
                   help="launch command; {knob} is the config's value, {nproc} {master_port} {out_dir} "
                        "{total_steps} ... the harness's (default: the space file's command)")
    g.add_argument("--ran-on", metavar="ACCELERATOR",
                   help="the accelerator the command's jobs run on, where it launches them on another machine (a "
                        "row of the accelerator table, e.g. H100-SXM-80GB): their records say that hardware, not "
                        "this machine's, and that it was stated")
    g.add_argument("--metric-parser", choices=["file", "torchtitan"],
                   help="file (default): JSON lines the job writes to $PERFZOO_METRICS_FILE; torchtitan: "
                        "its step lines in the output")
    g.add_argument("--metric-regex", metavar="REGEX",
                   help="read metrics from output lines matching REGEX, with named groups such as "
                        "(?P<throughput>...) or (?P<step_time_s>...)")
    g.add_argument("--throughput-unit", metavar="UNIT",
                   help="what the job's throughput counts, e.g. samples/s (default: the space file's, "
                        "tokens/s with torchtitan)")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--n", type=int, help="run N random distinct configs from the space")
    src.add_argument("--configs", metavar="FILE.jsonl",
                     help="run these configs: one JSON object per line, or {\"config\": {...}} lines")
    p.add_argument("--nproc", type=int, help="ranks per job (default: each config's own world size; "
                                            "with --n, only configs of this world size are drawn)")
    p.add_argument("--device", choices=["cpu", "cuda"], help="cpu (gloo) or cuda (NCCL)")
    p.add_argument("--repeat", type=int, help="runs of each config (repeat index 0..R-1, interleaved: every config once, then again, ...; default 1)")
    p.add_argument("--timeout", type=float,
                   help=f"wall-clock limit per job in seconds (default {JOB_DEFAULTS.timeout_s:g})")
    p.add_argument("--out", metavar="DIR", help="record store directory, created if needed (default runs/<space>)")
    p.add_argument("--seed", type=int, help="seed for --n sampling (default 0)")
    p.add_argument("--steps", type=int,
                   help=f"measured steps per job (default {JOB_DEFAULTS.steps}: the protocol; see datasets/fsdp-cpu/README.md)")
    p.add_argument("--warmup", type=int,
                   help=f"warm-up steps per job, not measured (default {JOB_DEFAULTS.warmup})")
    p.add_argument("--mode", choices=["auto", "torchrun", "inprocess"],
                   help="torchrun: a fresh torchrun per job; inprocess: world-size-1 jobs run in one "
                        "worker process; auto (default): inprocess for world size 1, torchrun otherwise")
    p.add_argument("--warm", action="store_true",
                   help="CPU: launch each torchrun job from a warm worker (the same torchrun-standalone "
                        "launch, ranks forked instead of re-importing torch: about half the overhead)")
    p.add_argument("--batch-size", type=int, help="jobs per in-process or warm worker (default 50)")
    p.add_argument("--launcher", choices=["local", "slurm"],
                   help="local (default): run jobs on this machine; slurm: submit them as Slurm job arrays")
    p.add_argument("--sweep-id", help="sweep id stored in each record (default: derived from the arguments)")
    p.add_argument("--require-quiet", action="store_true",
                   help="measure only on a quiet machine: a job that still sees other processes using "
                        "CPU after --quiet-wait seconds is recorded as failed (noisy_machine), not timed")
    p.add_argument("--quiet-wait", type=float, metavar="S",
                   help=f"seconds a CPU job waits for the machine to be quiet before timing (default "
                        f"{QUIET_WAIT_S:g}, or ${QUIET_WAIT_ENV}); then it is timed and flagged noisy, or fails with "
                        "--require-quiet")
    p.add_argument("--dry-run", action="store_true", help="validate and list the jobs, run nothing")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--compare", metavar="STORE",
                   help="also compare what is measured with this record store's records of the same configs "
                        "(e.g. datasets/llm-cpu): the summary gives the throughput ratio, and says when the "
                        "machines differ (CPU capability, GPU limits) or are not known to be alike, instead of "
                        "calling it a drift (the --out store's earlier records are compared always)")
    g = p.add_argument_group("Slurm (with --launcher slurm; sbatch's options of the same names)")
    add_sbatch_arguments(g)
    g.add_argument("--nodes", type=int, help="nodes per job (default 1)")
    g.add_argument("--tasks-per-node", type=int,
                   help="torchrun agents per node (default 1; each starts world size / (nodes x this) ranks)")
    g.add_argument("--gpus-per-node", type=int, help="GPUs per node (with --device cuda)")
    g.add_argument("--cpus-per-task", type=int, help="cores per task (default on CPU: one per rank)")
    g.add_argument("--time", type=int, metavar="MIN",
                   help="Slurm time limit per job in minutes (default: --timeout rounded up, plus 2)")
    g.add_argument("--mem-gb", type=float, help="memory per node in GiB (sbatch --mem)")
    g.add_argument("--array-parallelism", type=int, help="array elements running at once (default 256)")
    g.add_argument("--slurm-folder", metavar="DIR",
                   help="job files and logs, on a file system the nodes share (default: OUT/slurm)")
    p.set_defaults(**field_defaults(CollectConfig))  # every default lives once, in CollectConfig
    return p



def config_from_argv(argv: Sequence[str]) -> CollectConfig:
    """The :class:`CollectConfig` a command line means (argparse exits 2 on a malformed one)."""
    return config_from_args(CollectConfig, build_parser().parse_args(list(argv)))


def options_from_argv(argv: Sequence[str]) -> dict:
    """The :class:`CollectConfig` fields that collect flags set, e.g. ``["--batch-size=20"]`` ->
    ``{"batch_size": 20}`` (how tune's ``--collect-arg`` reaches collect)."""
    full, plain = config_from_argv(["--n", "1", "--out", ".", *argv]), CollectConfig(out=".", n=1)
    return {f.name: getattr(full, f.name) for f in fields(CollectConfig) if getattr(full, f.name) != getattr(plain, f.name)}


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point; returns the exit status (0 done, 1 interrupted, 2 usage or input error)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    return guarded("perfzoo.collect", lambda: run(config_from_argv(argv),
                                                  "python -m perfzoo.collect " + shlex.join(argv)))


def run(config: CollectConfig, provenance: Optional[str] = None) -> int:
    """Run (or resume) the jobs ``config`` describes, in its space (default: its workload's,
    :func:`default_space`); 0 when every job has a record, 1 when interrupted (run again to
    resume). A :class:`UsageError` names a bad field before anything runs. ``provenance`` is
    stored in every record (default: this call, spelled out)."""
    space_name = config.space or default_space(config.workload)
    if space_name is None and config.configs and not config.workload:
        space_name = infer_space(config.configs)
        print(f"perfzoo.collect: --configs {config.configs} fit space {space_name}", file=sys.stderr)
    if space_name is None:
        raise UsageError("give --workload or --space")
    try:
        space = _spaces.get(space_name)
    except _spaces.SpaceError as exc:
        raise UsageError(str(exc)) from None
    if config.out is None:
        config = replace(config, out=str(Path("runs") / space.name))
    try:
        return run_sweep(config, space, provenance or spelled_call("perfzoo.collect.run", config))
    except SlurmError as exc:
        raise UsageError(str(exc)) from None


__all__ = ["JOB_DEFAULTS", "CollectConfig", "JobDefaults", "build_parser", "config_from_argv", "default_space",
           "main", "options_from_argv", "run"]

