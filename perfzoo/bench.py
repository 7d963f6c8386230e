"""``python -m perfzoo.bench``: benchmark the predictor zoo and write the leaderboard.

Runs predictors x datasets x splits x seeds in parallel (joblib), caches every finished fit
under ``.perfzoo-cache/`` (a rerun computes only what changed) and writes ``leaderboard/``:
README.md, results.csv, figures/, best.json and the fitted best predictors (artifacts/).

Usage
-----
    python -m perfzoo.bench                 # the full run -> leaderboard/
    python -m perfzoo.bench --quick         # CI-sized (< 3 min on 2 cores) -> .perfzoo-cache/leaderboard-quick/
    python -m perfzoo.bench --launcher slurm --jobs 64 --partition cpu --time 30   # the fits as 64 Slurm jobs
    python -m perfzoo.bench --datasets vtrain-a100 --predictors lightgbm,catboost --splits random,scale --seeds 5
    python -m perfzoo.bench --predictors mypkg.models:MyPredictor --datasets vtrain-a100 --out my-results
    python -m perfzoo.bench --list-tasks                # the benchmark tasks, by id
    python -m perfzoo.bench --task vtrain-a100/scale/<hash> --predictors mypkg.models:MyPredictor
    python -m perfzoo.bench --train vtrain-a100 --test ground_truth_multi.csv --predictor best,hybrid --json
    python -m perfzoo.bench --train published-llm --test published-torchtitan --shots 0,1,3,10

Members are zoo names, import paths ``module:Class`` (a ``Predictor`` subclass, a scikit-learn
regressor, a factory) or names installed packages register (:mod:`perfzoo.zoo.plugin`); one from
outside the zoo that breaks the contract is refused before any fit, one line per problem, and the
README sets it beside every member the committed leaderboard (``--reference DIR``) scored on the
same tasks. Every number names its benchmark task (:mod:`perfzoo.evaluation.suite`):
``--list-tasks`` prints the tasks a run covers (``--json``: their definitions), ``--task ID`` runs
exactly one.

On a cluster (``--launcher slurm``): the fits not in the cache are dealt over ``--jobs`` Slurm jobs
(one array, submitted with submitit as ``collect`` submits its profiling jobs, sbatch's options by
the same flags); each job fits its share one after another and writes each result into the cache
(``--cache-dir``, on a file system the nodes share), where the leaderboard is made from as on one
machine; a job Slurm ends without results leaves its fits as errors in the leaderboard, fitted
again by the next run. Without ``--launcher`` nothing changes.

Cross-dataset (``--train A --test B``, names or file paths): fit on every successful job of A
that is not also a job of B (so ``--train published-llm --test published-torchtitan`` leaves the
torchtitan source out), score on every successful job of B: Kendall, MAPE, MdAPE, the median
predicted/measured and the coverage of the 80% interval. The members are the shipped pick
(``best``: A's member in the leaderboard's ``best.json``), ``roofline``, ``hybrid_roofline`` and a
few fast ones unless ``--predictor`` names others (``best`` among them). ``--shots 0,1,3,10``:
few-shot calibration, K jobs of B drawn by seed (``--shot-seeds`` draws each) join the training
data (:func:`perfzoo.zoo.calibrate.join`) and the rest of B is scored: one line per K and member.
``--json`` prints one JSON object per line instead of the table.

Exit status (every command's, :mod:`perfzoo.console`): 0 done (a member that fails is reported in the
leaderboard, not fatal), 1 interrupted, 2 a usage or input error (bad argument, unknown dataset,
missing file, an output folder that cannot be written).

Python API
----------
:func:`run` takes a :class:`BenchConfig` (one field per flag, the same defaults; a preset,
:data:`FULL` or :data:`QUICK`, fills in what it leaves out), writes the leaderboard and returns
the :class:`~perfzoo.evaluation.runner.Results`; :func:`cross` takes a :class:`CrossConfig`
(``--train/--test``, :mod:`perfzoo.evaluation.cross`) and returns one row per shots count and
member; the presets live in :mod:`perfzoo.evaluation.presets`::

    from perfzoo.bench import BenchConfig, run
    results = run(BenchConfig(datasets=["fsdp-cpu"], predictors=["ridge"], splits=["random"], seeds=2,
                              out="/tmp/lb", no_artifacts=True, no_figures=True))
    results.frame[["predictor", "split", "kendall"]]

    from perfzoo.evaluation.cross import CrossConfig, cross
    rows = cross(CrossConfig(train="published-llm", test="published-torchtitan", predictors=["best"], shots=(0, 3)))
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Sequence

import pandas as pd

from harness.environment import cpu_cores
from harness.sbatch import SlurmOptions
from harness.sbatch import add_arguments as add_slurm_arguments
from harness.slurm import SlurmError
from perfzoo import zoo
from perfzoo.console import (EXIT_DONE, EXIT_USAGE, DataError, InputError, RunFailed, check_choice, check_writable_folder,
                             config_from_args, field_defaults, guarded, spelled_call)
from perfzoo.datasets.dataset import Dataset
from perfzoo.evaluation import artifacts, hardware, leaderboard, runner, transfer
from perfzoo.evaluation.cross import CrossConfig, cross
from perfzoo.evaluation.presets import FULL, QUICK, BenchPreset, covered, member_specs, notes
from perfzoo.evaluation.report import run_context
from perfzoo.evaluation.suite import BenchmarkTask, parse_id
from perfzoo.evaluation.tasks import DEFAULT_CACHE_DIR
from perfzoo.evaluation.terminal import print_cross, print_headline, print_tasks
from perfzoo.zoo.best import leaderboard_dir
from perfzoo.zoo.plugin import ContractError

SPLITS = ("random", "temporal", "scale", "node", "group", "curve", "transfer")
SLURM_JOBS = 32  # with --launcher slurm: the Slurm jobs a run's fits are dealt over, unless --jobs says


@dataclass(frozen=True)
class BenchConfig:
    """One benchmark run, as :func:`run` takes it; ``python -m perfzoo.bench`` translates its
    flags onto it field for field. ``None`` means the preset's value.

    >>> BenchConfig(splits=["random", "sideways"])
    Traceback (most recent call last):
    ...
    perfzoo.console.InputError: unknown split sideways; choose from random, temporal, scale, node, group, curve, transfer
    """

    quick: bool = False  # the CI-sized preset (QUICK) instead of the full run (FULL)
    datasets: Optional[list[str]] = None  # names or paths (default: the preset's that are available)
    predictors: Optional[list[str]] = None  # zoo members (default: the preset's); named ones run everywhere
    splits: Optional[list[str]] = None  # split kinds from SPLITS (default: the preset's)
    seeds: Optional[int] = None  # seeds per split (default: the preset's)
    curve_seeds: Optional[int] = None  # seeds per learning-curve size (default: the preset's)
    curve_sizes: Optional[tuple[int, ...]] = None  # learning-curve training sizes (default: the preset's)
    out: Optional[str] = None  # the leaderboard folder (default: the preset's)
    jobs: Optional[int] = None  # parallel processes (default: all cores)
    cache_dir: str = DEFAULT_CACHE_DIR  # the result cache
    no_cache: bool = False  # neither read nor write the cache
    no_figures: bool = False  # skip the PNG figures
    no_artifacts: bool = False  # do not fit and save the best predictors
    refit_shipped: bool = False  # only fit the shipped predictors again where their data changed (no benchmark)
    external_dir: Optional[str] = None  # the external-data directory (default: $PERFZOO_EXTERNAL_DATA, ...)
    quiet: bool = False  # no progress bar
    task: Optional[str] = None  # run exactly this benchmark task (an id --list-tasks prints)
    reference: Optional[str] = None  # the leaderboard whose rows of the same tasks stand beside your members'
    launcher: str = "local"  # local | slurm: the fits as `jobs` Slurm jobs (default SLURM_JOBS), submitit
    slurm: SlurmOptions = field(default_factory=SlurmOptions)  # with launcher='slurm': what each job asks for

    def __post_init__(self):
        for flag, names in (("--predictors", self.predictors), ("--datasets", self.datasets)):
            twice = sorted({n for n in names or () if list(names).count(n) > 1})
            if twice:
                raise InputError(f"{flag} names {', '.join(twice)} more than once: keep one of each")
        check_choice("--launcher", self.launcher, ("local", "slurm"))
        self.slurm_jobs()  # a Slurm option without --launcher slurm, or a bad one, is named now
        bad = [s for s in self.splits or () if s not in SPLITS]
        if bad:
            raise InputError(f"unknown split {', '.join(bad)}; choose from {', '.join(SPLITS)}")
        if self.task is not None:
            try:
                parse_id(self.task)
            except ValueError as exc:
                raise InputError(f"--task {exc}") from None
            if self.splits:
                raise InputError("--task names its split; leave out --splits")
        for flag, value in (("--seeds", self.seeds), ("--curve-seeds", self.curve_seeds)):
            if value is not None and value < 1:
                raise InputError(f"{flag} must be at least 1, got {value}")
        small = [v for v in self.curve_sizes or () if v < 2]
        if small:
            raise InputError(f"--curve-sizes {small[0]} is not a training-set size (a whole number >= 2)")
        check_writable_folder("--out", self.out_dir)  # before minutes of fitting, not after them
        if not self.no_cache:
            check_writable_folder("--cache-dir", self.cache_dir)

    def slurm_jobs(self) -> Optional[runner.Slurm]:
        """Where the fits go with ``launcher='slurm'`` (None: this machine's processes); a
        :class:`InputError` names a Slurm option given without it, or a bad one."""
        try:
            options = self.slurm.requested(self.launcher, per_node=False)
        except ValueError as exc:
            raise InputError(str(exc)) from None
        if options is None:
            return None
        return runner.Slurm(options, str(Path(options.folder or Path(self.cache_dir) / "slurm").resolve()))

    @property
    def settings(self) -> dict[str, Any]:
        """What defines the run's tasks besides the data and the split: the preset's seeds and
        learning-curve sizes, but for those given (:meth:`~perfzoo.evaluation.presets.BenchPreset.settings`)."""
        return self.preset.settings(self.seeds, self.curve_seeds, self.curve_sizes)

    @property
    def preset(self) -> BenchPreset:
        """What the fields left at None take: :data:`QUICK` or :data:`FULL`."""
        return QUICK if self.quick else FULL

    @property
    def out_dir(self) -> Path:
        """The leaderboard folder the run writes."""
        return Path(self.out or self.preset.out)


def _csv(text: str) -> list[str]:
    """An argparse type: comma-separated names."""
    return [t.strip() for t in text.split(",") if t.strip()]


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m perfzoo.bench",
        description="Benchmark the predictor zoo on every dataset and split; write the leaderboard. "
                    "With --train/--test: fit on one dataset, score on another.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Examples:\n"
               "  python -m perfzoo.bench --quick\n"
               "  python -m perfzoo.bench --datasets vtrain-a100 --predictors lightgbm,hybrid --splits random,scale\n"
               "  python -m perfzoo.bench --train vtrain-a100 --test multi.csv --predictor best,hybrid --json\n"
               "  python -m perfzoo.bench --train published-llm --test published-torchtitan --shots 0,1,3,10")
    p.add_argument("--quick", action="store_true",
                   help="CI-sized run (a few fast predictors, 3 seeds, small datasets; < 3 min on 2 cores); "
                        f"writes {QUICK.out}/ unless --out is given")
    p.add_argument("--datasets", type=_csv, metavar="A,B",
                   help="datasets (names or paths), comma-separated (default: all)")
    p.add_argument("--predictors", "--predictor", type=_csv, metavar="X,Y", action="extend",
                   help="zoo members (perfzoo.zoo.names()), import paths module:Class (your Predictor subclass, "
                        "a scikit-learn regressor such as sklearn.ensemble:ExtraTreesRegressor, or a factory) or "
                        "the names installed packages register (entry points 'perfzoo.predictors'), comma-separated "
                        "or repeated (default: every zoo member)")
    p.add_argument("--splits", type=_csv, metavar="S,T", help=f"split kinds from {', '.join(SPLITS)} (default: all)")
    p.add_argument("--seeds", type=_seed_count, metavar="N",
                   help=f"seeds per split (default: {FULL.seeds}; quick: {QUICK.seeds})")
    p.add_argument("--curve-seeds", type=_seed_count, metavar="N",
                   help=f"seeds per learning-curve size (default: {FULL.curve_seeds})")
    p.add_argument("--curve-sizes", type=_sizes, metavar="25,50,...", help="learning-curve training sizes")
    p.add_argument("--out", metavar="DIR", help="leaderboard folder (default: leaderboard/)")
    p.add_argument("--jobs", "-j", type=int, metavar="N",
                   help=f"parallel processes (default: all cores); with --launcher slurm, the Slurm jobs the fits "
                        f"are dealt over (default {SLURM_JOBS})")
    p.add_argument("--cache-dir", metavar="DIR", help=f"result cache (default: {BenchConfig.cache_dir}/)")
    p.add_argument("--no-cache", action="store_true", help="neither read nor write the cache")
    p.add_argument("--no-figures", action="store_true", help="skip the PNG figures")
    p.add_argument("--no-artifacts", action="store_true", help="do not fit and save the best predictors")
    p.add_argument("--refit-shipped", action="store_true",
                   help="run no benchmark: fit each shipped predictor again on its dataset where the data changed "
                        "since it was fitted (same member, scores as they were; best.json says so)")
    p.add_argument("--external-dir", metavar="DIR", help="the external-data directory")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bar")
    p.add_argument("--list-tasks", action="store_true",
                   help="print the benchmark tasks the run would cover (id, partitions, seeds, rows) and stop; "
                        "with --json one definition per line")
    p.add_argument("--task", metavar="ID", help="run exactly this benchmark task (an id --list-tasks prints)")
    p.add_argument("--reference", metavar="DIR",
                   help="the leaderboard whose rows of the same tasks the README sets beside members from outside "
                        "the zoo (default: leaderboard/)")
    p.add_argument("--launcher", choices=["local", "slurm"],
                   help="local (default): fit on this machine's cores; slurm: fit as --jobs Slurm jobs (default "
                        f"{SLURM_JOBS}) through submitit, each writing its results into the cache")
    add_slurm_arguments(p.add_argument_group("Slurm (with --launcher slurm; sbatch's options of the same names)"),
                        per_node=False, helps={
                            "cpus_per_task": "cores per job (default 1; a job fits its share one after another)",
                            "time_min": "Slurm time limit per job in minutes (default 60)",
                            "mem_gb": "memory per job in GiB (sbatch --mem)",
                            "array_parallelism": "jobs running at once (default 256)",
                            "folder": "job files and logs, on a file system the nodes share, as the cache must be "
                                      "(default: CACHE_DIR/slurm)"})
    p.add_argument("--train", metavar="A", help="cross-dataset: fit on this dataset (name or path)")
    p.add_argument("--test", metavar="B", help="cross-dataset: score on this dataset (name or path)")
    p.add_argument("--shots", type=_shots, metavar="0,1,3,10",
                   help="cross-dataset: few-shot calibration, this many jobs of --test join the training data "
                        f"(default: {CrossConfig.shots[0]})")
    p.add_argument("--shots-within", action="store_true",
                   help="cross-dataset: draw the shots inside each group of --test (same model shape, accelerator, "
                        "precision, task, framework); they anchor the member, the group's other rows are scored "
                        "(groups of K rows or fewer are skipped and counted)")
    p.add_argument("--shot-seeds", type=_seed_count, metavar="N",
                   help=f"cross-dataset: draws of the shots per count (default: {CrossConfig.shot_seeds})")
    p.add_argument("--leaderboard", metavar="DIR",
                   help="cross-dataset: the leaderboard whose best.json names --predictor best (default: leaderboard/)")
    p.add_argument("--json", action="store_true", help="cross-dataset and --list-tasks: one JSON object per line")
    # every default lives once, in the config dataclasses
    p.set_defaults(**{**field_defaults(CrossConfig), **field_defaults(BenchConfig)})
    return p


def _seed_count(text: str) -> int:
    """An argparse type: a number of seeds, at least 1."""
    if not text.lstrip("-").isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: give a number of seeds >= 1")
    return int(text)


def _shots(text: str) -> tuple[int, ...]:
    """An argparse type: ``--shots`` as whole numbers >= 0, naming a bad value."""
    counts = []
    for v in _csv(text):
        if not v.isdigit():
            raise argparse.ArgumentTypeError(f"{v!r} is not a number of jobs (a whole number >= 0)")
        counts.append(int(v))
    return tuple(counts)


def _sizes(text: str) -> tuple[int, ...]:
    """An argparse type: ``--curve-sizes`` as whole numbers >= 2, naming a bad value."""
    sizes = []
    for v in _csv(text):
        if not v.isdigit() or int(v) < 2:
            raise argparse.ArgumentTypeError(f"{v!r} is not a training-set size (a whole number >= 2)")
        sizes.append(int(v))
    return tuple(sizes)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point; returns the exit status (0 done, 1 interrupted or failed, 2 usage or input error)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    return guarded("perfzoo bench", lambda: _main(argv))


def _main(argv: list[str]) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if (args.train or args.test) and not (args.train and args.test):
        parser.error("--train and --test go together")
    if args.train:
        cross_config = config_from_args(CrossConfig, args)
        print_cross(cross(cross_config), cross_config)
        return EXIT_DONE
    given = [flag for flag in ("--shots", "--shots-within", "--shot-seeds", "--leaderboard", "--json") if flag in argv
             and not (flag == "--json" and args.list_tasks)]
    if given:
        parser.error(f"{given[0]} goes with --train and --test")
    config = config_from_args(BenchConfig, args)
    command = " ".join(["python -m perfzoo.bench", *map(shlex.quote, argv)])
    try:
        if args.list_tasks:
            print_tasks(tasks(config), args.json)
            return EXIT_DONE
        if config.refit_shipped:
            names = artifacts.refit_shipped(_covered(config)[0], config.out_dir, run_context(command, wall_time_s=None))
            print(f"refitted: {', '.join(names) or 'none (every shipped predictor was fitted on its data as it is)'}")
            return EXIT_DONE
        t0 = time.perf_counter()
        results = run(config, command)
    except ContractError as exc:  # one line per problem
        for line in exc.problems:
            print(f"perfzoo bench: error: {line}", file=sys.stderr)
        return EXIT_USAGE
    print_headline(results, config.out_dir, time.perf_counter() - t0)
    return EXIT_DONE


# --- the benchmark ------------------------------------------------------------------------


def tasks(config: BenchConfig) -> list[tuple[Dataset, BenchmarkTask]]:
    """The benchmark tasks a run of ``config`` covers, each with its dataset (``--list-tasks``)."""
    return _covered(config)[1]


def _covered(config: BenchConfig):
    """The datasets, the tasks and the splits left out of a run of ``config``
    (:func:`perfzoo.evaluation.presets.covered`)."""
    return covered(config.preset, config.settings, config.datasets, config.splits, config.task, config.external_dir)


def run(config: BenchConfig, command: Optional[str] = None) -> runner.Results:
    """Fit and score the predictors ``config`` names on its datasets and splits (``config.task``:
    on that task only), write the leaderboard into ``config.out_dir`` and return the scores.
    ``command`` is the leaderboard's record of what ran (default: this call, spelled out)."""
    preset = config.preset
    t0 = time.perf_counter()
    datasets, defined, skipped = _covered(config)
    predictors = config.predictors or None
    member_names = predictors or preset.predictors or list(zoo.names())
    member_names = [n for n in member_names if n in zoo.names() or predictors]  # quick: skip absent members
    specs = member_specs(member_names, preset, explicit=bool(predictors))
    splits = list(dict.fromkeys(bt.kind for _, bt in defined)) if config.task else config.splits or preset.splits
    settings = config.settings
    out = config.out_dir
    yours = [spec.display for spec in specs if spec.name not in zoo.REGISTRY]
    beside = _reference(config, out) if yours or config.reference else None
    slurm = config.slurm_jobs()
    jobs = config.jobs or (SLURM_JOBS if slurm else cpu_cores())
    print(f"perfzoo bench: {len(datasets)} datasets ({', '.join(d.name for d in datasets)}), "
          f"{len(specs)} predictors, {len(defined)} tasks ({config.task or 'splits ' + ', '.join(splits)}), "
          f"{len(defined[0][1].seeds) if config.task else len(settings['seeds'])} seeds, {jobs} "
          f"{'Slurm jobs (' + slurm.folder + ')' if slurm else 'jobs'}", file=sys.stderr)
    # the commit that runs, taken before anything is written (the outputs are tracked files of the checkout)
    context = run_context(command or spelled_call("perfzoo.bench.run", config), wall_time_s=None)
    try:
        results = runner.run_defined(defined, specs, jobs=jobs, cache_dir=None if config.no_cache else config.cache_dir,
                                     progress=not config.quiet, skipped=skipped, slurm=slurm)
    except SlurmError as exc:
        raise InputError(str(exc)) from None
    transfers = {bt.dataset: bt.id for _, bt in defined if bt.kind == "transfer"}
    if transfers:
        transfer.write([ds for ds in datasets if ds.name in transfers], [spec.name for spec in specs], out, transfers)
    if results.frame.empty:
        if transfers:
            return results
        why = "; ".join(f"{s['dataset']} {s['split']}: {s['reason']}" for s in results.skipped[:3])
        raise DataError(f"nothing to score: {why or 'no task ran'} (measure more jobs, or choose other splits)")
    if len(results.errors) == len(results.frame):  # every fit raised: no leaderboard to write, the real error to say
        first = results.errors[0]
        raise RunFailed(f"every fit failed ({len(results.errors)} of {len(results.frame)}); the first, "
                        f"{first['predictor']} on {first['dataset']} ({first['split']} split): {first['error']}")
    context["notes"] = notes(specs, splits, settings, preset)
    context["wall_time_s"] = time.perf_counter() - t0  # before artifacts: they are written below
    leaderboard.write(results, datasets, specs, out, context, figures=not config.no_figures,
                      artifacts=not config.no_artifacts, beside=beside, yours=yours)
    if not config.task:  # after best.json: each card's shipped pick is scored on the other card
        hardware.write(datasets, [s.name for s in specs if s.name in zoo.REGISTRY and s.name not in preset.heavy], out)
    return results


def _reference(config: BenchConfig, out: Path) -> Optional[tuple[str, pd.DataFrame]]:
    """``(where, results)`` of the leaderboard a run's own members are set beside (``--reference``,
    default the checkout's); None where there is none or it is the folder being written."""
    folder = Path(config.reference) if config.reference else leaderboard_dir()
    table = folder / "results.csv"
    if not table.is_file():
        if config.reference:
            raise InputError(f"--reference {folder}: no results.csv there (give a folder python -m perfzoo.bench wrote)")
        return None
    if folder.resolve() == out.resolve():
        return None
    return str(folder), pd.read_csv(table)


if __name__ == "__main__":
    sys.exit(main())
