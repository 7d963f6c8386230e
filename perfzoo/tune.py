"""``python -m perfzoo.tune``: the closed CubicML loop on real jobs.

N random jobs -> fit the predictor -> search (REINFORCE by default) -> launch the top k through
the harness -> add the records -> refit, for R rounds; optionally extra random jobs (so the
loop is compared with random search at the same number of jobs) and the hand-tuned baseline.
Every job is a record in ``--store``; the loop's state is derived from the store and the
per-phase plans under ``<store>/tune/``, so a killed run resumes where it stopped when the
same command runs again. Writes a frontier plot like the CubicML paper's Figure 2(a).

Examples
--------
The paper's protocol, scaled to this machine (100 random + 3 x 20, a 60-job random control,
the FSDP default and the expert heuristic, then a race: each arm's 6 best configs by one run
measured twice more, the better half of each arm and the baselines 6 times in all; champion =
best median of 6), as ``datasets/fsdp-cpu-loop/tune_seeds.sh`` runs it::

    python -m perfzoo.tune --space fsdp-ads-v3 --store runs/tune --n-random 100 --rounds 3 --top-k 20 \\
        --control 60 --hand-tuned --expert --confirm 6 --race 6 --warm --plot runs/tune/frontier.png

A tiny end-to-end check into a scratch store::

    python -m perfzoo.tune --space fsdp-ads-v3 --store /tmp/tune-check --n-random 6 --rounds 1 --top-k 2

Your own job against the config you run today (``mine.json``: one config of the space, or a JSONL
of configs tried in order until one runs), raced with the loop's champion::

    python -m perfzoo.tune --space examples/fsdp2/space.toml --store runs/mine-tune --n-random 12 \
        --rounds 2 --top-k 4 --predictor ridge --baseline mine.json --confirm 3

It ends with the champion's config and its speedup over each baseline (and over random search
at equal jobs, with ``--control``).

Python API
----------
:func:`run` takes a :class:`TuneConfig` (one field per flag, the same defaults) and returns a
:class:`TuneResult` (the :class:`~perfzoo.loop.LoopSummary`, the frontier figure, whether it
was interrupted). The state of a loop, launching nothing::

    from perfzoo.tune import TuneConfig, run
    print(run(TuneConfig(store="runs/tune", space="fsdp-ads-v3", status=True)).summary.table())

``run(config, launcher)`` runs the jobs through another launcher (:data:`perfzoo.loop.Launcher`)
instead of the harness.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Sequence

from perfzoo import workloads, zoo
from perfzoo.collect.config import COMMAND_FLAGS, JOB_DEFAULTS, add_command_arguments, options_from_argv
from perfzoo.collect.sweep import check_space, open_store
from perfzoo.console import (EXIT_DONE, EXIT_INTERRUPTED, InputError, RunFailed, check_choice, check_figure,
                             config_from_args, field_defaults, guarded, read_located)
from perfzoo.loop import ClosedLoop, CollectLauncher, Launcher, LoopSummary
from perfzoo.records.store import RECORDS_FILE
from perfzoo.search import SEARCHERS, Reinforce, Searcher, make_searcher
from perfzoo.spaces import Space, SpaceError, get
from perfzoo.spaces.codec import SpaceCodec

@dataclass(frozen=True)
class TuneConfig:
    """One closed-loop run, as :func:`run` takes it; ``python -m perfzoo.tune`` translates its
    flags onto it field for field (its ``--help`` says more about each).

    >>> TuneConfig(store="runs/tune", rounds=-1)
    Traceback (most recent call last):
    ...
    perfzoo.console.InputError: --rounds must be at least 0, got -1
    """

    store: str  # the record store the jobs are added to
    space: str = "fsdp-ads-v3"  # a space name or a .toml space file
    n_random: int = 100  # random jobs before the first round
    rounds: int = 3  # search rounds
    top_k: int = 20  # jobs launched per round
    searcher: str = "reinforce"  # a name in perfzoo.search.SEARCHERS, run on the predictor each round
    predictor: str = "lightgbm"  # the zoo member refitted each round, or 'best' (the leaderboard's for dataset)
    dataset: str = "fsdp-cpu"  # the dataset whose best predictor 'best' means
    no_failure: bool = False  # no failure classifier (reward = predicted throughput only)
    train_on: str = "loop"  # fit on the loop's own jobs (loop) or on every record in the store (store)
    control: int = 0  # extra random jobs after the rounds
    hand_tuned: bool = False  # also run the FSDP default
    expert: bool = False  # also run the expert heuristic
    baseline: Optional[str] = None  # your baseline: a file of configs of the space, tried in order until one runs ok
    race: int = 3  # with confirm: candidates per searched arm in the race
    confirm: int = 0  # race runs of each finalist (0: no race)
    seed: int = 0  # seed of the random phase and the searcher
    tag: Optional[str] = None  # sweep-id prefix (default tune-<space>-s<seed>)
    n_samples: Optional[int] = None  # searcher samples per restart (default: the searcher's)
    restarts: Optional[int] = None  # REINFORCE restarts (default: its own)
    lr: Optional[float] = None  # REINFORCE Adam learning rate (default: its own)
    timeout: float = JOB_DEFAULTS.timeout_s  # wall-clock limit per job, seconds
    steps: int = JOB_DEFAULTS.steps  # measured steps per job
    warmup: int = JOB_DEFAULTS.warmup  # warm-up steps per job
    device: str = "cpu"  # cpu or cuda
    warm: bool = False  # collect's warm: each torchrun job launched from a warm worker
    command: Optional[str] = None  # your own job: the launch command of a .toml space (collect's)
    metric_parser: Optional[str] = None  # how the command reports: file | torchtitan (collect's)
    metric_regex: Optional[str] = None  # metrics from output lines matching this (collect's)
    throughput_unit: Optional[str] = None  # what the command's throughput counts (collect's)
    collect_arg: list[str] = field(default_factory=list)  # more collect flags, e.g. '--batch-size=20'
    plot: Optional[str] = None  # the frontier figure (default <store>/tune/<tag>-frontier.png)
    status: bool = False  # only the loop's state: launch nothing
    no_progress: bool = False  # no progress bars

    def __post_init__(self):
        if self.predictor != "best" and self.predictor not in zoo.names():
            raise InputError(f"--predictor {self.predictor!r} is not 'best' or a zoo member ({', '.join(zoo.names())})")
        for flag in ("n_random", "top_k", "steps", "race"):
            if getattr(self, flag) < 1:
                raise InputError(f"--{flag.replace('_', '-')} must be at least 1, got {getattr(self, flag)}")
        for flag in ("rounds", "control", "confirm", "warmup"):
            if getattr(self, flag) < 0:
                raise InputError(f"--{flag.replace('_', '-')} must be at least 0, got {getattr(self, flag)}")
        if self.timeout <= 0:
            raise InputError(f"--timeout must be positive, got {self.timeout}")
        check_choice("--train-on", self.train_on, ("loop", "store"))
        check_choice("--device", self.device, ("cpu", "cuda"))
        check_choice("--searcher", self.searcher, SEARCHERS)
        self.make_searcher()
        if self.plot is not None:  # before the loop's minutes, not after them
            check_figure("--plot", self.plot)

    def make_searcher(self) -> Searcher:
        """The searcher each round runs, with its settings."""
        return make_searcher(self.searcher, self.seed,
                             {"n_samples": self.n_samples, "restarts": self.restarts, "lr": self.lr})


@dataclass(frozen=True)
class TuneResult:
    """What :func:`run` did."""

    summary: LoopSummary  # per-phase counts and bests, the arms compared
    plot: Optional[Path]  # the frontier figure (None with status, or where it could not be drawn)
    interrupted: bool  # stopped before the end (Ctrl-C, SIGTERM): run again to resume


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m perfzoo.tune",
        description="The closed loop: N random jobs, then R rounds of fit -> search -> launch the top k "
                    "through the harness. Resumable: run the same command again after a kill.")
    p.add_argument("--space", help=f"search space: a name or a .toml space file (default {TuneConfig.space})")
    p.add_argument("--store", required=True, metavar="DIR", help="record store the jobs are added to")
    p.add_argument("--n-random", type=int, help=f"random jobs before the first round (default {TuneConfig.n_random})")
    p.add_argument("--rounds", type=int, help=f"search rounds (default {TuneConfig.rounds})")
    p.add_argument("--top-k", type=int, help=f"jobs launched per round (default {TuneConfig.top_k})")
    p.add_argument("--searcher", choices=list(SEARCHERS),
                   help=f"searcher run on the predictor each round (default {TuneConfig.searcher})")
    p.add_argument("--predictor",
                   help="zoo member refitted each round, or 'best' (the leaderboard's best for --dataset); "
                        f"default {TuneConfig.predictor}")
    p.add_argument("--dataset", help=f"dataset whose best predictor 'best' means (default {TuneConfig.dataset})")
    p.add_argument("--no-failure", action="store_true",
                   help="do not fit the failure classifier (reward = predicted throughput only)")
    p.add_argument("--train-on", choices=["loop", "store"],
                   help="fit on the loop's own jobs (default) or on every record in the store")
    p.add_argument("--control", type=int, metavar="N",
                   help="extra random jobs after the rounds (e.g. rounds x top-k: random search with the "
                        "same number of jobs)")
    p.add_argument("--hand-tuned", action="store_true",
                   help="also run the FSDP default (every layer FULL_SHARD, the most memory, the largest local "
                        "batch that runs)")
    p.add_argument("--expert", action="store_true",
                   help="also run the expert heuristic (NO_SHARD the smallest layers while a memory estimate allows)")
    p.add_argument("--baseline", metavar="FILE",
                   help="your own baseline, for any space: a config (a JSON object), or a JSONL or CSV of configs "
                        "tried in order until one runs ok; raced with the others, and the champion's speedup over "
                        "it printed")
    p.add_argument("--race", type=int, metavar="K",
                   help=f"with --confirm: the race's candidates, each searched arm's K best configs by one run "
                        f"(default {TuneConfig.race})")
    p.add_argument("--confirm", type=int, metavar="N",
                   help="at the end, race the candidates: each measured twice more, then the better half of each "
                        "arm (and the baselines) until it has N race runs; each arm's champion is its finalist "
                        "with the best median of them (default 0: no race)")
    p.add_argument("--seed", type=int, help="seed of the random phase and the searcher")
    p.add_argument("--tag", help="sweep-id prefix (default tune-<space>-s<seed>)")
    p.add_argument("--n-samples", type=int,
                   help=f"searcher samples per restart (REINFORCE default {Reinforce.n_samples})")
    p.add_argument("--restarts", type=int, help=f"REINFORCE restarts (default {Reinforce.restarts})")
    p.add_argument("--lr", type=float, help=f"REINFORCE Adam learning rate (default {Reinforce.lr}, the paper's)")
    p.add_argument("--timeout", type=float, help="wall-clock limit per job in seconds "
                   f"(default {JOB_DEFAULTS.timeout_s:g}, as collect)")
    p.add_argument("--steps", type=int,
                   help=f"measured steps per job (default {JOB_DEFAULTS.steps}, collect's protocol)")
    p.add_argument("--warmup", type=int,
                   help=f"warm-up steps per job (default {JOB_DEFAULTS.warmup})")
    p.add_argument("--device", choices=["cpu", "cuda"])
    p.add_argument("--warm", action="store_true",
                   help="collect --warm: launch each torchrun job from a warm worker (how fsdp-cpu was collected)")
    add_command_arguments(p, ran_on=False)
    p.add_argument("--collect-arg", action="append", metavar="ARG",
                   help="one more argument for python -m perfzoo.collect (repeatable), e.g. --collect-arg=--batch-size=20")
    p.add_argument("--plot", metavar="PNG", help="frontier figure (default <store>/tune/<tag>-frontier.png)")
    p.add_argument("--status", action="store_true", help="print the loop's state and exit (launches nothing)")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    p.set_defaults(**field_defaults(TuneConfig))  # every default lives once, in TuneConfig
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point; returns the exit status (0 done, 1 interrupted or failed, 2 usage or input error)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)

    def body() -> int:
        result = run(config_from_args(TuneConfig, args))
        print(result.summary.table())
        if result.plot is not None:
            print(f"frontier plot: {result.plot}")
        if result.interrupted:
            print("perfzoo.tune: interrupted; run the same command again to resume", file=sys.stderr)
            return EXIT_INTERRUPTED
        return EXIT_DONE

    return guarded("perfzoo.tune", body)


def _space(config: TuneConfig) -> Space:
    """The space ``config`` tunes, checked against its baselines before anything is launched."""
    space = get(config.space)
    if not space.runnable:
        raise InputError(f"--space {space.name} is a space for search only ({space.description}); the harness "
                         "cannot run its configs")
    own = workloads.get(space.workload).baselines
    for flag, phase in (("hand_tuned", "baseline"), ("expert", "expert")):
        if not getattr(config, flag):
            continue
        if phase not in own:
            raise InputError(f"--{flag.replace('_', '-')}: no {flag.replace('_', '-')} baseline is defined for the "
                             f"{space.workload!r} workload of --space {space.name} (it defines "
                             f"{', '.join(map(repr, own)) or 'none'}); give your own with --baseline FILE")
        try:
            own[phase].ladder(SpaceCodec(space))
        except ValueError as exc:
            raise InputError(f"--{flag.replace('_', '-')}: {exc}") from None
    return space


def _baseline(config: TuneConfig, space: Space) -> list[dict]:
    """The configs of ``--baseline``, complete and checked against the space (a :class:`InputError`
    names the file's line of a config outside it)."""
    if config.baseline is None:
        return []
    out = []
    for where, raw in read_located(config.baseline, "--baseline"):
        try:
            out.append(space.validate(raw))
        except SpaceError as exc:
            raise InputError(f"--baseline {where}: {exc}") from None
    return out


def run(config: TuneConfig, launcher: Optional[Launcher] = None) -> TuneResult:
    """Run (or resume) the closed loop ``config`` describes, then draw its frontier figure and write
    its summary beside the plans (``<store>/tune/``); with ``config.status``, only its state (an
    existing store's: nothing is created). A :class:`InputError` names a bad field before anything
    is launched; :class:`~perfzoo.console.RunFailed` says why the loop cannot go on (e.g. every
    random job failed). ``launcher``: runs the jobs instead of the harness
    (:class:`~perfzoo.loop.CollectLauncher`). The loop's log goes to stderr."""
    space = _space(config)
    baseline = _baseline(config, space)
    if config.status and not (Path(config.store) / RECORDS_FILE).is_file():
        raise InputError(f"--store {config.store}: no record store there yet, so no state to show; "
                         "drop --status to start the loop")
    store = open_store(config.store, "--store")
    check_space(store.records(), space, "--store", config.store)
    if launcher is None:
        options = {"timeout": config.timeout, "steps": config.steps, "warmup": config.warmup,
                   "device": config.device, "warm": config.warm, **options_from_argv(config.collect_arg),
                   **{flag: getattr(config, flag) for flag in COMMAND_FLAGS if getattr(config, flag) is not None}}
        launcher = CollectLauncher(space.ref, store.path, options=options, progress=not config.no_progress)
    try:
        loop = ClosedLoop(space, store, launcher=launcher, n_random=config.n_random,
                          rounds=config.rounds, top_k=config.top_k, searcher=config.make_searcher(),
                          predictor=config.predictor, failure=not config.no_failure, seed=config.seed, tag=config.tag,
                          train_on=config.train_on, control=config.control, hand_tuned=config.hand_tuned,
                          expert=config.expert, baseline=baseline, confirm=config.confirm, race=config.race,
                          dataset=config.dataset, log=lambda s: print(s, file=sys.stderr, flush=True))
        loop.check_plans()
    except ValueError as exc:
        raise InputError(str(exc)) from None
    if config.status:
        return TuneResult(loop.summary(), None, False)
    interrupted = False
    try:
        summary = loop.run()
    except KeyboardInterrupt:
        interrupted = True
        summary = loop.summary()
    except RuntimeError as exc:  # e.g. every random job failed: nothing to fit on
        raise RunFailed(str(exc)) from None
    plot: Optional[Path] = Path(config.plot) if config.plot else loop.plan_dir / f"{loop.tag}-frontier.png"
    try:
        loop.frontier_figure(plot)
    except Exception as exc:  # a plot must never lose the run's result
        print(f"perfzoo.tune: could not draw the frontier plot: {exc}", file=sys.stderr)
        plot = None
    loop.plan_dir.mkdir(parents=True, exist_ok=True)
    (loop.plan_dir / f"{loop.tag}-summary.json").write_text(json.dumps(summary.to_dict(), indent=1, default=str))
    return TuneResult(summary, plot, interrupted)


if __name__ == "__main__":
    sys.exit(main())
