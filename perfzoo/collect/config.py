"""What one collect run is: :class:`CollectConfig` (every field of a run, with the measurement
protocol's job defaults, :data:`JOB_DEFAULTS`), the space run when only the workload is given
(:func:`default_space`), and the flags that set it (:func:`build_parser`): ``python -m
perfzoo.collect`` parses them (:mod:`perfzoo.collect.cli`), and so does ``python -m perfzoo.tune``
for its ``--collect-arg`` (:func:`options_from_argv`).

>>> options_from_argv(["--batch-size=20", "--launcher", "slurm", "--partition", "cpu"])["slurm"].partition
'cpu'
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field, fields
from typing import Optional, Sequence

from harness.protocol import QUIET_WAIT_ENV, QUIET_WAIT_S, default_quiet_wait
from harness.sbatch import SlurmOptions
from harness.sbatch import add_arguments as add_slurm_arguments
from perfzoo import spaces as _spaces
from perfzoo import workloads
from perfzoo.console import InputError, check_choice, config_from_args, field_defaults
from perfzoo.hardware.accelerators import spec as accelerator_spec


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
    (:func:`build_parser`, whose ``--help`` documents every field) only translates onto it, field
    for field (the Slurm flags onto ``slurm``, a :class:`harness.sbatch.SlurmOptions`).

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
    slurm: SlurmOptions = field(default_factory=SlurmOptions)  # with launcher='slurm': what each job asks Slurm for

    def __post_init__(self):
        if (self.n is None) == (self.configs is None):
            raise InputError("give exactly one of --n and --configs")
        for name in ("repeat", "steps"):
            if getattr(self, name) < 1:
                raise InputError(f"--{name} must be at least 1")
        if self.warmup < 0 or self.timeout <= 0:
            raise InputError("--warmup must be >= 0 and --timeout > 0")
        check_choice("--device", self.device, ("cpu", "cuda"))
        check_choice("--mode", self.mode, ("auto", "torchrun", "inprocess"))
        check_choice("--launcher", self.launcher, ("local", "slurm"))
        check_choice("--metric-parser", self.metric_parser, (None, "file", "torchtitan"))
        if self.ran_on is not None and accelerator_spec(self.ran_on) is None:
            raise InputError(f"--ran-on {self.ran_on}: not a row of the accelerator table (e.g. H100-SXM-80GB, B200)")


def default_space(workload: Optional[str]) -> Optional[str]:
    """The space collect runs when only ``workload`` is given: its bundle's ``default_space``
    (:mod:`perfzoo.workloads`); ``None`` for no workload or one without a default."""
    return workloads.get(workload).default_space if workload in workloads.names() else None


COMMAND_FLAGS = ("command", "metric_parser", "metric_regex", "throughput_unit")  # your own job's: collect's, tune's


def add_command_arguments(parser: argparse.ArgumentParser, ran_on: bool = True) -> None:
    """The flags of your own job (the command workload of a .toml space), a group of ``parser``:
    its launch template and how its metrics are read (:data:`COMMAND_FLAGS`) and, with ``ran_on``,
    the accelerator it runs on; collect's, and tune's for the jobs it launches through collect."""
    g = parser.add_argument_group("your own job (the command workload of a .toml space; see harness/command.py)")
    g.add_argument("--command", metavar="TEMPLATE",
                   help="launch command; {knob} is the config's value, {nproc} {master_port} {out_dir} "
                        "{total_steps} ... the harness's (default: the space file's command)")
    if ran_on:
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


def build_parser() -> argparse.ArgumentParser:
    """collect's flags, each onto the :class:`CollectConfig` field of its name (the defaults are the
    dataclass's; the Slurm flags onto ``slurm``)."""
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
    add_command_arguments(p)
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
    add_slurm_arguments(p.add_argument_group("Slurm (with --launcher slurm; sbatch's options of the same names)"))
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


__all__ = ["COMMAND_FLAGS", "JOB_DEFAULTS", "CollectConfig", "JobDefaults", "add_command_arguments", "build_parser",
           "config_from_argv", "default_space", "options_from_argv"]
