"""Train/test splits of a Dataset, each with one promise that the tests check.

Every split returns :class:`Split` objects holding *positional* row indices into
``dataset.frame`` (all rows, failed jobs included; the runner keeps only ``status == ok``
rows for throughput metrics and all rows for the failure classifier).

``random``
    Group-aware 75/25 (the paper's 423/145): rows sharing ``dataset.duplicate_key`` (the same
    configuration measured or published more than once) are always on the same side.
``temporal``
    The oldest ~75% by ``dataset.time_column`` predicts the newest ~25% ("older jobs predict
    newer jobs"). The cut is placed *between two distinct timestamps*, so every training row is
    strictly older than every test row; rows sharing a timestamp never straddle it.
``scale``
    Train on ``dataset.scale_column <= dataset.scale_threshold``, test above it (the paper:
    <= 3072 GPUs predict >= 4096; ``vtrain-a100``: 2-4 GPUs predict 8).
``node``
    Train on the jobs that ran within one node (``hardware.nodes == 1``), test on the multi-node
    jobs: the boundary where data-parallel and pipeline traffic leaves NVLink for the network,
    which an in-node scale split (``vtrain-a100``: 2-4 GPUs predict 8) never crosses.
``group``
    Leave one group out: for a column such as ``source``, ``hardware.accelerator`` or the model
    family, each value in turn is the test set and the rest trains.
``curve``
    Learning curve: a random group-aware 75/25 split per seed; the training side is subsampled
    to n eligible rows (nested: the n=50 set contains the n=25 set), the test side is fixed.
``shots``
    Few-shot calibration (:func:`shots_split`): k configurations drawn by seed are the
    training side (they join another dataset's rows), the rest of the dataset is the test side.

:data:`TRANSFER_SPLITS` are the splits that score a predictor on data unlike its training data
(a source it never saw, jobs across the node boundary): the shipping rule weighs absolute
error there and the benchmark reports interval coverage there.

A split that the dataset cannot support (one timestamp for all rows, no scale metadata, a
side left empty) raises :class:`SplitNotApplicable`, which the runner records and skips.

Example
-------
>>> from perfzoo.datasets import load_dataset            # doctest: +SKIP
>>> ds = load_dataset("vtrain-a100")                      # doctest: +SKIP
>>> [s.test.size for s in random_splits(ds, seeds=range(2))]   # doctest: +SKIP
[360, 360]
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Optional, Sequence

import numpy as np
import pandas as pd

from perfzoo.console import DataError, InputError
from perfzoo.datasets.dataset import Dataset
from perfzoo.zoo.calibrate import SOURCE_COLUMN

TEST_SIZE = 0.25
CURVE_SIZES: tuple[int, ...] = (25, 50, 100, 150, 200, 300, 500, 750, 1000, 1500, 2000)
SPLIT_KINDS: tuple[str, ...] = ("random", "temporal", "scale", "node", "group", "curve")
SOURCE_SPLIT = f"group:{SOURCE_COLUMN}"  # leave one published source out
NODE_COLUMN = "hardware.nodes"
TRANSFER_SPLITS: tuple[str, ...] = (SOURCE_SPLIT, "node")


class SplitNotApplicable(DataError):
    """The dataset cannot support this split (the message says why)."""


@dataclass(frozen=True)
class Split:
    """One train/test partition of ``dataset.frame`` (positional indices, sorted).

    ``kind`` is one of :data:`SPLIT_KINDS` (or ``shots``); ``name`` identifies the split family within a
    dataset (``random``, ``group:source``, ``curve``); ``seed`` is the random seed (or the
    index of the held-out group); ``fold`` says what was held out or the train size;
    ``info`` carries what a reader needs (threshold, cut time, held-out value).
    """

    kind: str
    name: str
    seed: int
    train: np.ndarray
    test: np.ndarray
    fold: str = ""
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> str:
        """A stable identifier for caching: ``name/fold/seed``."""
        return f"{self.name}/{self.fold}/{self.seed}"


def duplicate_groups(dataset: Dataset) -> np.ndarray:
    """One integer per row: equal for rows measuring the same configuration (equal
    ``dataset.duplicate_key``); a row without a key is its own group."""
    frame, key = dataset.frame, dataset.duplicate_key
    values = frame[key].astype(object).where(frame[key].notna(), None)
    # a missing key means "unknown configuration": its own group
    labels = [f"\x00row{i}" if v is None else str(v) for i, v in enumerate(values)]
    return pd.factorize(pd.Series(labels))[0]


def _group_aware_cut(
    groups: np.ndarray, rng: np.random.Generator, test_size: float
) -> tuple[np.ndarray, np.ndarray]:
    """Shuffle the groups and move whole groups to the test side until it holds ~test_size."""
    n = groups.size
    uniq, counts = np.unique(groups, return_counts=True)
    order = rng.permutation(uniq.size)
    target = test_size * n
    cum = np.cumsum(counts[order])
    # the number of groups whose cumulative row count is closest to the target (>= 1)
    n_test_groups = int(np.argmin(np.abs(cum - target))) + 1
    n_test_groups = min(max(n_test_groups, 1), uniq.size - 1)
    test_groups = uniq[order[:n_test_groups]]
    is_test = np.isin(groups, test_groups)
    return np.flatnonzero(~is_test), np.flatnonzero(is_test)


def random_split(dataset: Dataset, seed: int, test_size: float = TEST_SIZE) -> Split:
    """A group-aware random split: duplicates of one configuration stay on one side."""
    groups = duplicate_groups(dataset)
    if np.unique(groups).size < 2:
        raise SplitNotApplicable("random split needs at least two distinct configurations")
    train, test = _group_aware_cut(groups, np.random.default_rng(seed), test_size)
    return Split("random", "random", int(seed), train, test, info={"test_size": test_size})


def random_splits(dataset: Dataset, seeds: Iterable[int] = range(5), test_size: float = TEST_SIZE) -> list[Split]:
    """:func:`random_split` for each seed."""
    return [random_split(dataset, s, test_size) for s in seeds]


def temporal_split(dataset: Dataset, test_size: float = TEST_SIZE, time_column: Optional[str] = None) -> Split:
    """Oldest ~75% predicts the newest ~25%, cut between two distinct timestamps.

    Of all cuts between consecutive distinct times, the one whose training share is closest
    to ``1 - test_size`` is used (both sides non-empty). Every training row is strictly older
    than every test row. Rows without a time (a published row without a date) are on neither
    side; ``info['undated']`` counts them.
    """
    frame = dataset.frame
    column = time_column or dataset.time_column
    if column not in frame.columns:
        raise SplitNotApplicable(f"temporal split: the dataset has no time column {column!r}")
    times = pd.to_datetime(frame[column], utc=True)
    dated = np.flatnonzero(times.notna().to_numpy())
    # nanoseconds since the epoch, whatever resolution the column has (pandas 3: us or s)
    t = times.iloc[dated].dt.tz_convert("UTC").dt.tz_localize(None).to_numpy(dtype="datetime64[ns]").astype("int64")
    distinct = np.unique(t)
    if distinct.size < 2:
        raise SplitNotApplicable(
            f"temporal split: the {len(t)} rows with a {column!r} (of {len(frame)}) share one or none; "
            "there is no older/newer"
        )
    # share of rows strictly older than each distinct time d[i] (i >= 1): a cut just before d[i]
    n_before = np.searchsorted(np.sort(t), distinct[1:], side="left")
    share = n_before / t.size
    i = int(np.argmin(np.abs(share - (1.0 - test_size))))
    cut = distinct[i + 1]
    train = dated[t < cut]
    test = dated[t >= cut]
    cut_ts = pd.Timestamp(int(cut), unit="ns", tz="UTC")
    return Split(
        "temporal", "temporal", 0, train, test,
        info={"time_column": column, "cut": cut_ts.isoformat(), "train_share": round(float(share[i]), 4),
              "undated": len(frame) - len(dated)},
    )


def scale_split(
    dataset: Dataset, scale_column: Optional[str] = None, threshold: Optional[float] = None
) -> Split:
    """Train on ``scale <= threshold``, test on ``scale > threshold`` (from dataset metadata)."""
    frame = dataset.frame
    column = scale_column or dataset.scale_column
    thr = threshold if threshold is not None else dataset.scale_threshold
    if column is None or thr is None:
        raise SplitNotApplicable("scale split: the dataset names no scale column and threshold")
    if column not in frame.columns:
        raise SplitNotApplicable(f"scale split: the dataset has no column {column!r}")
    scale = pd.to_numeric(frame[column], errors="coerce").to_numpy(dtype=float)
    known = np.isfinite(scale)
    train = np.flatnonzero(known & (scale <= thr))
    test = np.flatnonzero(known & (scale > thr))
    if train.size == 0 or test.size == 0:
        raise SplitNotApplicable(
            f"scale split: {column} <= {thr} leaves {train.size} training and {test.size} test rows"
        )
    return Split(
        "scale", "scale", 0, train, test,
        info={"scale_column": column, "threshold": float(thr), "unknown_scale_rows": int((~known).sum())},
    )


def node_split(dataset: Dataset, column: str = NODE_COLUMN) -> Split:
    """Train on single-node jobs (``column == 1``), test on multi-node jobs (``column > 1``); rows
    with an unknown node count are on neither side (``info['unknown_node_rows']`` counts them)."""
    frame = dataset.frame
    if column not in frame.columns:
        raise SplitNotApplicable(f"node split: the dataset has no column {column!r}")
    nodes = pd.to_numeric(frame[column], errors="coerce").to_numpy(dtype=float)
    train, test = np.flatnonzero(nodes == 1), np.flatnonzero(nodes > 1)
    if train.size == 0 or test.size == 0:
        raise SplitNotApplicable(f"node split: {train.size} single-node and {test.size} multi-node jobs "
                                 "(it needs both)")
    return Split("node", "node", 0, train, test, info={"column": column,
                                                      "unknown_node_rows": int((~np.isfinite(nodes)).sum())})


def shots_split(dataset: Dataset, k: int, seed: int) -> Split:
    """``k`` configurations of ``dataset`` drawn by ``seed`` (every copy of each: equal
    ``duplicate_key``) as the training side, the rest as the test side; ``k = 0`` leaves the
    training side empty. Give the labelled rows only (:meth:`Dataset.labelled`) to draw measured jobs.

    >>> import pandas as pd; from types import SimpleNamespace
    >>> ds = SimpleNamespace(frame=pd.DataFrame({"config_key": ["a", "a", "b", "c"]}), duplicate_key="config_key")
    >>> sp = shots_split(ds, 1, seed=0)
    >>> sorted(sp.train.tolist() + sp.test.tolist()), sp.fold
    ([0, 1, 2, 3], '1')
    """
    groups = duplicate_groups(dataset)
    uniq = np.unique(groups)
    if not 0 <= k < uniq.size:
        raise SplitNotApplicable(f"shots split: {k} shots leave no test rows of the {uniq.size} "
                                 "configurations there are (use fewer shots)")
    drawn = np.random.default_rng(seed).choice(uniq, size=k, replace=False)
    is_shot = np.isin(groups, drawn)
    return Split("shots", "shots", int(seed), np.flatnonzero(is_shot), np.flatnonzero(~is_shot), fold=str(k),
                 info={"shots": int(k)})


def group_splits(dataset: Dataset, column: str, min_test: int = 5, min_train: int = 20) -> list[Split]:
    """Leave one value of ``column`` out at a time (values with < ``min_test`` rows are skipped).

    The split name is ``group:<column>``; ``seed`` is the index of the held-out value (in
    sorted order) and ``fold`` its text.
    """
    frame = dataset.frame
    if column not in frame.columns:
        raise SplitNotApplicable(f"group split: the dataset has no column {column!r}")
    values = frame[column].astype(object).where(frame[column].notna(), "(missing)").astype(str)
    uniq = sorted(values.unique())
    if len(uniq) < 2:
        raise SplitNotApplicable(f"group split: {column!r} has a single value {uniq[0]!r}")
    out = []
    v = values.to_numpy()
    for i, value in enumerate(uniq):
        test = np.flatnonzero(v == value)
        train = np.flatnonzero(v != value)
        if test.size < min_test or train.size < min_train:
            continue
        out.append(Split("group", f"group:{column}", i, train, test, fold=value,
                         info={"column": column, "held_out": value}))
    if not out:
        raise SplitNotApplicable(f"group split: no value of {column!r} has >= {min_test} rows")
    return out


def curve_splits(
    dataset: Dataset,
    sizes: Sequence[int] = CURVE_SIZES,
    seeds: Iterable[int] = range(10),
    eligible: Optional[np.ndarray] = None,
    test_size: float = TEST_SIZE,
) -> list[Split]:
    """Learning-curve splits: per seed one random group-aware split, train subsampled to n.

    ``eligible`` (bool per row; default ``status == 'ok'``) says
    which rows count toward n; the test side keeps all its rows. Sizes larger than the
    eligible training side are dropped. Subsets are nested within a seed.
    """
    if eligible is None:
        eligible = (dataset.frame["status"] == "ok").to_numpy()
    eligible = np.asarray(eligible, dtype=bool)
    out = []
    for seed in seeds:
        base = random_split(dataset, seed, test_size)
        pool = base.train[eligible[base.train]]
        order = np.random.default_rng(10_000 + int(seed)).permutation(pool)
        for n in sizes:
            if n > order.size:
                continue
            out.append(Split("curve", "curve", int(seed), np.sort(order[:n]), base.test, fold=str(n),
                             info={"train_size": int(n)}))
    if not out and len(sizes):
        raise SplitNotApplicable(f"curve split: every training size ({', '.join(map(str, sizes))}) exceeds the "
                                 f"{order.size} rows a training side holds; give smaller --curve-sizes")
    return out


def make_splits(
    dataset: Dataset,
    kind: str,
    seeds: Iterable[int] = range(5),
    *,
    group_column: Optional[str] = None,
    curve_sizes: Sequence[int] = CURVE_SIZES,
) -> list[Split]:
    """The splits of one ``kind`` (see :data:`SPLIT_KINDS`) for a dataset.

    ``random`` and ``curve`` draw one partition per seed. ``temporal``, ``scale`` and ``node`` are
    deterministic: every seed gets the same rows and the seed varies only the predictor's
    random state. ``group`` needs ``group_column``; its seed is the held-out value's index.
    """
    seeds = list(seeds)
    if kind == "random":
        return random_splits(dataset, seeds)
    if kind in ("temporal", "scale", "node"):
        base = {"temporal": temporal_split, "scale": scale_split, "node": node_split}[kind](dataset)
        return [Split(base.kind, base.name, int(s), base.train, base.test, base.fold, base.info) for s in seeds]
    if kind == "group":
        if not group_column:
            raise InputError("group splits need group_column (e.g. 'source' or 'hardware.accelerator')")
        return group_splits(dataset, group_column)
    if kind == "curve":
        return curve_splits(dataset, curve_sizes, seeds)
    raise InputError(f"unknown split kind {kind!r}; choose one of {', '.join(SPLIT_KINDS)}")
