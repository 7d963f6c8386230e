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
the FSDP default and the expert heuristic, each arm's 3 best raced over 4 more runs), as
``scripts/tune_seeds.sh`` runs it::

    python -m perfzoo.tune --space fsdp-ads-v2 --store runs/tune --n-random 100 --rounds 3 --top-k 20 \\
        --control 60 --hand-tuned --expert --confirm 4 --race 3 --warm --plot runs/tune/frontier.png

A tiny end-to-end check into a scratch store::

    python -m perfzoo.tune --space fsdp-ads-v2 --store /tmp/tune-check --n-random 6 --rounds 1 --top-k 2
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Optional, Sequence

from perfzoo import zoo
from perfzoo._cli import UsageError, guarded
from perfzoo.collect import JOB_DEFAULTS, open_store, options_from_argv
from perfzoo.loop import ClosedLoop, CollectLauncher, expert_ladder, frontier_figure, hand_tuned_ladder
from perfzoo.search import SEARCHERS, Reinforce, Searcher
from perfzoo.search.cli import make_searcher
from perfzoo.spaces import Space, get


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m perfzoo.tune",
        description="The closed loop: N random jobs, then R rounds of fit -> search -> launch the top k "
                    "through the harness. Resumable: run the same command again after a kill.")
    p.add_argument("--space", default="fsdp-ads", help="search space: a name or a .toml space file (default fsdp-ads)")
    p.add_argument("--store", required=True, metavar="DIR", help="record store the jobs are added to")
    p.add_argument("--n-random", type=int, default=100, help="random jobs before the first round (default 100)")
    p.add_argument("--rounds", type=int, default=3, help="search rounds (default 3)")
    p.add_argument("--top-k", type=int, default=20, help="jobs launched per round (default 20)")
    p.add_argument("--searcher", default="reinforce", choices=list(SEARCHERS),
                   help="searcher run on the predictor each round (default reinforce)")
    p.add_argument("--predictor", default="lightgbm",
                   help="zoo member refitted each round, or 'best' (the leaderboard's best for --dataset); "
                        "default lightgbm")
    p.add_argument("--dataset", default="fsdp-cpu", help="dataset whose best predictor 'best' means")
    p.add_argument("--no-failure", action="store_true",
                   help="do not fit the failure classifier (reward = predicted throughput only)")
    p.add_argument("--train-on", choices=["loop", "store"], default="loop",
                   help="fit on the loop's own jobs (default) or on every record in the store")
    p.add_argument("--control", type=int, default=0, metavar="N",
                   help="extra random jobs after the rounds (e.g. rounds x top-k: random search with the "
                        "same number of jobs)")
    p.add_argument("--hand-tuned", action="store_true",
                   help="also run the FSDP default (every layer FULL_SHARD, the most memory, the largest local "
                        "batch that runs)")
    p.add_argument("--expert", action="store_true",
                   help="also run the expert heuristic (NO_SHARD the smallest layers while a memory estimate allows)")
    p.add_argument("--race", type=int, default=3, metavar="K",
                   help="with --confirm: re-measure each arm's K best configs, not only its best (default 3)")
    p.add_argument("--confirm", type=int, default=0, metavar="N",
                   help="at the end, measure each arm's --race best configs N more times; each arm's champion is "
                        "its best median (--confirm 4: medians of 5; default 0)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random phase and the searcher")
    p.add_argument("--tag", help="sweep-id prefix (default tune-<space>-s<seed>)")
    p.add_argument("--n-samples", type=int,
                   help=f"searcher samples per restart (REINFORCE default {Reinforce.n_samples})")
    p.add_argument("--restarts", type=int, help=f"REINFORCE restarts (default {Reinforce.restarts})")
    p.add_argument("--lr", type=float, help=f"REINFORCE Adam learning rate (default {Reinforce.lr}, the paper's)")
    p.add_argument("--timeout", type=float, default=JOB_DEFAULTS.timeout_s, help="wall-clock limit per job in seconds "
                   f"(default {JOB_DEFAULTS.timeout_s:g}, as collect)")
    p.add_argument("--steps", type=int, default=JOB_DEFAULTS.steps,
                   help=f"measured steps per job (default {JOB_DEFAULTS.steps}, collect's protocol)")
    p.add_argument("--warmup", type=int, default=JOB_DEFAULTS.warmup,
                   help=f"warm-up steps per job (default {JOB_DEFAULTS.warmup})")
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    p.add_argument("--warm", action="store_true",
                   help="collect --warm: launch each torchrun job from a warm worker (how fsdp-cpu was collected)")
    p.add_argument("--command", metavar="TEMPLATE",
                   help="your own job: the launch command of a .toml space (see python -m perfzoo.collect --help)")
    p.add_argument("--metric-parser", choices=["file", "torchtitan"], help="how the command reports (collect's)")
    p.add_argument("--metric-regex", metavar="REGEX", help="metrics from output lines matching REGEX (collect's)")
    p.add_argument("--throughput-unit", metavar="UNIT", help="what the command's throughput counts (collect's)")
    p.add_argument("--collect-arg", action="append", default=[], metavar="ARG",
                   help="one more argument for python -m perfzoo.collect (repeatable), e.g. --collect-arg=--batch-size=20")
    p.add_argument("--plot", metavar="PNG", help="frontier figure (default <store>/tune/<tag>-frontier.png)")
    p.add_argument("--status", action="store_true", help="print the loop's state and exit (launches nothing)")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point; returns the exit status (0 done, 1 interrupted or failed, 2 usage error)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    return guarded("perfzoo.tune", lambda: _run(args))


def _check(args) -> tuple[Space, Searcher]:
    """Every argument checked before anything is launched; a :class:`UsageError` names the first bad one."""
    space = get(args.space)
    if not space.runnable:
        raise UsageError(f"--space {space.name} is a space for search only ({space.description}); the harness "
                         "cannot run its configs")
    if args.predictor != "best" and args.predictor not in zoo.names():
        raise UsageError(f"--predictor {args.predictor!r} is not 'best' or a zoo member ({', '.join(zoo.names())})")
    for flag in ("n_random", "top_k", "steps", "race"):
        value = getattr(args, flag)
        if value is not None and value < 1:
            raise UsageError(f"--{flag.replace('_', '-')} must be at least 1, got {value}")
    for flag in ("rounds", "control", "confirm", "warmup"):
        if getattr(args, flag) < 0:
            raise UsageError(f"--{flag.replace('_', '-')} must be at least 0, got {getattr(args, flag)}")
    if args.timeout <= 0:
        raise UsageError(f"--timeout must be positive, got {args.timeout}")
    searcher = make_searcher(args.searcher, args.seed,
                             {"n_samples": args.n_samples, "restarts": args.restarts, "lr": args.lr})
    for flag, ladder in (("hand_tuned", hand_tuned_ladder), ("expert", expert_ladder)):
        if getattr(args, flag):
            try:
                ladder(space)
            except ValueError as exc:
                raise UsageError(f"--{flag.replace('_', '-')}: {exc}") from None
    return space, searcher


def _run(args) -> int:
    space, searcher = _check(args)
    store = open_store(args.store, "--store")
    options = {"timeout": args.timeout, "steps": args.steps, "warmup": args.warmup, "device": args.device,
               "warm": args.warm, **options_from_argv(args.collect_arg),
               **{flag: getattr(args, flag) for flag in ("command", "metric_parser", "metric_regex", "throughput_unit")
                  if getattr(args, flag) is not None}}
    launcher = CollectLauncher(space.ref, store.path, options=options, progress=not args.no_progress)
    try:
        loop = ClosedLoop(space, store, launcher=launcher, n_random=args.n_random,
                          rounds=args.rounds, top_k=args.top_k, searcher=searcher, predictor=args.predictor,
                          failure=not args.no_failure, seed=args.seed, tag=args.tag, train_on=args.train_on,
                          control=args.control, hand_tuned=args.hand_tuned, expert=args.expert,
                          confirm=args.confirm, race=args.race,
                          dataset=args.dataset, log=lambda s: print(s, file=sys.stderr, flush=True))
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if args.status:
        print(loop.summary().table())
        return 0
    interrupted = False
    try:
        summary = loop.run()
    except KeyboardInterrupt:
        interrupted = True
        summary = loop.summary()
    except RuntimeError as exc:  # e.g. every random job failed: nothing to fit on
        print(f"perfzoo.tune: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 1
    print(summary.table())
    plot = Path(args.plot) if args.plot else loop.plan_dir / f"{loop.tag}-frontier.png"
    try:
        frontier_figure(loop, plot)
        print(f"frontier plot: {plot}")
    except Exception as exc:  # a plot must never lose the run's result
        print(f"perfzoo.tune: could not draw the frontier plot: {exc}", file=sys.stderr)
    loop.plan_dir.mkdir(parents=True, exist_ok=True)
    (loop.plan_dir / f"{loop.tag}-summary.json").write_text(json.dumps(summary.to_dict(), indent=1, default=str))
    if interrupted:
        print("perfzoo.tune: interrupted; run the same command again to resume", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
