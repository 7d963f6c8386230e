"""Cross-dataset evaluation: fit on one dataset, score on another, with K of its jobs joined.

What ``python -m perfzoo.bench --train A --test B [--shots 0,1,3,10]`` computes
(:func:`cross_scores`): every member is fitted on the labelled jobs of A that are not also jobs of
B (:func:`without`: a job scored must not have been fitted on) and scored on B in A's target
(:func:`in_target_of`); with K shots, K configurations of B drawn by seed join the training data
(:func:`perfzoo.zoo.calibrate.join`, the same join as ``predict --calibrate``) and the rest of B is
scored, over several draws. Throughput members also calibrate their 80% interval on the training
side (folds by published source, or by collection session for measured jobs, where it has several:
:func:`perfzoo.zoo.calibrate.source_labels`), so each row holds its coverage on B.

>>> from perfzoo.datasets import load_dataset                                      # doctest: +SKIP
>>> rows = cross_scores(load_dataset("published-llm"), load_dataset("published-torchtitan"),
...                     [PredictorSpec("roofline")], shots=(0, 3))                 # doctest: +SKIP
>>> [(r["shots"], round(r["mape"])) for r in rows]                                 # doctest: +SKIP
[(0, 93), (3, 98)]

:func:`cross` runs it from a :class:`CrossConfig` (the command's flags, field for field).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, replace
from typing import Any, Optional, Sequence

import numpy as np
import pandas as pd

from harness.environment import cpu_cores
from perfzoo import zoo
from perfzoo.analytic.estimates import claimed, estimate_arrays
from perfzoo.console import DataError, InputError
from perfzoo.datasets import load_dataset
from perfzoo.datasets.dataset import Dataset
from perfzoo.evaluation import slots as slotting
from perfzoo.evaluation.presets import FULL, member_specs
from perfzoo.evaluation.runner import run_tasks
from perfzoo.evaluation.splits import shots_split
from perfzoo.evaluation.tasks import PredictorSpec, Task
from perfzoo.zoo import calibrate
from perfzoo.zoo.calibrate import release_labels, source_labels

# what each row of :func:`cross_scores` holds, averaged over the draws
CROSS_METRICS = ("kendall", "spearman", "pearson", "grouped_kendall", "top1_regret", "top5_regret", "top10_regret",
                 "precision_at_1", "precision_at_5", "precision_at_10", "mape", "mdape", "ratio_median",
                 "coverage", "interval_width", *slotting.SLOT_METRICS, "fit_time_s", "predict_time_s")


BEST = "best"  # --predictor best: the shipped pick of the training dataset (its best.json member)
# default members for --train/--test: the shipped pick, the shipped kinds (roofline, hybrid_roofline),
# the floors and a few fast learners
CROSS_DEFAULT = [BEST, "constant", "analytic", "roofline", "hybrid_roofline", "ridge", "lightgbm", "hybrid"]
@dataclass(frozen=True)
class CrossConfig:
    """``python -m perfzoo.bench --train A --test B``, as :func:`cross` takes it.

    >>> CrossConfig(train="vtrain-a100", test="x.csv", shots=(0, -1))
    Traceback (most recent call last):
    ...
    perfzoo.console.InputError: --shots -1: give numbers of jobs >= 0, e.g. --shots 0,1,3,10
    """

    train: str  # fit on this dataset (name or path), less the jobs that are also in test
    test: str  # score on this dataset (name or path)
    predictors: Optional[list[str]] = None  # zoo members or 'best' (default: CROSS_DEFAULT)
    shots: tuple[int, ...] = (0,)  # few-shot calibration: this many jobs of test join the training data
    shots_within: bool = False  # the shots are drawn inside each group of test and anchor it (evaluation.anchored)
    shot_seeds: int = 5  # draws of the shots per count above 0
    json: bool = False  # one JSON object per line instead of the table
    external_dir: Optional[str] = None  # the external-data directory (default: $PERFZOO_EXTERNAL_DATA, ...)
    leaderboard: Optional[str] = None  # the leaderboard folder whose best.json names 'best' (default: leaderboard/)
    jobs: Optional[int] = None  # parallel processes (default: all cores)

    def __post_init__(self):
        bad = [k for k in self.shots if k < 0]
        if bad or not self.shots:
            raise InputError(f"--shots {bad[0] if bad else ''}: give numbers of jobs >= 0, e.g. --shots 0,1,3,10")
        if self.shot_seeds < 1:
            raise InputError(f"--shot-seeds must be at least 1, got {self.shot_seeds}")


def cross(config: CrossConfig) -> list[dict[str, Any]]:
    """Fit on ``config.train`` (less the jobs also in ``config.test``), score on ``config.test``:
    one row per shots count and member (:func:`perfzoo.evaluation.cross.cross_scores`). What was
    left out or converted goes to stderr."""
    tr, te = (load_dataset(name, external_dir=config.external_dir or None) for name in (config.train, config.test))
    for report in te.load_reports:  # what the scored rows are: read, derived, left unscored, and why
        print(f"perfzoo bench: test data {report}", file=sys.stderr)
    specs = cross_specs(config.predictors, tr.name, config.leaderboard)
    if config.shots_within:
        return within_scores(tr, te, specs, config.shots, config.shot_seeds, jobs=config.jobs or cpu_cores())
    return cross_scores(tr, te, specs, config.shots, config.shot_seeds, jobs=config.jobs or cpu_cores())


def cross_specs(names: Optional[list[str]], train: str, leaderboard: Optional[str]) -> list[PredictorSpec]:
    """The members of a cross run: ``names`` (default :data:`CROSS_DEFAULT`), ``best`` resolved to
    the shipped member of the dataset named ``train`` (labelled ``<member> (best)``); a default run
    without a shipped pick for it says so on stderr and goes on without it."""
    explicit = names is not None
    names = list(names or CROSS_DEFAULT)
    best = None
    if BEST in names:
        try:
            best = zoo.best_member(train, leaderboard)
        except (FileNotFoundError, KeyError) as exc:
            why = exc.args[0] if exc.args else str(exc)
            if explicit:
                raise InputError(f"--predictor best: {why}; name zoo members instead") from None
            print(f"perfzoo bench: no shipped pick ({why}); running the other members", file=sys.stderr)
    specs, seen = [], set()
    for n in names:
        if n == BEST and best is None:
            continue
        name, params = best if n == BEST else (n, {})
        if (name, tuple(sorted(params.items()))) in seen:
            continue
        seen.add((name, tuple(sorted(params.items()))))
        specs += member_specs([name], FULL) if not params else [PredictorSpec.of(name, params=params)]
        if n == BEST:
            specs[-1] = replace(specs[-1], label=f"{specs[-1].display} (best)")
    return specs


def cross_scores(train: Dataset, test: Dataset, predictors: Sequence[PredictorSpec], shots: Sequence[int] = (0,),
                 shot_seeds: int = 5, jobs: int = 1) -> list[dict[str, Any]]:
    """One row per shots count and member: :data:`CROSS_METRICS` averaged over ``shot_seeds`` draws
    (one without shots), ``kendall_std`` / ``mape_std`` their spread, ``draws``, ``n_train``,
    ``n_test`` and the first ``error``. Says on stderr what it left out or converted."""
    tr, te = without(train, test), priced(in_target_of(train, test))
    shared_features(tr, te)
    labelled = te.labelled()
    tasks = []
    for k in shots:
        for seed in range(shot_seeds if k else 1):
            split = shots_split(labelled, k, seed)
            fit_on = calibrate.join(tr, labelled.subset(split.train)).dataset if k else tr
            tasks += cross_tasks(fit_on, labelled.subset(split.test), predictors, seed, ids={"shots": k})
    results, _, _ = run_tasks(tasks, jobs=jobs, progress=False)
    frame = pd.DataFrame(results)
    for c in CROSS_METRICS:
        if c not in frame.columns:
            frame[c] = float("nan")
    rows = []
    for (k, name), runs in frame.groupby(["shots", "predictor"], sort=False):
        ok = runs[runs["error"].isna()]
        row = {"predictor": name, "train": tr.name, "test": te.name, "shots": int(k), "draws": len(ok),
               "n_train": int(runs["n_train"].iloc[0]), "n_test": int(runs["n_test"].iloc[0]),
               **{c: float(ok[c].mean()) if len(ok) else float("nan") for c in CROSS_METRICS},
               "kendall_std": float(ok["kendall"].std(ddof=0)) if len(ok) else float("nan"),
               "mape_std": float(ok["mape"].std(ddof=0)) if len(ok) else float("nan"),
               "error": None if runs["error"].isna().all() else str(runs["error"].dropna().iloc[0])}
        rows.append(row)
    return rows


def within_scores(train: Dataset, test: Dataset, predictors: Sequence[PredictorSpec], shots: Sequence[int] = (0,),
                  shot_seeds: int = 5, jobs: int = 1) -> list[dict[str, Any]]:
    """``--shots-within``: one row per shots count and throughput member. Each member is fitted once
    on ``train`` (with its interval); K = 0 scores it on every row of ``test``; K > 0 draws K shots inside
    each group of ``test`` (model shape, accelerator, precision, task, framework), anchors the member on
    them (:mod:`perfzoo.zoo.anchor`) and scores the group's other rows, ``shot_seeds`` draws
    (:func:`perfzoo.evaluation.anchored.shots_within`). ``n_test`` is the rows scored per draw,
    ``groups`` and ``groups_skipped`` the groups used and those of K rows or fewer, ``mape_unanchored`` the
    member's MAPE unanchored on the rows scored."""
    tr, te = without(train, test), priced(in_target_of(train, test))
    shared_features(tr, te)
    labelled = te.labelled()
    anchor = tuple(k for k in shots if k > 0)
    tasks = [replace(t, interval=True, anchor_shots=anchor, anchor_draws=shot_seeds)
             for t in cross_tasks(tr, labelled, [p for p in predictors if p.output == "throughput"], 0)]
    results, _, _ = run_tasks(tasks, jobs=jobs, progress=False)
    rows = []
    for result in results:
        for k in shots:
            own = {m: result.get(m, float("nan")) for m in CROSS_METRICS}
            if k:
                own.update({m: result.get(f"{m}_within_{k}", float("nan")) for m in WITHIN_METRICS})
                own.update({m: float("nan") for m in CROSS_METRICS if m not in WITHIN_METRICS and m not in TIMES})
            rows.append({"predictor": result["predictor"], "train": tr.name, "test": te.name, "shots": int(k),
                         "draws": shot_seeds if k else 1, "n_train": int(result["n_train"]),
                         "n_test": int(result.get(f"scored_within_{k}", result["n_test"])) if k else int(result["n_test"]),
                         "groups": result.get(f"groups_within_{k}", float("nan")) if k else float("nan"),
                         "groups_skipped": result.get(f"groups_skipped_within_{k}", float("nan")) if k else float("nan"),
                         "mape_unanchored": result.get(f"mape_unanchored_within_{k}", float("nan")) if k else float("nan"),
                         **own, "kendall_std": float("nan"), "mape_std": float("nan"), "error": result.get("error")})
    return rows


WITHIN_METRICS = ("mape", "mdape", "coverage", "interval_width")  # what an anchored row is scored on
TIMES = ("fit_time_s", "predict_time_s")


def without(train: Dataset, test: Dataset) -> Dataset:
    """``train`` less the jobs that are also in ``test`` (equal ``record_id``), said on stderr:
    a job scored must not have been fitted on."""
    shared = train.frame["record_id"].isin(set(test.frame["record_id"])).to_numpy()
    if not shared.any():
        return train
    left = train.subset(~shared)
    if not left.is_labelled.any():
        raise DataError(f"every job of {train.name} is also in {test.name}: nothing is left to fit on; "
                         "give a --train that holds other jobs")
    print(f"perfzoo bench: {int(shared.sum())} of {train.name}'s {len(train)} jobs are {test.name}'s; "
          "left out of training", file=sys.stderr)
    return replace(left, name=f"{train.name}-minus-{test.name}")


def priced(test: Dataset) -> Dataset:
    """``test`` less the rows a cost model claims but cannot price (an accelerator the table does
    not have, a precision the device does not run, no shape): ``predict`` refuses such a config, so
    no score may rest on a member's guess for it; said on stderr, with the rows' lines.

    Rows no cost model claims (a workload without one) stay: their members predict from features."""
    X = test.X.reset_index(drop=True)
    claims = np.zeros(len(X), dtype=bool)
    for _, mask in claimed(X):
        claims |= mask
    if not claims.any():
        return test
    unpriced = claims & ~np.isfinite(np.asarray(estimate_arrays(X)["throughput"], dtype=float))
    if not unpriced.any():
        return test
    if unpriced.all():
        raise DataError(f"no row of {test.name} can be priced (the cost model has no estimate for any: see the load "
                         "report's rows that contradict themselves): nothing to score")
    frame = test.frame.reset_index(drop=True)
    lines = frame.get("annotations.line", pd.Series(frame.index + 2)).loc[unpriced]
    accel = sorted(frame.get("hardware.accelerator", pd.Series("?", index=frame.index)).loc[unpriced]
                   .astype(str).unique())
    print(f"perfzoo bench: {int(unpriced.sum())} of {test.name}'s {len(frame)} rows cannot be priced (lines "
          f"{', '.join(str(int(v)) for v in lines.head(10))}{', ...' if len(lines) > 10 else ''}; accelerator "
          f"{', '.join(accel)}): the cost model lacks their accelerator, precision or shape (the load report "
          "says which); left out of scoring, as predict refuses them", file=sys.stderr)
    return test.subset(~unpriced)


def in_target_of(train: Dataset, test: Dataset) -> Dataset:
    """``test`` scored on ``train``'s target (what its members predict: e.g. global tokens/s where
    ``test`` publishes tokens/s per device); said on stderr when it differs."""
    if test.target == train.target:
        return test
    if train.target not in test.frame.columns:
        raise DataError(f"{test.name} has no column {train.target!r}, the target {train.name} is fitted on "
                         f"(its own is {test.target!r}): a predictor of one cannot be scored on the other")
    print(f"perfzoo bench: {test.name} scored on {train.target} (the target {train.name} is fitted on; "
          f"its own is {test.target})", file=sys.stderr)
    return replace(test, target=train.target)


def shared_features(train: Dataset, test: Dataset) -> list[str]:
    """The feature columns both datasets have; says which on stderr, and refuses when they share
    no config knob (a model of one would only see the other's hardware columns)."""
    tr_cols, te_cols = list(train.feature_columns), set(test.feature_columns)
    shared = [c for c in tr_cols if c in te_cols]
    ok = test.ok().frame
    knobs = [c for c in shared if c.startswith("config.") and ok[c].nunique(dropna=True) > 1]
    if not knobs:
        fixed = [c for c in shared if c.startswith("config.")]
        raise DataError(f"{train.name} and {test.name} share no config knob that varies in {test.name}"
                         + (f" (only {', '.join(fixed)}, constant there)" if fixed else "")
                         + f": a predictor fitted on {train.name} cannot rank {test.name}'s configurations "
                         f"(features {', '.join(tr_cols[:4])}, ... vs {', '.join(sorted(te_cols)[:4])}, ...)")
    missing = [c for c in tr_cols if c not in te_cols]
    print(f"perfzoo bench: {len(shared)} shared features ({', '.join(shared[:8])}{', ...' if len(shared) > 8 else ''})"
          + (f"; {len(missing)} of {train.name}'s are unknown in {test.name} ({', '.join(missing[:6])}"
             f"{', ...' if len(missing) > 6 else ''})" if missing else ""), file=sys.stderr)
    return shared


def cross_tasks(train: Dataset, test: Dataset, predictors: Sequence[PredictorSpec], seed: int = 0,
                ids: Optional[dict[str, Any]] = None) -> list[Task]:
    """One task per throughput or score member: fit on every labelled row of ``train``, score on
    every labelled row of ``test`` (``ids``: more labels for the result rows). A throughput member
    also calibrates its 80% interval (folds by published source or collection session where ``train``
    has several), so the result holds its coverage on ``test``.

    The test rows are given the training dataset's feature columns (a column the test file
    lacks is missing, which predictors handle as an unknown optional field).
    """
    ok_tr, ok_te = train.is_labelled, test.is_labelled
    X_tr = train.X[ok_tr].reset_index(drop=True)
    X_te = test.frame.reindex(columns=list(train.feature_columns))[ok_te].reset_index(drop=True)
    groups = test.comparable_groups()
    slotted = slotting.of_frame(test.frame)
    sources = source_labels(train.frame[ok_tr])
    releases, test_releases = release_labels(train.frame[ok_tr]), release_labels(test.frame[ok_te])
    return [Task(key="", ids={"train": train.name, "test": test.name, "predictor": spec.display, "seed": seed,
                             **(ids or {})},
                 spec=spec, X_train=X_tr, y_train=train.y[ok_tr], X_test=X_te, y_test=test.y[ok_te],
                 groups_test=None if groups is None else groups[ok_te], keep_predictions=False,
                 interval=spec.output == "throughput", interval_groups=sources, interval_releases=releases,
                 anchor_releases=test_releases,
                 slots_test=None if slotted is None else (slotted[0][ok_te], slotted[1][ok_te]))
            for spec in predictors if spec.output != "probability"]
