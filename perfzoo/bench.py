"""``python -m perfzoo.bench``: benchmark the predictor zoo and write the leaderboard.

Runs predictors x datasets x splits x seeds in parallel (joblib), caches every finished fit
under ``.perfzoo-cache/`` (a rerun computes only what changed) and writes ``leaderboard/``:
README.md, results.csv, figures/, best.json and the fitted best predictors (artifacts/).

Usage
-----
    python -m perfzoo.bench                 # the full run -> leaderboard/
    python -m perfzoo.bench --quick         # CI-sized (< 3 min on 2 cores) -> .perfzoo-cache/leaderboard-quick/
    python -m perfzoo.bench --datasets vtrain-a100 --predictors lightgbm,catboost --splits random,scale --seeds 5
    python -m perfzoo.bench --train vtrain-a100 --test ground_truth_multi.csv --predictor hybrid --json

Cross-dataset (``--train A --test B``): fit on every successful job of A, score on every
successful job of B (names or file paths); ``--json`` prints one JSON object per predictor.

Exit status (every command's, :mod:`perfzoo._cli`): 0 done (a member that fails is reported in the
leaderboard, not fatal), 1 interrupted, 2 a usage or input error (bad argument, unknown dataset,
missing file, an output folder that cannot be written).

Python API
----------
:func:`run` takes a :class:`BenchConfig` (one field per flag, the same defaults; a preset,
:data:`FULL` or :data:`QUICK`, fills in what it leaves out), writes the leaderboard and returns
the :class:`~perfzoo.evaluation.runner.Results`; :func:`cross` is ``--train/--test``::

    from perfzoo.bench import BenchConfig, run
    results = run(BenchConfig(datasets=["fsdp-cpu"], predictors=["ridge"], splits=["random"], seeds=2,
                              out="/tmp/lb", no_artifacts=True, no_figures=True))
    results.frame[["predictor", "split", "kendall"]]
"""

from __future__ import annotations

import argparse
import json
import math
import shlex
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Sequence

from harness.environment import cpu_cores
from perfzoo import zoo
from perfzoo._cli import UsageError, config_from_args, field_defaults, guarded, spelled_call
from perfzoo.dataset import Dataset
from perfzoo.datasets import list_datasets, load_dataset
from perfzoo.evaluation import leaderboard, runner, transfer
from perfzoo.evaluation.ranking import best_per_split, summarize
from perfzoo.evaluation.report import run_context
from perfzoo.evaluation.runner import cross_evaluate
from perfzoo.evaluation.tasks import DEFAULT_CACHE_DIR, PredictorSpec

SPLITS = ("random", "temporal", "scale", "group", "curve", "transfer")


@dataclass(frozen=True)
class BenchPreset:
    """What a run covers unless its :class:`BenchConfig` says otherwise (:data:`FULL`,
    :data:`QUICK`). ``heavy`` caps the seeds of slow members and keeps them out of the learning
    curves; ``curve_predictors`` are the members drawn in learning curves."""

    datasets: Optional[list[str]]  # None: every dataset perfzoo lists
    predictors: Optional[list[str]]  # None: every zoo member
    splits: list[str]
    seeds: int
    curve_sizes: tuple[int, ...]
    curve_seeds: int
    curve_datasets: Optional[list[str]]
    curve_predictors: Optional[list[str]]
    heavy: dict[str, "Heavy"] = field(default_factory=dict)
    out: str = "leaderboard"
    max_rows_for_all: Optional[int] = None  # quick: skip datasets larger than this


@dataclass(frozen=True)
class Heavy:
    """A member too slow for every seed of every split on 2 cores: at most ``seeds`` seeds,
    only the split ``kinds`` named, only the ``datasets`` named (None: all); never in curves."""

    seeds: int
    kinds: tuple[str, ...] = ("random", "temporal", "scale")
    datasets: Optional[tuple[str, ...]] = None


HEAVY = {
    # the paper's ads predictor exactly (10 x 1600-wide MLPs, 200 epochs, pairwise loss): about
    # 2 s per epoch per model on 1,000 rows on one shared core, i.e. tens of minutes per fit on
    # the large datasets; it runs once, on the random split, where its paper numbers apply
    "mlp_rank_ensemble": Heavy(1, ("random",), ("fsdp-cpu", "llm-cpu", "published-torchtitan")),
}

FULL = BenchPreset(
    datasets=None,
    predictors=None,
    splits=["random", "temporal", "scale", "group", "curve", "transfer"],
    seeds=5,
    curve_sizes=(25, 50, 100, 150, 200, 300, 500, 750, 1000),
    curve_seeds=10,
    curve_datasets=["vtrain-a100", "published-llm", "fsdp-cpu", "llm-cpu"],
    curve_predictors=["ridge", "gbr", "lightgbm", "catboost", "hybrid", "gp"],
    heavy=HEAVY,
    out="leaderboard",
)

QUICK = BenchPreset(
    datasets=["vtrain-a100", "published-torchtitan", "published-llm", "fsdp-cpu", "llm-cpu"],
    predictors=["constant", "analytic", "ridge", "knn", "lightgbm", "failure"],
    splits=["random", "temporal", "scale", "curve"],
    seeds=3,
    curve_sizes=(25, 50, 100, 200),
    curve_seeds=3,
    curve_datasets=["vtrain-a100"],
    curve_predictors=["ridge", "lightgbm"],
    heavy={},
    out=str(Path(DEFAULT_CACHE_DIR) / "leaderboard-quick"),
    max_rows_for_all=5000,
)



@dataclass(frozen=True)
class BenchConfig:
    """One benchmark run, as :func:`run` takes it; ``python -m perfzoo.bench`` translates its
    flags onto it field for field. ``None`` means the preset's value.

    >>> BenchConfig(splits=["random", "sideways"])
    Traceback (most recent call last):
    ...
    ValueError: unknown split sideways; choose from random, temporal, scale, group, curve, transfer
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
    external_dir: Optional[str] = None  # the external-data directory (default: $PERFZOO_EXTERNAL_DATA, ...)
    quiet: bool = False  # no progress bar

    def __post_init__(self):
        bad = [s for s in self.splits or () if s not in SPLITS]
        if bad:
            raise ValueError(f"unknown split {', '.join(bad)}; choose from {', '.join(SPLITS)}")
        for flag, value in (("--seeds", self.seeds), ("--curve-seeds", self.curve_seeds)):
            if value is not None and value < 1:
                raise UsageError(f"{flag} must be at least 1, got {value}")
        small = [v for v in self.curve_sizes or () if v < 2]
        if small:
            raise UsageError(f"--curve-sizes {small[0]} is not a training-set size (a whole number >= 2)")

    @property
    def preset(self) -> BenchPreset:
        """What the fields left at None take: :data:`QUICK` or :data:`FULL`."""
        return QUICK if self.quick else FULL

    @property
    def out_dir(self) -> Path:
        """The leaderboard folder the run writes."""
        return Path(self.out or self.preset.out)


# default members for --train/--test (fast, and the ones built to extrapolate)
CROSS_DEFAULT = ["constant", "analytic", "ridge", "lightgbm", "catboost", "gbr", "hybrid"]
JSON_FIELDS = ("predictor", "train", "test", "n_train", "n_test", "kendall", "spearman", "pearson",
               "grouped_kendall", "top1_regret", "top5_regret", "top10_regret", "precision_at_1",
               "precision_at_5", "precision_at_10", "mape", "fit_time_s", "predict_time_s", "error")


def _csv(text: str) -> list[str]:
    """An argparse type: comma-separated names."""
    return [t.strip() for t in text.split(",") if t.strip()]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m perfzoo.bench",
        description="Benchmark the predictor zoo on every dataset and split; write the leaderboard. "
                    "With --train/--test: fit on one dataset, score on another.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Examples:\n"
               "  python -m perfzoo.bench --quick\n"
               "  python -m perfzoo.bench --datasets vtrain-a100 --predictors lightgbm,hybrid --splits random,scale\n"
               "  python -m perfzoo.bench --train vtrain-a100 --test multi.csv --predictor hybrid --json")
    p.add_argument("--quick", action="store_true",
                   help="CI-sized run (a few fast predictors, 3 seeds, small datasets; < 3 min on 2 cores); "
                        f"writes {QUICK.out}/ unless --out is given")
    p.add_argument("--datasets", type=_csv, metavar="A,B",
                   help="datasets (names or paths), comma-separated (default: all)")
    p.add_argument("--predictors", "--predictor", type=_csv, metavar="X,Y", action="extend",
                   help="zoo members, comma-separated or repeated (default: all; see perfzoo.zoo.names())")
    p.add_argument("--splits", type=_csv, metavar="S,T", help=f"split kinds from {', '.join(SPLITS)} (default: all)")
    p.add_argument("--seeds", type=_seed_count, metavar="N",
                   help=f"seeds per split (default: {FULL.seeds}; quick: {QUICK.seeds})")
    p.add_argument("--curve-seeds", type=_seed_count, metavar="N",
                   help=f"seeds per learning-curve size (default: {FULL.curve_seeds})")
    p.add_argument("--curve-sizes", type=_sizes, metavar="25,50,...", help="learning-curve training sizes")
    p.add_argument("--out", metavar="DIR", help="leaderboard folder (default: leaderboard/)")
    p.add_argument("--jobs", "-j", type=int, metavar="N", help="parallel processes (default: all cores)")
    p.add_argument("--cache-dir", metavar="DIR", help=f"result cache (default: {BenchConfig.cache_dir}/)")
    p.add_argument("--no-cache", action="store_true", help="neither read nor write the cache")
    p.add_argument("--no-figures", action="store_true", help="skip the PNG figures")
    p.add_argument("--no-artifacts", action="store_true", help="do not fit and save the best predictors")
    p.add_argument("--external-dir", metavar="DIR", help="the external-data directory")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bar")
    p.add_argument("--train", metavar="A", help="cross-dataset: fit on this dataset (name or path)")
    p.add_argument("--test", metavar="B", help="cross-dataset: score on this dataset (name or path)")
    p.add_argument("--json", action="store_true", help="cross-dataset: one JSON object per predictor line")
    p.set_defaults(**field_defaults(BenchConfig))  # every default lives once, in BenchConfig
    return p


def _seed_count(text: str) -> int:
    """An argparse type: a number of seeds, at least 1."""
    if not text.lstrip("-").isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: give a number of seeds >= 1")
    return int(text)


def _sizes(text: str) -> tuple[int, ...]:
    """An argparse type: ``--curve-sizes`` as whole numbers >= 2, naming a bad value."""
    sizes = []
    for v in _csv(text):
        if not v.isdigit() or int(v) < 2:
            raise argparse.ArgumentTypeError(f"{v!r} is not a training-set size (a whole number >= 2)")
        sizes.append(int(v))
    return tuple(sizes)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = _parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(argv)
    if (args.train or args.test) and not (args.train and args.test):
        parser.error("--train and --test go together")
    if args.train:
        return guarded("perfzoo bench", lambda: cross(args.train, args.test, args.predictors or None,
                                                      as_json=args.json, external_dir=args.external_dir))

    def body() -> int:
        config = config_from_args(BenchConfig, args)
        t0 = time.perf_counter()
        results = run(config, " ".join(["python -m perfzoo.bench", *map(shlex.quote, argv)]))
        _print_headline(results, config.out_dir, time.perf_counter() - t0)
        return 0

    return guarded("perfzoo bench", body)


# --- the benchmark ------------------------------------------------------------------------


def _specs(names: Sequence[str], preset: BenchPreset, explicit: bool = False) -> list[PredictorSpec]:
    """Specs for ``names``; the preset's caps on heavy members apply unless the user named
    the members explicitly (then they run everywhere they were asked to)."""
    known = list(zoo.names())
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ValueError(f"unknown predictor {', '.join(map(repr, unknown))}; the zoo has: {', '.join(known)}")
    curve = set(preset.curve_predictors) if preset.curve_predictors is not None and not explicit else None
    specs = []
    for n in names:
        heavy = None if explicit else preset.heavy.get(n)
        specs.append(PredictorSpec(
            n, max_seeds=heavy.seeds if heavy else None,
            curve=(curve is None or n in curve) and heavy is None,
            kinds=heavy.kinds if heavy else None, datasets=heavy.datasets if heavy else None))
    return specs


def _load(names: Sequence[str], external_dir: Optional[str]) -> list[Dataset]:
    return [load_dataset(name, external_dir=external_dir or None) for name in names]


def run(config: BenchConfig, command: Optional[str] = None) -> runner.Results:
    """Fit and score the predictors ``config`` names on its datasets and splits, write the
    leaderboard into ``config.out_dir`` and return the scores. ``command`` is the leaderboard's
    record of what ran (default: this call, spelled out)."""
    preset = config.preset
    t0 = time.perf_counter()
    if config.datasets:
        names = config.datasets
    elif preset.datasets is not None:
        available = set(list_datasets(config.external_dir or None))
        names = [n for n in preset.datasets if n in available]
    else:
        names = list(list_datasets(config.external_dir or None))
    datasets = _load(names, config.external_dir)
    if preset.max_rows_for_all and not config.datasets:
        datasets = [d for d in datasets if len(d) <= preset.max_rows_for_all]
    if not datasets:
        raise ValueError("no dataset to benchmark")
    predictors = config.predictors or None
    member_names = predictors or preset.predictors or list(zoo.names())
    member_names = [n for n in member_names if n in zoo.names() or predictors]  # quick: skip absent members
    specs = _specs(member_names, preset, explicit=bool(predictors))
    splits = config.splits or preset.splits
    seeds = list(range(config.seeds if config.seeds is not None else preset.seeds))
    curve_seeds = list(range(config.curve_seeds if config.curve_seeds is not None else preset.curve_seeds))
    curve_sizes = config.curve_sizes or preset.curve_sizes
    out = config.out_dir
    jobs = config.jobs or cpu_cores()
    print(f"perfzoo bench: {len(datasets)} datasets ({', '.join(d.name for d in datasets)}), "
          f"{len(specs)} predictors, splits {', '.join(splits)}, {len(seeds)} seeds, {jobs} jobs",
          file=sys.stderr)
    results = runner.run(
        datasets, specs, [s for s in splits if s != "transfer"], seeds, jobs=jobs,
        cache_dir=None if config.no_cache else config.cache_dir,
        curve_sizes=curve_sizes, curve_seeds=curve_seeds, curve_datasets=preset.curve_datasets,
        progress=not config.quiet,
    )
    if results.frame.empty:
        why = "; ".join(f"{s['dataset']} {s['split']}: {s['reason']}" for s in results.skipped[:3])
        raise ValueError(f"nothing to score: {why or 'no task ran'} (measure more jobs, or choose other splits)")
    context = run_context(command or spelled_call("perfzoo.bench.run", config), wall_time_s=None)
    context["notes"] = _notes(specs, splits, seeds, curve_sizes, curve_seeds, preset)
    context["wall_time_s"] = time.perf_counter() - t0  # before artifacts: they are written below
    leaderboard.write(results, datasets, specs, out, context, figures=not config.no_figures,
                      artifacts=not config.no_artifacts)
    if "transfer" in splits:
        transfer.write(datasets, [spec.name for spec in specs if spec.factory is None and not spec.params], out)
    return results


def _notes(specs, splits, seeds, curve_sizes, curve_seeds, preset: BenchPreset) -> list[str]:
    """What this run covered, in words, for the leaderboard header."""
    notes = [f"splits {', '.join(splits)}; {len(seeds)} seeds per split (temporal and scale splits are "
             "deterministic: there the seed varies only the predictor's random state)"]
    if "curve" in splits:
        who = [s.display for s in specs if s.curve]
        where = ", ".join(preset.curve_datasets) if preset.curve_datasets else "every dataset"
        notes.append(f"learning curves on {where}: sizes {', '.join(map(str, curve_sizes))}, "
                     f"{len(curve_seeds)} seeds, predictors {', '.join(who)}")
    for s in specs:
        if s.max_seeds is not None or s.kinds is not None or s.datasets is not None:
            parts = []
            if s.max_seeds is not None:
                parts.append(f"{s.max_seeds} seed(s)")
            if s.kinds is not None:
                parts.append("splits " + "/".join(s.kinds))
            if s.datasets is not None:
                parts.append("datasets " + ", ".join(s.datasets))
            notes.append(f"`{s.display}` trimmed to keep the full run near 30 min on 2 cores: "
                         + "; ".join(parts) + "; no learning curve")
    return notes


def _print_headline(results: runner.Results, out: Path, wall: float) -> None:
    summary = summarize(results.frame)
    print(f"\n{'dataset':22} {'split':26} {'best predictor':20} {'Kendall':>8} {'Spearman':>8} {'Pearson':>8}")
    for name in dict.fromkeys(results.frame["dataset"]):  # the datasets in the order they ran
        for split, b in best_per_split(summary, name):
            print(f"{name:22} {split:26} {b['predictor']:20} {b['kendall_mean']:8.3f} "
                  f"{b['spearman_mean']:8.3f} {b['pearson_mean']:8.3f}")
    if results.errors:
        print(f"\n{len(results.errors)} task(s) failed; see the Errors section of {out / 'README.md'}", file=sys.stderr)
    print(f"\n{results.computed} fits computed, {results.cached} from the cache; wall time {wall:.0f} s; "
          f"wrote {out}/README.md, results.csv, best.json, figures/")


# --- cross-dataset ------------------------------------------------------------------------


def cross(train: str, test: str, predictors: Optional[list[str]], *, as_json: bool = False,
          external_dir: Optional[str] = None) -> int:
    """Fit on ``train``, score on ``test``; print a table or one JSON object per predictor."""
    names = predictors or [n for n in CROSS_DEFAULT if n in zoo.names()]
    specs = _specs(names, FULL)
    tr, te = _load([train, test], external_dir)
    shared_features(tr, te)
    rows = cross_evaluate(tr, te, specs)
    if as_json:
        for r in rows:
            print(json.dumps({k: _clean(r.get(k)) for k in JSON_FIELDS}, allow_nan=False))
        return 0
    print(f"train: {tr.name} ({int((~tr.failed).sum())} ok jobs)  ->  test: {te.name} ({int((~te.failed).sum())} ok jobs)")
    print(f"{'predictor':20} {'Kendall':>8} {'Spearman':>8} {'Pearson':>8} {'grouped':>8} {'top1 regret':>11} {'MAPE %':>8}")
    for r in rows:
        if r.get("error"):
            print(f"{r['predictor']:20} error: {r['error']}")
            continue
        print(f"{r['predictor']:20} {r['kendall']:8.3f} {r['spearman']:8.3f} {r['pearson']:8.3f} "
              f"{_num(r['grouped_kendall'])} {r['top1_regret']:11.3f} {_num(r['mape'])}")
    return 0


def shared_features(train: Dataset, test: Dataset) -> list[str]:
    """The feature columns both datasets have; says which on stderr, and refuses when they share
    no config knob (a model of one would only see the other's hardware columns)."""
    tr_cols, te_cols = list(train.feature_columns), set(test.feature_columns)
    shared = [c for c in tr_cols if c in te_cols]
    ok = test.ok().frame
    knobs = [c for c in shared if c.startswith("config.") and ok[c].nunique(dropna=True) > 1]
    if not knobs:
        fixed = [c for c in shared if c.startswith("config.")]
        raise ValueError(f"{train.name} and {test.name} share no config knob that varies in {test.name}"
                         + (f" (only {', '.join(fixed)}, constant there)" if fixed else "")
                         + f": a predictor fitted on {train.name} cannot rank {test.name}'s configurations "
                         f"(features {', '.join(tr_cols[:4])}, ... vs {', '.join(sorted(te_cols)[:4])}, ...)")
    missing = [c for c in tr_cols if c not in te_cols]
    print(f"perfzoo bench: {len(shared)} shared features ({', '.join(shared[:8])}{', ...' if len(shared) > 8 else ''})"
          + (f"; {len(missing)} of {train.name}'s are unknown in {test.name} ({', '.join(missing[:6])}"
             f"{', ...' if len(missing) > 6 else ''})" if missing else ""), file=sys.stderr)
    return shared


def _clean(v: Any) -> Any:
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if hasattr(v, "item"):
        v = v.item()
        return None if isinstance(v, float) and not math.isfinite(v) else v
    return v


def _num(v: Any) -> str:
    return f"{v:8.3f}" if isinstance(v, (int, float)) and math.isfinite(v) else f"{'–':>8}"


if __name__ == "__main__":
    sys.exit(main())
