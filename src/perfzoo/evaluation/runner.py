"""The benchmark runner: predictors x datasets x splits x seeds, in parallel, cached.

One *task* fits one predictor on the training side of one split and scores it on the test
side. Throughput predictors see successful jobs only (``status == 'ok'``) on both sides; the
``failure`` classifier sees every row and is scored by ROC AUC (only where a dataset has
failures on both sides). Each finished task is stored as one JSON file under the cache
directory (default ``.perfzoo-cache/``, gitignored), keyed by

    (dataset content hash, predictor name + parameters + code fingerprint, split rows, seed)

so a rerun computes only what changed. The code fingerprint hashes the source of the
predictor's module and of ``perfzoo.features`` / ``perfzoo.analytic``: editing a model
invalidates its results, nothing else does. Tasks that raise are recorded with their error
and *not* cached.

Example
-------
>>> from perfzoo.datasets import load_dataset                            # doctest: +SKIP
>>> ds = load_dataset("vtrain-a100")                                      # doctest: +SKIP
>>> results = run([ds], [PredictorSpec("lightgbm")], ["random"], seeds=range(3))  # doctest: +SKIP
>>> results.frame.groupby("predictor")["kendall"].mean()                 # doctest: +SKIP
"""

from __future__ import annotations

import hashlib
import inspect
import json
import os
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

import numpy as np
import pandas as pd

from perfzoo.evaluation import metrics as M
from perfzoo.evaluation.splits import Split, SplitNotApplicable, make_splits, CURVE_SIZES

RESULT_VERSION = 1  # bump when a task's output changes meaning: old cache entries are ignored
DEFAULT_CACHE_DIR = ".perfzoo-cache"
FAILURE_PREDICTOR = "failure"


# --- predictors ---------------------------------------------------------------------------


@dataclass(frozen=True)
class PredictorSpec:
    """A predictor to benchmark: a zoo name, its parameters, and how much to run it.

    ``label`` is the name on the leaderboard (default: ``name``, or ``name(k=v,...)`` when
    parameters are given). ``max_seeds`` caps the seeds of heavy members; ``curve`` says
    whether it takes part in learning curves; ``kinds`` (None: all) limits the split kinds it
    runs on and ``datasets`` (None: all) the datasets. ``factory`` (tests, experiments) builds the
    estimator instead of ``perfzoo.zoo.make``.
    """

    name: str
    params: tuple[tuple[str, Any], ...] = ()
    label: str = ""
    max_seeds: Optional[int] = None
    curve: bool = True
    kinds: Optional[tuple[str, ...]] = None
    datasets: Optional[tuple[str, ...]] = None
    factory: Optional[Callable[..., Any]] = field(default=None, compare=False, repr=False)

    @classmethod
    def of(cls, name: str, **kw: Any) -> "PredictorSpec":
        params = kw.pop("params", {}) or {}
        return cls(name, tuple(sorted(params.items())), **kw)

    @property
    def display(self) -> str:
        if self.label:
            return self.label
        if not self.params:
            return self.name
        return f"{self.name}(" + ",".join(f"{k}={v}" for k, v in self.params) + ")"

    def build(self, seed: Optional[int] = None) -> Any:
        """A fresh estimator, its random state set to ``seed`` where it has one."""
        if self.factory is not None:
            est = self.factory(**dict(self.params))
        else:
            from perfzoo import zoo

            est = zoo.make(self.name, **dict(self.params))
        if seed is not None:
            set_seed(est, seed)
        return est

    def cache_identity(self) -> dict[str, Any]:
        return {"name": self.name, "params": [[k, repr(v)] for k, v in self.params],
                "code": _code_fingerprint(self)}


def set_seed(est: Any, seed: int) -> None:
    """Set ``random_state`` (or ``seed``) on an estimator that has one; otherwise do nothing."""
    try:
        params = est.get_params(deep=False)
    except Exception:  # not a scikit-learn estimator
        return
    for name in ("random_state", "seed"):
        if name in params:
            est.set_params(**{name: int(seed)})
            return


def set_threads(est: Any, threads: int) -> None:
    """Give a member ``threads`` CPU threads (its ``n_jobs``) so parallel workers do not oversubscribe."""
    try:
        if "n_jobs" in est.get_params(deep=False):
            est.set_params(n_jobs=max(1, int(threads)))
    except Exception:
        pass


_FINGERPRINTS: dict[str, str] = {}


def _code_fingerprint(spec: PredictorSpec) -> str:
    """Hash of the predictor's module source plus perfzoo.features / perfzoo.analytic."""
    if spec.name in _FINGERPRINTS and spec.factory is None:
        return _FINGERPRINTS[spec.name]
    files: list[str] = []
    try:
        cls = type(spec.build())
        files.append(inspect.getsourcefile(cls) or "")
    except Exception:
        pass
    for mod in ("perfzoo.features", "perfzoo.analytic"):
        try:
            __import__(mod)
            files.append(inspect.getsourcefile(sys.modules[mod]) or "")
        except Exception:
            pass
    h = hashlib.sha256()
    for f in sorted(set(filter(None, files))):
        try:
            h.update(Path(f).read_bytes())
        except OSError:
            pass
    digest = h.hexdigest()[:16]
    if spec.factory is None:
        _FINGERPRINTS[spec.name] = digest
    return digest


# --- datasets -----------------------------------------------------------------------------


def dataset_hash(dataset: Any) -> str:
    """``dataset.content_hash()`` where it exists, else a hash of the frame."""
    if hasattr(dataset, "content_hash"):
        return str(dataset.content_hash())
    return hashlib.sha256(pd.util.hash_pandas_object(dataset.frame.astype(str), index=False).values.tobytes()).hexdigest()


def feature_frame(dataset: Any) -> pd.DataFrame:
    """The predictor inputs of every row (failed ones included), as ``dataset.X`` would give.

    ``dataset.X`` may hold only successful rows; the failure classifier needs all of them,
    so the features are taken from ``dataset.frame[dataset.feature_columns]``.
    """
    cols = list(dataset.feature_columns)
    return dataset.frame[cols].reset_index(drop=True)


def target_values(dataset: Any) -> np.ndarray:
    """The target of every row (NaN for failed jobs)."""
    return pd.to_numeric(dataset.frame[dataset.target], errors="coerce").to_numpy(dtype=float)


def ok_mask(dataset: Any) -> np.ndarray:
    """Rows whose throughput counts: status ok and a finite target."""
    frame = dataset.frame
    ok = (frame["status"] == "ok").to_numpy() if "status" in frame.columns else np.ones(len(frame), bool)
    return ok & np.isfinite(target_values(dataset))


def failed_mask(dataset: Any) -> np.ndarray:
    frame = dataset.frame
    if "status" not in frame.columns:
        return np.zeros(len(frame), bool)
    return (frame["status"] != "ok").to_numpy()


MODEL_COLUMNS = ("config.model_name",)
MODEL_SHAPE_COLUMNS = ("config.n_layers", "config.hidden_dim", "config.ffn_dim", "config.n_heads",
                       "config.seq_len", "config.width", "config.n_tables", "config.rows_per_table",
                       "config.emb_dim")


DEVICE_COUNT_COLUMNS = ("config.n_gpus", "config.world_size", "hardware.accelerator_count")


def comparable_columns(dataset: Any) -> list[str]:
    """The columns that define a group of comparable jobs (for grouped Kendall).

    ``dataset.comparable_columns`` where a dataset names them; otherwise the model (its
    ``config.model_name``, or its shape columns where no row has a name), the device count
    (``config.n_gpus``, else ``config.world_size``, else ``hardware.accelerator_count``) and
    the accelerator: the jobs a searcher chooses between (same model on the same machines).
    """
    named = getattr(dataset, "comparable_columns", None)
    frame = dataset.frame
    if named:
        return [c for c in named if c in frame.columns]
    cols = [c for c in MODEL_COLUMNS if c in frame.columns and frame[c].notna().all()]
    if not cols:
        cols = [c for c in MODEL_SHAPE_COLUMNS if c in frame.columns]
    devices = next((c for c in DEVICE_COUNT_COLUMNS if c in frame.columns and frame[c].notna().any()), None)
    for c in (devices, "hardware.accelerator"):
        if c and c in frame.columns and c not in cols:
            cols.append(c)
    return cols


def comparable_groups(dataset: Any, frame: Optional[pd.DataFrame] = None) -> Optional[np.ndarray]:
    """One label per row naming its group of comparable jobs (see :func:`comparable_columns`)."""
    frame = dataset.frame if frame is None else frame
    cols = [c for c in comparable_columns(dataset) if c in frame.columns]
    if not cols:
        return None
    parts = frame[cols].astype(object).where(frame[cols].notna(), "<na>").astype(str)
    return parts.agg("|".join, axis=1).to_numpy()


def dataset_name(dataset: Any) -> str:
    return str(getattr(dataset, "name", "dataset"))


# --- tasks --------------------------------------------------------------------------------


@dataclass
class Task:
    """One (dataset, predictor, split) fit-and-score, everything a worker needs."""

    key: str
    ids: dict[str, Any]
    spec: PredictorSpec
    X_train: pd.DataFrame
    y_train: np.ndarray
    X_test: pd.DataFrame
    y_test: np.ndarray
    groups_test: Optional[np.ndarray]
    failure: bool = False
    keep_predictions: bool = True
    threads: int = 1


def execute(task: Task) -> dict[str, Any]:
    """Fit and score one task on ``task.threads`` threads (default one: parallelism comes from
    processes; OpenMP libraries slow down by 10-50x when cores are oversubscribed); never
    raises (an error is recorded in the result)."""
    import warnings

    from threadpoolctl import threadpool_limits

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
        t0 = time.perf_counter()
        est.fit(task.X_train, task.y_train, **fit_kwargs(est, task.ids.get("dataset")))
        out["fit_time_s"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        if task.failure:
            pred = _failure_scores(est, task.X_test)
        else:
            pred = np.asarray(est.predict(task.X_test), dtype=float).ravel()
        out["predict_time_s"] = time.perf_counter() - t0
        if task.failure:
            out["roc_auc"] = M.roc_auc(task.y_test.astype(bool), pred)
        else:
            out.update(M.score(task.y_test, pred, task.groups_test))
        if task.keep_predictions:
            out["y_true"] = [float(v) for v in task.y_test]
            out["y_pred"] = [float(v) if np.isfinite(v) else None for v in pred]
        out["error"] = None
    except Exception as exc:  # a broken member must not stop the benchmark
        out["error"] = f"{type(exc).__name__}: {exc}"
        out["traceback"] = traceback.format_exc(limit=6)
    return out


def fit_kwargs(est: Any, dataset: Optional[str]) -> dict[str, Any]:
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


def _failure_scores(est: Any, X: pd.DataFrame) -> np.ndarray:
    """P(fail) from the failure classifier: ``predict_proba`` column 1, else ``predict``."""
    if hasattr(est, "predict_proba"):
        proba = np.asarray(est.predict_proba(X), dtype=float)
        return proba[:, -1] if proba.ndim == 2 else proba.ravel()
    return np.asarray(est.predict(X), dtype=float).ravel()


_METRICS_SOURCE = hashlib.sha256(Path(M.__file__).read_bytes()).hexdigest()[:16]


def stable_hash(obj: Any) -> str:
    """sha256 of ``obj`` as sorted JSON: the same for equal content, run after run."""
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()


def _rows_hash(idx: np.ndarray) -> str:
    return hashlib.sha256(np.asarray(idx, dtype=np.int64).tobytes()).hexdigest()[:16]


def build_tasks(
    dataset: Any,
    predictors: Sequence[PredictorSpec],
    split_kinds: Sequence[str],
    seeds: Sequence[int],
    *,
    group_columns: Optional[Sequence[str]] = None,
    curve_sizes: Sequence[int] = CURVE_SIZES,
    curve_seeds: Optional[Sequence[int]] = None,
    skipped: Optional[list[dict[str, Any]]] = None,
) -> list[Task]:
    """Every task for one dataset (the failure classifier is added where it applies).

    ``group_columns`` are the columns to leave out one value at a time (default: the
    dataset's own ``group_columns`` that vary). Splits the dataset cannot support are listed in
    ``skipped`` with the reason.
    """
    X = feature_frame(dataset)
    y = target_values(dataset)
    ok = ok_mask(dataset)
    failed = failed_mask(dataset)
    groups = comparable_groups(dataset)
    dhash = dataset_hash(dataset)
    dname = dataset_name(dataset)
    curve_seeds = list(curve_seeds) if curve_seeds is not None else list(range(max(10, len(seeds))))

    splits: list[Split] = []
    for kind in split_kinds:
        try:
            if kind == "group":
                for col in group_columns or default_holdout_columns(dataset):
                    try:
                        splits += make_splits(dataset, "group", group_column=col)
                    except SplitNotApplicable as exc:
                        if skipped is not None:
                            skipped.append({"dataset": dname, "split": f"group:{col}", "reason": str(exc)})
            elif kind == "curve":
                splits += make_splits(dataset, "curve", curve_seeds, curve_sizes=curve_sizes)
            else:
                splits += make_splits(dataset, kind, seeds)
        except SplitNotApplicable as exc:
            if skipped is not None:
                skipped.append({"dataset": dname, "split": kind, "reason": str(exc)})

    tasks: list[Task] = []
    has_failures = failed.any()
    for sp in splits:
        tr = sp.train[ok[sp.train]]
        te = sp.test[ok[sp.test]]
        seed_rank = _seed_rank(sp, seeds, curve_seeds)
        for spec in predictors:
            if spec.name == FAILURE_PREDICTOR:
                continue
            if sp.kind == "curve" and not spec.curve:
                continue
            if spec.kinds is not None and sp.kind not in spec.kinds:
                continue
            if spec.datasets is not None and dname not in spec.datasets:
                continue
            if spec.max_seeds is not None and seed_rank >= spec.max_seeds and sp.kind != "group":
                continue
            if tr.size < 2 or te.size < 2:
                if skipped is not None and spec is predictors[0]:
                    skipped.append({"dataset": dname, "split": sp.name, "reason": f"{tr.size} ok training and "
                                    f"{te.size} ok test rows (at least 2 each)"})
                continue
            tasks.append(_task(dname, dhash, spec, sp, X, y, tr, te, groups, failure=False))
        # the failure classifier: every row, label = failed
        fail_spec = next((p for p in predictors if p.name == FAILURE_PREDICTOR), None)
        if fail_spec is not None and has_failures and sp.kind != "curve":
            if failed[sp.train].any() and (~failed[sp.train]).any():
                if fail_spec.max_seeds is None or seed_rank < fail_spec.max_seeds:
                    tasks.append(_task(dname, dhash, fail_spec, sp, X, failed.astype(float),
                                       sp.train, sp.test, None, failure=True))
    return tasks


def _seed_rank(sp: Split, seeds: Sequence[int], curve_seeds: Sequence[int]) -> int:
    """For seed caps: the position of a split's seed in its seed list (0 = first)."""
    order = list(curve_seeds) if sp.kind == "curve" else list(seeds)
    return order.index(sp.seed) if sp.seed in order else 0


def _task(dname, dhash, spec, sp, X, y, tr, te, groups, failure) -> Task:
    ids = {"dataset": dname, "predictor": spec.display, "split": sp.name, "kind": sp.kind,
           "fold": sp.fold, "seed": int(sp.seed)}
    key = stable_hash({"v": RESULT_VERSION, "metrics": _METRICS_SOURCE, "data": dhash,
                       "predictor": spec.cache_identity(), "split": sp.key, "train": _rows_hash(tr),
                       "test": _rows_hash(te), "failure": failure})
    return Task(
        key=key, ids=ids, spec=spec,
        X_train=X.iloc[tr].reset_index(drop=True), y_train=y[tr],
        X_test=X.iloc[te].reset_index(drop=True), y_test=y[te],
        groups_test=None if groups is None else groups[te],
        failure=failure, keep_predictions=sp.kind in ("random", "temporal", "scale"),
    )


def default_holdout_columns(dataset: Any) -> list[str]:
    """Columns for leave-one-group-out: the dataset's ``group_columns`` that vary."""
    frame = dataset.frame
    named = getattr(dataset, "group_columns", None) or ("source", "hardware.accelerator")
    return [c for c in named if c in frame.columns and frame[c].nunique(dropna=False) > 1]


# --- the cache ----------------------------------------------------------------------------


class Cache:
    """Finished task results, one JSON file each under ``root/<key[:2]>/<key>.json``."""

    def __init__(self, root: Optional[os.PathLike] = DEFAULT_CACHE_DIR):
        self.root = Path(root) if root is not None else None

    def _path(self, key: str) -> Path:
        assert self.root is not None
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> Optional[dict[str, Any]]:
        if self.root is None:
            return None
        path = self._path(key)
        try:
            return json.loads(path.read_text())
        except (OSError, ValueError):
            return None

    def put(self, key: str, result: dict[str, Any]) -> None:
        if self.root is None or result.get("error"):
            return
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".tmp{os.getpid()}")
        tmp.write_text(json.dumps(result, allow_nan=True, default=_json_default))
        os.replace(tmp, path)


def _json_default(obj: Any) -> Any:
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (np.floating,)):
        return float(obj)
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    return str(obj)


# --- running ------------------------------------------------------------------------------


@dataclass
class Results:
    """What a run produced: one row per task (``frame``), predictions, skipped splits."""

    frame: pd.DataFrame
    predictions: dict[tuple, dict[str, list]]
    skipped: list[dict[str, Any]]
    computed: int
    cached: int
    errors: list[dict[str, Any]]


def run_tasks(
    tasks: Sequence[Task],
    *,
    jobs: int = 1,
    cache: Optional[Cache] = None,
    progress: bool = True,
    desc: str = "bench",
) -> tuple[list[dict[str, Any]], int, int]:
    """Run tasks (cached ones are read back), in parallel over ``jobs`` processes.

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
    if jobs == 1 or len(todo) <= 1:
        for i in todo:
            results[i] = execute(tasks[i])
            cache.put(tasks[i].key, results[i])
            bar.update(1)
    else:
        from joblib import Parallel, delayed

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


_HEAVY = {"mlp_rank_ensemble": 50.0, "gp": 5.0, "catboost": 4.0, "catboost_rank": 4.0, "mlp": 4.0,
          "random_forest": 2.0, "gbr": 2.0, "hybrid": 2.0}


def _cost(task: Task) -> float:
    return _HEAVY.get(task.spec.name, 1.0) * max(len(task.y_train), 1)


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
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=f"{desc} ({cached} cached)", unit="fit", file=sys.stderr,
                dynamic_ncols=True, smoothing=0.05)


def run(
    datasets: Sequence[Any],
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
    seeds = list(seeds)
    skipped: list[dict[str, Any]] = []
    tasks: list[Task] = []
    for ds in datasets:
        kinds = [k for k in split_kinds
                 if k != "curve" or curve_datasets is None or dataset_name(ds) in curve_datasets]
        tasks += build_tasks(
            ds, predictors, kinds, seeds, skipped=skipped, curve_sizes=curve_sizes,
            curve_seeds=curve_seeds,
            group_columns=(group_columns or {}).get(dataset_name(ds)),
        )
    results, computed, cached = run_tasks(tasks, jobs=jobs, cache=Cache(cache_dir), progress=progress)
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
    return Results(frame, predictions, skipped, computed, cached, errors)


# --- cross-dataset ------------------------------------------------------------------------


def cross_evaluate(
    train: Any, test: Any, predictors: Sequence[PredictorSpec], seed: int = 0
) -> list[dict[str, Any]]:
    """Fit each predictor on every ok row of ``train`` and score it on every ok row of ``test``.

    The test rows are given the training dataset's feature columns (a column the test file
    lacks is missing, which predictors handle as an unknown optional field).
    """
    X_tr = feature_frame(train)
    ok_tr = ok_mask(train)
    cols = list(train.feature_columns)
    X_te = test.frame.reindex(columns=cols).reset_index(drop=True)
    ok_te = ok_mask(test)
    y_tr, y_te = target_values(train), target_values(test)
    groups = comparable_groups(test)
    out = []
    for spec in predictors:
        if spec.name == FAILURE_PREDICTOR:
            continue
        task = Task(
            key="", ids={"train": dataset_name(train), "test": dataset_name(test), "predictor": spec.display,
                         "seed": seed},
            spec=spec, X_train=X_tr[ok_tr].reset_index(drop=True), y_train=y_tr[ok_tr],
            X_test=X_te[ok_te].reset_index(drop=True), y_test=y_te[ok_te],
            groups_test=None if groups is None else groups[ok_te], keep_predictions=False,
        )
        res = execute(task)
        res.pop("traceback", None)
        out.append(res)
    return out
