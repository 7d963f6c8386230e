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

Exit status: 0 on success (a member that fails is reported in the leaderboard, not fatal),
1 on a user error (unknown dataset, missing file), 2 on bad arguments.
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
from perfzoo._cli import guarded
from perfzoo.datasets import Dataset, list_datasets, load_dataset
from perfzoo.evaluation import leaderboard, runner, transfer
from perfzoo.evaluation.ranking import best_per_split, summarize
from perfzoo.evaluation.report import run_context
from perfzoo.evaluation.runner import cross_evaluate
from perfzoo.evaluation.tasks import DEFAULT_CACHE_DIR, PredictorSpec

SPLITS = ("random", "temporal", "scale", "group", "curve", "transfer")


@dataclass
class BenchConfig:
    """What a run covers. ``heavy`` caps the seeds of slow members and keeps them out of the
    learning curves; ``curve_predictors`` are the members drawn in learning curves."""

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

FULL = BenchConfig(
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

QUICK = BenchConfig(
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

# default members for --train/--test (fast, and the ones built to extrapolate)
CROSS_DEFAULT = ["constant", "analytic", "ridge", "lightgbm", "catboost", "gbr", "hybrid"]
JSON_FIELDS = ("predictor", "train", "test", "n_train", "n_test", "kendall", "spearman", "pearson",
               "grouped_kendall", "top1_regret", "top5_regret", "top10_regret", "precision_at_1",
               "precision_at_5", "precision_at_10", "mape", "fit_time_s", "predict_time_s", "error")


def _csv(text: Optional[str]) -> Optional[list[str]]:
    if text is None:
        return None
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
    p.add_argument("--datasets", metavar="A,B", help="datasets (names or paths), comma-separated (default: all)")
    p.add_argument("--predictors", "--predictor", metavar="X,Y", action="append",
                   help="zoo members, comma-separated or repeated (default: all; see perfzoo.zoo.names())")
    p.add_argument("--splits", metavar="S,T", help=f"split kinds from {', '.join(SPLITS)} (default: all)")
    p.add_argument("--seeds", type=_seed_count, metavar="N", help="seeds per split (default: 5; quick: 3)")
    p.add_argument("--curve-seeds", type=_seed_count, metavar="N", help="seeds per learning-curve size (default: 10)")
    p.add_argument("--curve-sizes", type=_sizes, metavar="25,50,...", help="learning-curve training sizes")
    p.add_argument("--out", metavar="DIR", help="leaderboard folder (default: leaderboard/)")
    p.add_argument("--jobs", "-j", type=int, metavar="N", help="parallel processes (default: all cores)")
    p.add_argument("--cache-dir", metavar="DIR", default=DEFAULT_CACHE_DIR,
                   help=f"result cache (default: {DEFAULT_CACHE_DIR}/)")
    p.add_argument("--no-cache", action="store_true", help="neither read nor write the cache")
    p.add_argument("--no-figures", action="store_true", help="skip the PNG figures")
    p.add_argument("--no-artifacts", action="store_true", help="do not fit and save the best predictors")
    p.add_argument("--external-dir", metavar="DIR", help="the external-data directory")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bar")
    p.add_argument("--train", metavar="A", help="cross-dataset: fit on this dataset (name or path)")
    p.add_argument("--test", metavar="B", help="cross-dataset: score on this dataset (name or path)")
    p.add_argument("--json", action="store_true", help="cross-dataset: one JSON object per predictor line")
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
    args.argv = argv
    predictors = None
    if args.predictors:
        predictors = [n for chunk in args.predictors for n in _csv(chunk) or []]
    if (args.train or args.test) and not (args.train and args.test):
        parser.error("--train and --test go together")
    if args.train:
        return guarded("perfzoo bench", lambda: cross(args.train, args.test, predictors, as_json=args.json,
                                                      external_dir=args.external_dir))
    return guarded("perfzoo bench", lambda: bench(args, predictors))


# --- the benchmark ------------------------------------------------------------------------


def _specs(names: Sequence[str], cfg: BenchConfig, explicit: bool = False) -> list[PredictorSpec]:
    """Specs for ``names``; the config's caps on heavy members apply unless the user named
    the members explicitly (then they run everywhere they were asked to)."""
    known = list(zoo.names())
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ValueError(f"unknown predictor {', '.join(map(repr, unknown))}; the zoo has: {', '.join(known)}")
    curve = set(cfg.curve_predictors) if cfg.curve_predictors is not None and not explicit else None
    specs = []
    for n in names:
        heavy = None if explicit else cfg.heavy.get(n)
        specs.append(PredictorSpec(
            n, max_seeds=heavy.seeds if heavy else None,
            curve=(curve is None or n in curve) and heavy is None,
            kinds=heavy.kinds if heavy else None, datasets=heavy.datasets if heavy else None))
    return specs


def _load(names: Sequence[str], external_dir: Optional[str]) -> list[Dataset]:
    return [load_dataset(name, external_dir=external_dir or None) for name in names]


def bench(args: argparse.Namespace, predictors: Optional[list[str]] = None) -> int:
    cfg = QUICK if args.quick else FULL
    t0 = time.perf_counter()
    if args.datasets:
        names = _csv(args.datasets)
    elif cfg.datasets is not None:
        available = set(list_datasets(args.external_dir or None))
        names = [n for n in cfg.datasets if n in available]
    else:
        names = list(list_datasets(args.external_dir or None))
    datasets = _load(names, args.external_dir)
    if cfg.max_rows_for_all and not args.datasets:
        datasets = [d for d in datasets if len(d) <= cfg.max_rows_for_all]
    if not datasets:
        raise ValueError("no dataset to benchmark")
    member_names = predictors or cfg.predictors or list(zoo.names())
    member_names = [n for n in member_names if n in zoo.names() or predictors]  # quick: skip absent members
    specs = _specs(member_names, cfg, explicit=bool(predictors))
    splits = _csv(args.splits) or cfg.splits
    bad = [s for s in splits if s not in SPLITS]
    if bad:
        raise ValueError(f"unknown split {', '.join(bad)}; choose from {', '.join(SPLITS)}")
    seeds = list(range(args.seeds if args.seeds is not None else cfg.seeds))
    curve_seeds = list(range(args.curve_seeds if args.curve_seeds is not None else cfg.curve_seeds))
    curve_sizes = args.curve_sizes or cfg.curve_sizes
    out = Path(args.out or cfg.out)
    jobs = args.jobs or cpu_cores()
    print(f"perfzoo bench: {len(datasets)} datasets ({', '.join(d.name for d in datasets)}), "
          f"{len(specs)} predictors, splits {', '.join(splits)}, {len(seeds)} seeds, {jobs} jobs",
          file=sys.stderr)
    results = runner.run(
        datasets, specs, [s for s in splits if s != "transfer"], seeds, jobs=jobs,
        cache_dir=None if args.no_cache else args.cache_dir,
        curve_sizes=curve_sizes, curve_seeds=curve_seeds, curve_datasets=cfg.curve_datasets,
        progress=not args.quiet,
    )
    if results.frame.empty:
        why = "; ".join(f"{s['dataset']} {s['split']}: {s['reason']}" for s in results.skipped[:3])
        raise ValueError(f"nothing to score: {why or 'no task ran'} (measure more jobs, or choose other splits)")
    command = " ".join(["python -m perfzoo.bench", *map(shlex.quote, args.argv)])
    context = run_context(command, wall_time_s=None)
    context["notes"] = _notes(specs, splits, seeds, curve_sizes, curve_seeds, cfg)
    context["wall_time_s"] = time.perf_counter() - t0  # before artifacts: they are written below
    leaderboard.write(results, datasets, specs, out, context, figures=not args.no_figures,
                      artifacts=not args.no_artifacts)
    if "transfer" in splits:
        transfer.write(datasets, [spec.name for spec in specs if spec.factory is None and not spec.params], out)
    wall = time.perf_counter() - t0
    _print_headline(results, datasets, out, wall)
    return 0 if len(results.frame) else 1


def _notes(specs, splits, seeds, curve_sizes, curve_seeds, cfg: BenchConfig) -> list[str]:
    """What this run covered, in words, for the leaderboard header."""
    notes = [f"splits {', '.join(splits)}; {len(seeds)} seeds per split (temporal and scale splits are "
             "deterministic: there the seed varies only the predictor's random state)"]
    if "curve" in splits:
        who = [s.display for s in specs if s.curve]
        where = ", ".join(cfg.curve_datasets) if cfg.curve_datasets else "every dataset"
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


def _print_headline(results: runner.Results, datasets: Sequence[Dataset], out: Path, wall: float) -> None:
    summary = summarize(results.frame)
    print(f"\n{'dataset':22} {'split':26} {'best predictor':20} {'Kendall':>8} {'Spearman':>8} {'Pearson':>8}")
    for ds in datasets:
        for split, b in best_per_split(summary, ds.name):
            print(f"{ds.name:22} {split:26} {b['predictor']:20} {b['kendall_mean']:8.3f} "
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
