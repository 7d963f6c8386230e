"""What the benchmark runs: predictor specs, tasks, their cache keys and the result cache.

One *task* fits one predictor on the training side of one split and scores it on the test
side. Members whose ``output`` tag is ``throughput`` or ``score`` see labelled rows only
(:attr:`~perfzoo.datasets.dataset.Dataset.is_labelled`) on both sides; a ``probability`` member (the
``failure`` classifier) sees every row and is scored by ROC AUC (only where a dataset has
failures on both sides). Each finished task is stored as one JSON file under the cache
directory (default ``.perfzoo-cache/``, gitignored), keyed by

    (dataset content hash, predictor name + parameters + code fingerprint, split rows, seed)

so a rerun computes only what changed. The code fingerprint hashes the source of every class
the member is made of (its module and its bases', a plugin's as a zoo member's) and of
``perfzoo.zoo.features`` / ``perfzoo.analytic`` / ``perfzoo.frameworks`` (the traits the physics
reads): editing a model invalidates its results, nothing else does. Each fit names its benchmark task (``ids['task']``, :mod:`perfzoo.evaluation.suite`).

>>> from perfzoo.datasets import load_dataset
>>> tasks = build_tasks(load_dataset("vtrain-a100"), [PredictorSpec("ridge")], ["random"], seeds=[0])
>>> len(tasks), tasks[0].ids["split"], len(tasks[0].y_test)
(1, 'random', 360)
"""

from __future__ import annotations

import hashlib
import inspect
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

import numpy as np
import pandas as pd

import perfzoo.analytic
import perfzoo.frameworks
import perfzoo.records.columns
import perfzoo.records.vocabulary
import perfzoo.workloads
import perfzoo.zoo.analytic_features
import perfzoo.zoo.anchor
import perfzoo.zoo.base
import perfzoo.zoo.conformal
import perfzoo.zoo.estimator
import perfzoo.zoo.features
import perfzoo.zoo.interval
import perfzoo.zoo.offsets
import perfzoo.zoo.plausible
import perfzoo.zoo.similarity
import perfzoo.zoo.targets
from perfzoo import zoo
from perfzoo.datasets.dataset import Dataset
from perfzoo.evaluation import anchored as _anchored
from perfzoo.evaluation import metrics as M
from perfzoo.evaluation import slots as slotting
from perfzoo.evaluation.splits import CURVE_SIZES, TRANSFER_SPLITS, Split
from perfzoo.evaluation.suite import BenchmarkTask, define_tasks
from perfzoo.hardware import accelerators
from perfzoo.zoo.calibrate import release_labels, source_labels
from perfzoo.zoo.plugin import source_files

RESULT_VERSION = 2  # bump when a task's output changes meaning: old cache entries are ignored
DEFAULT_CACHE_DIR = ".perfzoo-cache"


# --- predictors ---------------------------------------------------------------------------


@dataclass(frozen=True)
class PredictorSpec:
    """A predictor to benchmark: a name :func:`perfzoo.zoo.make` takes (a zoo member, an import
    path ``module:Class``, an installed member), its parameters, and how much to run it.

    ``label`` is the name on the leaderboard (default: ``name``, or ``name(k=v,...)`` when
    parameters are given). ``max_seeds`` caps the seeds of heavy members; ``curve`` says
    whether it takes part in learning curves; ``kinds`` (None: all) limits the split kinds it
    runs on and ``datasets`` (None: all) the datasets. ``factory`` (tests, experiments) builds the
    estimator instead of ``perfzoo.zoo.make``; a factory without the zoo's tags is a throughput
    regressor of cost 1.
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

    @property
    def member(self) -> Callable[..., Any]:
        """What builds the estimator (``factory``, else the zoo class): its class attributes
        are the member's tags (:mod:`perfzoo.zoo.base`)."""
        return self.factory if self.factory is not None else zoo.get(self.name)

    @property
    def output(self) -> str:
        """The member's ``output`` tag: ``throughput``, ``score`` or ``probability``."""
        return getattr(self.member, "output", "throughput")

    @property
    def fit_cost(self) -> float:
        """The member's ``fit_cost`` tag: fit time per training row relative to ridge's."""
        return float(getattr(self.member, "fit_cost", 1.0))

    def build(self, seed: Optional[int] = None) -> Any:
        """A fresh estimator, its random state set to ``seed`` where it has one."""
        est = self.factory(**dict(self.params)) if self.factory is not None else zoo.make(self.name, **dict(self.params))
        if seed is not None:
            set_seed(est, seed)
        return est

    def cache_identity(self) -> dict[str, Any]:
        return {"name": self.name, "params": [[k, repr(v)] for k, v in self.params],
                "code": _code_fingerprint(self)}


def set_seed(est: perfzoo.zoo.estimator.Estimator, seed: int) -> None:
    """Set ``random_state`` (or ``seed``) on an estimator that has one; otherwise do nothing."""
    params = est.get_params(deep=False)
    for name in ("random_state", "seed"):
        if name in params:
            est.set_params(**{name: int(seed)})
            return


_FINGERPRINTS: dict[str, str] = {}
# what every member's predictions depend on: the features, the analytic package, the framework
# bundles (the traits the physics reads), the workload bundles (their cost models and
# vocabularies), the vocabulary, the accelerator table, and the zoo's estimator protocol, base
# class and intervals
_SHARED_SOURCES = (
    inspect.getsourcefile(perfzoo.zoo.features), inspect.getsourcefile(perfzoo.zoo.analytic_features),
    inspect.getsourcefile(perfzoo.zoo.targets),
    inspect.getsourcefile(perfzoo.records.columns), inspect.getsourcefile(perfzoo.records.vocabulary),
    str(accelerators.TABLE),
    inspect.getsourcefile(perfzoo.zoo.estimator), inspect.getsourcefile(perfzoo.zoo.base),
    inspect.getsourcefile(perfzoo.zoo.interval), inspect.getsourcefile(perfzoo.zoo.conformal),
    *sorted(str(p) for p in Path(inspect.getsourcefile(perfzoo.analytic)).parent.glob("*.py")),
    *sorted(str(p) for p in Path(inspect.getsourcefile(perfzoo.frameworks)).parent.glob("*.py")),
    *sorted(str(p) for p in Path(inspect.getsourcefile(perfzoo.workloads)).parent.rglob("*.py")),
)


def _code_fingerprint(spec: PredictorSpec) -> str:
    """Hash of the source of every class the member is made of (:func:`perfzoo.zoo.plugin.source_files`:
    its module, its bases', a wrapped regressor's) plus :data:`_SHARED_SOURCES`."""
    if spec.name in _FINGERPRINTS and spec.factory is None:
        return _FINGERPRINTS[spec.name]
    files: list[Optional[str]] = list(_SHARED_SOURCES)
    try:
        files += source_files(spec.build())
    except Exception:  # a member that cannot be built: its tasks record the error
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


# --- tasks --------------------------------------------------------------------------------


@dataclass
class Task:
    """One (dataset, predictor, split) fit-and-score, everything a worker needs. With ``interval``
    the member also calibrates its prediction interval on the training side (folds by
    ``interval_groups``, None: by configuration) and the result holds its coverage."""

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
    interval: bool = False
    interval_groups: Optional[np.ndarray] = None
    interval_releases: Optional[np.ndarray] = None  # each training row's software release (calibrate.release_labels)
    anchor_releases: Optional[np.ndarray] = None  # each test row's: the shots-within groups are cut by it
    anchor_shots: tuple[int, ...] = ()  # with interval: also score K-shot-within anchoring (evaluation.anchored)
    anchor_draws: int = 5  # draws of those shots
    slots_test: Optional[tuple[np.ndarray, np.ndarray]] = None  # each test row's slot and layout (evaluation.slots)


_METRICS_SOURCE = hashlib.sha256(Path(M.__file__).read_bytes()).hexdigest()[:16]
_SLOTS_SOURCE = hashlib.sha256(Path(slotting.__file__).read_bytes()).hexdigest()[:16]  # keys the tasks scored by slot
# anchored scores (shots within a group) also change with the anchoring's code: it keys those tasks
_ANCHOR_SOURCE = hashlib.sha256(b"".join(Path(m.__file__).read_bytes() for m in (
    perfzoo.zoo.anchor, perfzoo.zoo.offsets, perfzoo.zoo.similarity, perfzoo.zoo.plausible, _anchored))).hexdigest()[:16]


def stable_hash(obj: Any) -> str:
    """sha256 of ``obj`` as sorted JSON: the same for equal content, run after run.

    >>> stable_hash({"b": 1, "a": 2}) == stable_hash({"a": 2, "b": 1})
    True
    """
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()


def _rows_hash(idx: np.ndarray) -> str:
    return hashlib.sha256(np.asarray(idx, dtype=np.int64).tobytes()).hexdigest()[:16]


def build_tasks(
    dataset: Dataset,
    predictors: Sequence[PredictorSpec],
    split_kinds: Sequence[str],
    seeds: Sequence[int],
    *,
    group_columns: Optional[Sequence[str]] = None,
    curve_sizes: Sequence[int] = CURVE_SIZES,
    curve_seeds: Optional[Sequence[int]] = None,
    skipped: Optional[list[dict[str, Any]]] = None,
) -> list[Task]:
    """Every fit of one dataset's benchmark tasks (:func:`perfzoo.evaluation.suite.define_tasks`;
    the failure classifier is added where it applies); each fit's ``ids['task']`` is its task's id.

    ``group_columns`` are the columns to leave out one value at a time (default: the
    dataset's :attr:`~perfzoo.datasets.dataset.Dataset.holdout_columns`). Splits the dataset cannot
    support are listed in ``skipped`` with the reason.
    """
    benchmark = define_tasks(dataset, split_kinds, seeds, group_columns=group_columns, curve_sizes=curve_sizes,
                             curve_seeds=curve_seeds, skipped=skipped)
    return [t for bt in benchmark for t in fits(dataset, bt, predictors, skipped)]


def fits(dataset: Dataset, task: BenchmarkTask, predictors: Sequence[PredictorSpec],
         skipped: Optional[list[dict[str, Any]]] = None) -> list[Task]:
    """The fits of one benchmark task: each member on each partition, as its tags and caps allow
    (none for ``transfer``: :mod:`perfzoo.evaluation.transfer` scores its matrix)."""
    if task.kind == "transfer":
        return []
    X, y = dataset.X, dataset.y
    labelled, failed = dataset.is_labelled, dataset.failed
    groups = dataset.comparable_groups()
    slotted = slotting.of_frame(dataset.frame)
    dhash, dname = task.content_hash, dataset.name
    sources, releases = source_labels(dataset.frame), release_labels(dataset.frame)
    tasks: list[Task] = []
    fail_spec = next((p for p in predictors if p.output == "probability"), None)
    for sp in task.splits:
        tr = sp.train[labelled[sp.train]]
        te = sp.test[labelled[sp.test]]
        seed_rank = task.seeds.index(sp.seed) if sp.seed in task.seeds else 0  # for the seed caps
        for spec in predictors:
            if spec.output == "probability":
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
            # the interval's coverage: on the transfer splits, every held-out source and the first seed
            # of the node split (its rows are the same for every seed; each interval costs 5 more fits)
            interval = (sp.name in TRANSFER_SPLITS and spec.output == "throughput"
                        and (sp.kind == "group" or seed_rank == 0))
            # leaving a published source out: what one and three runs of each held-out model then do
            anchor = M.WITHIN_SHOTS if interval and sp.kind == "group" and sources is not None else ()
            tasks.append(_task(task.id, dname, dhash, spec, sp, X, y, tr, te, groups, failure=False, interval=interval,
                               interval_groups=sources[tr] if interval and sources is not None else None,
                               anchor_shots=anchor, releases=releases, slots=slotted))
        # the failure classifier: every row, label = failed
        if fail_spec is not None and failed.any() and sp.kind != "curve":
            if failed[sp.train].any() and (~failed[sp.train]).any():
                if fail_spec.max_seeds is None or seed_rank < fail_spec.max_seeds:
                    tasks.append(_task(task.id, dname, dhash, fail_spec, sp, X, failed.astype(float),
                                       sp.train, sp.test, None, failure=True))
    return tasks


def _task(task_id: str, dname: str, dhash: str, spec: PredictorSpec, sp: Split, X: pd.DataFrame, y: np.ndarray,
          tr: np.ndarray, te: np.ndarray, groups: Optional[np.ndarray], failure: bool, interval: bool = False,
          interval_groups: Optional[np.ndarray] = None, anchor_shots: tuple[int, ...] = (),
          releases: Optional[np.ndarray] = None, slots: Optional[tuple[np.ndarray, np.ndarray]] = None) -> Task:
    ids = {"task": task_id, "dataset": dname, "predictor": spec.display, "output": spec.output,
           "split": sp.name, "kind": sp.kind, "fold": sp.fold, "seed": int(sp.seed)}
    key = stable_hash({"v": RESULT_VERSION, "metrics": _METRICS_SOURCE, "data": dhash,
                       "predictor": spec.cache_identity(), "split": sp.key, "train": _rows_hash(tr),
                       "test": _rows_hash(te), "failure": failure, "interval": interval,
                       **({"anchor": list(anchor_shots), "anchoring": _ANCHOR_SOURCE} if anchor_shots else {}),
                       **({"slots": _SLOTS_SOURCE} if slots is not None else {})})
    return Task(
        key=key, ids=ids, spec=spec,
        X_train=X.iloc[tr].reset_index(drop=True), y_train=y[tr],
        X_test=X.iloc[te].reset_index(drop=True), y_test=y[te],
        groups_test=None if groups is None else groups[te],
        failure=failure, keep_predictions=sp.kind in ("random", "temporal", "scale", "node"),
        interval=interval, interval_groups=interval_groups, anchor_shots=tuple(anchor_shots),
        interval_releases=None if releases is None or not interval else releases[tr],
        anchor_releases=None if releases is None or not anchor_shots else releases[te],
        slots_test=None if slots is None else (slots[0][te], slots[1][te]),
    )


# --- the cache ----------------------------------------------------------------------------


class Cache:
    """Finished task results, one JSON file each under ``root/<key[:2]>/<key>.json``
    (``root`` None: a cache that holds nothing)."""

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
