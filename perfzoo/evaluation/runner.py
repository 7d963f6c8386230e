"""The benchmark runner: executes tasks (:mod:`perfzoo.evaluation.tasks`) in parallel, cached.

:func:`run` builds every task of predictors x datasets x splits x seeds, reads finished ones
back from the cache, fits and scores the rest in parallel (joblib, or Slurm jobs:
:class:`Slurm`) and collects one row per task (:mod:`perfzoo.evaluation.cross` runs its tasks
here too). Tasks that raise are recorded with their error and *not* cached.

Example
-------
>>> from perfzoo.datasets import load_dataset                            # doctest: +SKIP
>>> ds = load_dataset("vtrain-a100")                                      # doctest: +SKIP
>>> results = run([ds], [PredictorSpec("lightgbm")], ["random"], seeds=range(3))  # doctest: +SKIP
>>> results.frame.groupby("predictor")["kendall"].mean()                 # doctest: +SKIP
"""

from __future__ import annotations

import inspect
import os
import sys
import time
import traceback
import warnings
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Optional, Sequence

import numpy as np
import pandas as pd
from joblib import Parallel, delayed
from threadpoolctl import threadpool_limits
from tqdm.auto import tqdm

from harness.slurm import SlurmOptions, run_calls
from perfzoo.datasets.dataset import Dataset
from perfzoo.evaluation import metrics as M
from perfzoo.evaluation.anchored import shots_within, within_columns
from perfzoo.evaluation.splits import CURVE_SIZES
from perfzoo.evaluation import slots as slotting
from perfzoo.evaluation.suite import BenchmarkTask, define_tasks
from perfzoo.evaluation.tasks import DEFAULT_CACHE_DIR, Cache, PredictorSpec, Task, fits
from perfzoo.zoo.estimator import Estimator
from perfzoo.zoo.interval import Interval


def set_threads(est: Estimator, threads: int) -> None:
    """Give a member ``threads`` CPU threads (its ``n_jobs``) so parallel workers do not oversubscribe."""
    if "n_jobs" in est.get_params(deep=False):
        est.set_params(n_jobs=max(1, int(threads)))


# --- one task -----------------------------------------------------------------------------


def execute(task: Task) -> dict[str, Any]:
    """Fit and score one task on ``task.threads`` threads (default one: parallelism comes from
    processes; OpenMP libraries slow down by 10-50x when cores are oversubscribed); never
    raises (an error is recorded in the result)."""
    # members' warnings (convergence, overflow) would scroll over the progress bar: the
    # result keeps their count and the first one instead
    with threadpool_limits(limits=max(1, int(task.threads))), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = _execute(task)
    out["warnings"] = len(caught)
    out["first_warning"] = f"{caught[0].category.__name__}: {caught[0].message}"[:300] if caught else None
    return out


def _execute(task: Task) -> dict[str, Any]:
    out = dict(task.ids)
    out["n_train"], out["n_test"] = int(len(task.y_train)), int(len(task.y_test))
    try:
        est = task.spec.build(seed=int(task.ids["seed"]))
        set_threads(est, task.threads)
        model = Interval(est, seed=int(task.ids["seed"])) if task.interval else est  # fits a clone of est
        t0 = time.perf_counter()
        if task.interval:
            model.fit(task.X_train, task.y_train, dataset=task.ids.get("dataset"), groups=task.interval_groups,
                      releases=task.interval_releases)
            out["fit_time_s"] = model.fit_time_s_  # the member's own fit, without the interval's cross-fits
        else:
            model.fit(task.X_train, task.y_train, **fit_kwargs(est, task.ids.get("dataset")))
            out["fit_time_s"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        if task.failure:
            pred = _failure_scores(model, task.X_test)
        else:
            pred = np.asarray(model.predict(task.X_test), dtype=float).ravel()
        out["predict_time_s"] = time.perf_counter() - t0
        if task.failure:
            out["roc_auc"] = M.roc_auc(task.y_test.astype(bool), pred)
        else:
            out.update(M.score(task.y_test, pred, task.groups_test, absolute=task.spec.output == "throughput"))
            if task.slots_test is not None:
                out.update(slotting.slot_metrics(task.y_test, pred, *task.slots_test,
                                                 absolute=task.spec.output == "throughput"))
        if task.interval:
            low, high = model.predict_interval(task.X_test, alpha=1 - M.INTERVAL_LEVEL)
            out.update(M.interval_scores(task.y_test, low, high))
            if task.anchor_shots:
                out.update(within_columns(shots_within(model, task.X_test, task.y_test, task.anchor_shots,
                                                       draws=task.anchor_draws, seed=int(task.ids["seed"]),
                                                       releases=task.anchor_releases)))
        if task.keep_predictions:
            out["y_true"] = [float(v) for v in task.y_test]
            out["y_pred"] = [float(v) if np.isfinite(v) else None for v in pred]
        out["error"] = None
    except Exception as exc:  # a broken member must not stop the benchmark
        out["error"] = f"{type(exc).__name__}: {exc}"
        out["traceback"] = traceback.format_exc(limit=6)
    return out


def fit_kwargs(est: Estimator, dataset: Optional[str]) -> dict[str, Any]:
    """``dataset`` (a name for the saved metadata) where ``fit`` takes it.

    Ranking members form their queries themselves (by workload); the runner's comparable
    groups are for scoring only and are not passed: queries that fine would leave the
    order *across* models and scales unlearned, which the global Kendall tau scores.
    """
    try:
        params = inspect.signature(est.fit).parameters
    except (TypeError, ValueError):
        return {}
    kw: dict[str, Any] = {}
    if "dataset" in params and dataset is not None:
        kw["dataset"] = dataset
    return kw


def _failure_scores(est: Estimator, X: pd.DataFrame) -> np.ndarray:
    """P(fail) from a ``probability`` member: column 1 of its ``predict_proba`` (scikit-learn's
    layout, ``[P(ok), P(fail)]``)."""
    return np.asarray(est.predict_proba(X), dtype=float)[:, 1]


# --- running ------------------------------------------------------------------------------


@dataclass
class Results:
    """What a run produced: one row per fit (``frame``, its ``task`` column naming the benchmark
    task), predictions, skipped splits, and the benchmark tasks run (``tasks``)."""

    frame: pd.DataFrame
    predictions: dict[tuple, dict[str, list]]
    skipped: list[dict[str, Any]]
    computed: int
    cached: int
    errors: list[dict[str, Any]]
    tasks: list[BenchmarkTask] = field(default_factory=list)


def run_tasks(
    tasks: Sequence[Task],
    *,
    jobs: int = 1,
    cache: Optional[Cache] = None,
    progress: bool = True,
    desc: str = "bench",
    slurm: Optional[Slurm] = None,
) -> tuple[list[dict[str, Any]], int, int]:
    """Run tasks (cached ones are read back), in parallel over ``jobs`` processes, or with
    ``slurm`` as ``jobs`` Slurm jobs (each fits its share of the tasks one after the other and
    writes each result into the cache itself, so a run killed while they run loses none).

    Returns (results in task order, number computed, number read from the cache).
    """
    cache = cache or Cache(None)
    results: list[Optional[dict[str, Any]]] = [None] * len(tasks)
    todo: list[int] = []
    for i, task in enumerate(tasks):
        hit = cache.get(task.key)
        if hit is not None:
            hit.update(task.ids)  # labels may change without changing the computation
            results[i] = hit
        else:
            todo.append(i)
    n_cached = len(tasks) - len(todo)
    bar = _progress(len(todo), desc, progress, n_cached)
    # heavy first, so the pool does not end on one long task
    todo.sort(key=lambda i: -_cost(tasks[i]))
    if slurm is not None:
        shares = [todo[k::jobs] for k in range(min(jobs, len(todo)))]  # dealt heavy first: about equal work
        where = None if cache.root is None else cache.root.resolve()  # the jobs' own working folder may differ
        runs = slurm.run(partial(execute_share, where), [[tasks[i] for i in share] for share in shares])
        for k, outs, why in runs:
            outs = outs or [_lost(tasks[i], why) for i in shares[k]]
            for i, res in zip(shares[k], outs):
                results[i] = res
                cache.put(tasks[i].key, res)
            bar.update(len(shares[k]))
    elif jobs == 1 or len(todo) <= 1:
        for i in todo:
            results[i] = execute(tasks[i])
            cache.put(tasks[i].key, results[i])
            bar.update(1)
    else:
        parallel = Parallel(n_jobs=jobs, return_as="generator_unordered", batch_size=1)
        outputs = parallel(delayed(_execute_indexed)(i, tasks[i]) for i in todo)
        for i, res in outputs:
            results[i] = res
            cache.put(tasks[i].key, res)
            bar.update(1)
    bar.close()
    return [r for r in results if r is not None], len(todo), n_cached


def _execute_indexed(i: int, task: Task) -> tuple[int, dict[str, Any]]:
    return i, execute(task)


def execute_share(cache_root: Optional[os.PathLike], tasks: Sequence[Task]) -> list[dict[str, Any]]:
    """:func:`execute` of each task, in order, each result written into the cache at ``cache_root``
    as it ends: what one Slurm job of a run does."""
    cache = Cache(cache_root)
    out = []
    for task in tasks:
        out.append(execute(task))
        cache.put(task.key, out[-1])
    return out


def _lost(task: Task, why: Optional[str]) -> dict[str, Any]:
    """The result of a task whose Slurm job ended without results: an error, not cached."""
    return {**task.ids, "n_train": int(len(task.y_train)), "n_test": int(len(task.y_test)), "error": why}


@dataclass(frozen=True)
class Slurm:
    """Where a run's Slurm jobs go: the sbatch options (:class:`harness.slurm.SlurmOptions`) and
    the folder of their files and logs (on a file system the nodes share)."""

    options: SlurmOptions
    folder: str

    def run(self, fn, items):
        """``fn(item)`` per item, one Slurm job each: :func:`harness.slurm.run_calls`."""
        return run_calls(fn, items, self.options, self.folder)


def _cost(task: Task) -> float:
    return task.spec.fit_cost * max(len(task.y_train), 1)


class _NoBar:
    def update(self, n: int = 1) -> None:
        pass

    def close(self) -> None:
        pass


def _progress(total: int, desc: str, enabled: bool, cached: int):
    if not enabled or total == 0:
        if enabled and cached:
            print(f"{desc}: all {cached} tasks read from the cache", file=sys.stderr)
        return _NoBar()
    return tqdm(total=total, desc=f"{desc} ({cached} cached)", unit="fit", file=sys.stderr,
                dynamic_ncols=True, smoothing=0.05)


def run(
    datasets: Sequence[Dataset],
    predictors: Sequence[PredictorSpec],
    split_kinds: Sequence[str] = ("random", "temporal", "scale"),
    seeds: Sequence[int] = range(5),
    *,
    jobs: int = 1,
    cache_dir: Optional[os.PathLike] = DEFAULT_CACHE_DIR,
    curve_sizes: Sequence[int] = CURVE_SIZES,
    curve_seeds: Optional[Sequence[int]] = None,
    curve_datasets: Optional[Sequence[str]] = None,
    group_columns: Optional[dict[str, Sequence[str]]] = None,
    progress: bool = True,
) -> Results:
    """Benchmark ``predictors`` on ``datasets`` over ``split_kinds`` and ``seeds``.

    ``curve_datasets`` limits learning curves to the named datasets (default: all);
    ``group_columns`` maps a dataset name to the columns its group splits hold out.
    """
    skipped: list[dict[str, Any]] = []
    defined: list[tuple[Dataset, BenchmarkTask]] = []
    for ds in datasets:
        kinds = [k for k in split_kinds if k != "curve" or curve_datasets is None or ds.name in curve_datasets]
        defined += [(ds, bt) for bt in define_tasks(
            ds, kinds, seeds, skipped=skipped, curve_sizes=curve_sizes, curve_seeds=curve_seeds,
            group_columns=(group_columns or {}).get(ds.name))]
    return run_defined(defined, predictors, jobs=jobs, cache_dir=cache_dir, progress=progress, skipped=skipped)


def run_defined(
    defined: Sequence[tuple[Dataset, BenchmarkTask]],
    predictors: Sequence[PredictorSpec],
    *,
    jobs: int = 1,
    cache_dir: Optional[os.PathLike] = DEFAULT_CACHE_DIR,
    progress: bool = True,
    skipped: Optional[list[dict[str, Any]]] = None,
    slurm: Optional[Slurm] = None,
) -> Results:
    """Benchmark ``predictors`` on benchmark tasks already defined (:mod:`perfzoo.evaluation.suite`),
    each with its dataset; ``skipped`` (the splits left out while defining them) is reported;
    ``slurm``: the fits run as ``jobs`` Slurm jobs (:func:`run_tasks`)."""
    skipped = list(skipped or [])
    tasks: list[Task] = [t for ds, bt in defined for t in fits(ds, bt, predictors, skipped=skipped)]
    results, computed, cached = run_tasks(tasks, jobs=jobs, cache=Cache(cache_dir), progress=progress, slurm=slurm)
    predictions = {}
    rows = []
    errors = []
    for r in results:
        r = dict(r)
        yt, yp = r.pop("y_true", None), r.pop("y_pred", None)
        r.pop("traceback", None)
        if yt is not None:
            predictions[(r["dataset"], r["predictor"], r["split"], r["fold"], r["seed"])] = {"y_true": yt, "y_pred": yp}
        if r.get("error"):
            errors.append(r)
        rows.append(r)
    frame = pd.DataFrame(rows)
    return Results(frame, predictions, skipped, computed, cached, errors, [bt for _, bt in defined])
