"""Few-shot calibration: a few jobs measured on the user's own cluster move the predictions.

The user's situation: a predictor fitted on public measurements, and one or a handful of their
own runs (any file or folder :func:`perfzoo.datasets.load_dataset` reads: a runs CSV in the keys
``predict`` takes, a published-table CSV, a record store that ``collect`` wrote). Two things are
learnt from them (:func:`calibrated`, what ``predict``, ``plan`` and ``search --calibrate`` do):

* an **anchor** (:mod:`perfzoo.zoo.anchor`): each run's offset against the predictor, pooled by
  model, GPU, precision, task and framework, moves every config of its group, and, shrunk
  further, the other models on that GPU and framework. This is where a software stack's offset
  lives, and one run measures it;
* a **refit** (:func:`join`): the runs join the training data and the member is fitted again,
  for the configs no run shares a GPU and framework with.

``python -m perfzoo.bench --train A --test B --shots K`` (K jobs of B drawn by seed) scores the
refit; ``--shots-within`` scores the anchor (:mod:`perfzoo.evaluation.anchored`).

>>> from perfzoo.datasets import load_dataset                                  # doctest: +SKIP
>>> joined = join(load_dataset("published-llm"), load_dataset("my_runs.csv"))  # doctest: +SKIP
>>> joined.used, joined.dataset.name                                           # doctest: +SKIP
(3, 'published-llm+my-runs')
>>> model = fit_with_interval(zoo.make("roofline"), joined.dataset)            # doctest: +SKIP
"""

from __future__ import annotations

import warnings
from collections import Counter
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from perfzoo import zoo
from perfzoo.datasets.dataset import Dataset
from perfzoo.datasets.sources import DataError
from perfzoo.hardware.capability import difference, hardware_of, kind
from perfzoo.zoo.anchor import Anchored
from perfzoo.zoo.base import Predictor
from perfzoo.zoo.conformal import ALPHA
from perfzoo.zoo.estimator import clone
from perfzoo.zoo.interval import Interval

CALIBRATION_COLUMN = "annotations.calibration"  # True on the rows a join added
SOURCE_COLUMN = "annotations.file"  # the published file a row came from (the ``published-llm`` sources)


@dataclass(frozen=True)
class Joined:
    """What :func:`join` made: the training data with the runs added, and its account of them."""

    dataset: Dataset
    used: int  # runs that joined the training data (finished, with a measured target)
    unusable: int  # runs left out: failed, or no measured target
    replaced: int  # training rows dropped because the same record is among the runs
    machines: tuple[str, ...] = ()  # runs that re-measure training configurations on machines that may not compare

    def describe(self, runs: str) -> str:
        """One line for the user: how many of their runs were used, why any were not, and whether
        the runs that re-measure training configurations ran on machines that compare."""
        text = f"calibrated with {self.used} of your jobs from {runs}"
        if self.unusable:
            text += f" ({self.unusable} left out: failed or no measured throughput)"
        if self.replaced:
            text += f"; {self.replaced} training rows were the same records and count once"
        return "; ".join([text, *self.machines])


def machine_differences(runs: pd.DataFrame, train: pd.DataFrame) -> tuple[str, ...]:
    """For the rows of ``runs`` that measure a configuration ``train`` holds (``config_key``), what
    differs between their machines and the training records' (:func:`perfzoo.hardware.capability.difference`),
    once per pair of machine kinds: a ratio between them is not a drift.

    >>> runs = pd.DataFrame({"config_key": ["a"], "hardware.accelerator": ["cpu"], "hardware.cpu_capability": ["AVX2"]})
    >>> train = pd.DataFrame({"config_key": ["a", "b"], "hardware.accelerator": ["cpu"] * 2})
    >>> print(machine_differences(runs, train)[0])
    1 of your jobs re-measure training configurations: the training records' CPU capability is unknown (not recorded): the machines may differ (this one: AVX2 (bf16 matmul emulated))
    """
    first = train.drop_duplicates("config_key").set_index("config_key")
    found: dict[tuple[str, str], str] = {}
    counts: Counter = Counter()
    for _, row in runs[runs["config_key"].isin(first.index)].iterrows():
        mine, theirs = hardware_of(row), hardware_of(first.loc[row["config_key"]])
        why = difference(mine, theirs, "the training records")
        if why is not None:
            kinds = kind(mine), kind(theirs)
            found.setdefault(kinds, why)
            counts[kinds] += 1
    return tuple(f"{counts[k]} of your jobs re-measure training configurations: {why}" for k, why in found.items())


def join(train: Dataset, runs: Dataset) -> Joined:
    """``train`` with the finished, measured jobs of ``runs`` added (in ``train``'s target column
    and feature columns; a column ``runs`` lacks is unknown there). A record in both counts once.

    Raises :class:`perfzoo.datasets.sources.DataError` when ``runs`` does not measure ``train``'s target
    or shares none of its config columns: such rows would teach the predictor nothing.
    """
    if train.target not in runs.frame.columns:
        raise DataError(f"{runs.name} has no column {train.target!r} (the target {train.name} is fitted on); "
                        f"give runs with that measurement (its target is {runs.target!r})")
    knobs = [c for c in train.feature_columns if c.startswith("config.") and c in runs.frame.columns
             and runs.frame[c].notna().any()]
    if not knobs:
        raise DataError(f"{runs.name} shares no config column with {train.name} (it has e.g. "
                        f"{', '.join(list(train.feature_columns)[:4])}); give the runs' configs in those columns")
    measured = pd.to_numeric(runs.frame[train.target], errors="coerce").to_numpy(dtype=float)
    usable = ~runs.failed & np.isfinite(measured)
    added = runs.frame[usable].assign(**{CALIBRATION_COLUMN: True})
    same = train.frame["record_id"].isin(set(added["record_id"])).to_numpy()
    frame = pd.concat([train.frame[~same].assign(**{CALIBRATION_COLUMN: False}), added], ignore_index=True)
    dataset = replace(train, name=f"{train.name}+{runs.name}", frame=frame)
    return Joined(dataset, used=int(usable.sum()), unusable=int((~usable).sum()), replaced=int(same.sum()),
                  machines=machine_differences(added, train.frame[~same]))


def source_labels(frame: pd.DataFrame) -> np.ndarray | None:
    """Each row's source where ``frame`` holds rows of two or more, else None: the groups an
    interval is cross-fitted over, so that it is sized for a source never seen
    (:class:`perfzoo.zoo.interval.Interval`). A source is a row's published file
    (:data:`SOURCE_COLUMN`), or, where every row was measured by the harness, its collection
    session (:func:`collection_sessions`): one lent machine, whose host paces short steps its own
    way, so an interval calibrated across sessions is sized for a machine never seen (on
    ``llm-h100``'s two sessions a fitted ``gp``'s 80% interval covers 79% of ``llm-h200``'s
    jobs, 68% calibrated across configurations).

    >>> source_labels(pd.DataFrame({SOURCE_COLUMN: ["a.csv", "b.csv"]})).tolist()
    ['a.csv', 'b.csv']
    """
    if SOURCE_COLUMN in frame.columns and frame[SOURCE_COLUMN].nunique() >= 2:
        return frame[SOURCE_COLUMN].astype(str).to_numpy()
    sessions = collection_sessions(frame)
    return sessions if sessions is not None and len(set(sessions)) >= 2 else None


def collection_sessions(frame: pd.DataFrame) -> np.ndarray | None:
    """Each measured job's collection session: the checkout the harness ran
    (``software.git_commit``) and the day it started; None unless every row was measured.

    >>> collection_sessions(pd.DataFrame({"source": ["measured"] * 2, "software.git_commit": ["a1", "a1"],
    ...                                   "started_at": pd.to_datetime(["2026-11-23 07:00", "2026-11-27 22:00"])})).tolist()
    ['a1@2026-11-23', 'a1@2026-11-27']
    """
    if not {"source", "software.git_commit", "started_at"} <= set(frame.columns) or not (frame["source"] == "measured").all():
        return None
    day = pd.to_datetime(frame["started_at"], utc=True).dt.strftime("%Y-%m-%d")
    return (frame["software.git_commit"].astype(str) + "@" + day).to_numpy()


def release_labels(frame: pd.DataFrame) -> np.ndarray | None:
    """Each row's software release, as far as the data tells: a measured job's collection session
    (:func:`collection_sessions`), a published row's publication date (the figures of one document
    version ran one container); None where the frame has no dates. Groups of one model cut by release
    are what a user's runs share with the layouts they ask about (:mod:`perfzoo.zoo.anchor`).

    >>> release_labels(pd.DataFrame({"source": ["published"] * 2,
    ...                              "started_at": pd.to_datetime(["2024-01-05", None], utc=True)})).tolist()
    ['2024-01-05', '?']
    """
    sessions = collection_sessions(frame)
    if sessions is not None:
        return sessions
    if "started_at" not in frame.columns:
        return None
    day = pd.to_datetime(frame["started_at"], utc=True).dt.strftime("%Y-%m-%d")
    return day.fillna("?").to_numpy(dtype=object)


def fit_with_interval(model: Predictor, dataset: Dataset) -> Predictor:
    """``model`` (a member, or an :class:`~perfzoo.zoo.interval.Interval` around one) fitted on the
    labelled jobs of ``dataset``: a ``throughput`` member wrapped in an Interval, its prediction
    interval calibrated there (folds by published source or collection session where the data holds
    several: :func:`source_labels`; the spread of offsets by release: :func:`release_labels`); a
    member of other outputs fitted as it is."""
    ok = dataset.labelled()
    y = pd.Series(ok.y, name=dataset.target)  # the target's name kept: per device or for the job
    if model.output != "throughput":
        return model.fit(ok.X, y, dataset=dataset.name)
    wrapped = model if isinstance(model, Interval) else Interval(model)
    return wrapped.fit(ok.X, y, dataset=dataset.name, groups=source_labels(ok.frame), releases=release_labels(ok.frame))


def run_names(runs: Dataset) -> list[str]:
    """A name per run a user can find it by: ``file line N`` where the run came from a table,
    else ``record <id>``."""
    f = runs.frame
    if {"annotations.file", "annotations.line"} <= set(f.columns):
        return [f"{a} line {int(b)}" if pd.notna(b) else str(r)
                for a, b, r in zip(f["annotations.file"], f["annotations.line"], f["record_id"])]
    return [f"record {str(r)[:12]}" for r in f["record_id"]]


@dataclass
class Calibrated:
    """A predictor calibrated with the user's runs (:func:`calibrated`): anchored where a run shares
    a config's GPU and framework, refitted with the runs joined elsewhere. It offers what an
    :class:`~perfzoo.zoo.interval.Interval` does (``predict``, ``predict_interval``, ``relative``,
    ``name``, ``input_columns_``) and says what moved each prediction (:meth:`explain`)."""

    base: Interval  # fitted without the runs: the anchors' offsets are measured against it
    refit: Interval  # fitted with the runs joined: for configs no run anchors
    anchored: Anchored
    joined: Joined
    runs: str

    @property
    def name(self) -> str:
        return self.base.name

    @property
    def input_columns_(self) -> list[str]:
        return list(self.base.input_columns_)

    def _levels(self, X: pd.DataFrame) -> np.ndarray:
        return self.anchored.levels(X)

    def predict(self, X: pd.DataFrame) -> np.ndarray:
        anchored = self._levels(X) != "none"
        return np.where(anchored, self.anchored.predict(X), self.refit.predict(X))

    def predict_interval(self, X: pd.DataFrame, alpha: float = ALPHA) -> tuple[np.ndarray, np.ndarray]:
        anchored = self._levels(X) != "none"
        a_low, a_high = self.anchored.predict_interval(X, alpha=alpha)
        r_low, r_high = self.refit.predict_interval(X, alpha=alpha)
        return np.where(anchored, a_low, r_low), np.where(anchored, a_high, r_high)

    def relative(self, alpha: float = ALPHA) -> tuple[float, float]:
        """The anchored spread's error between two layouts of one model (:meth:`Anchored.relative`)."""
        return self.anchored.relative(alpha)

    def explain(self, X: pd.DataFrame) -> list[str]:
        """Per row: which runs anchor it and by how much they moved it, or that the refit priced it."""
        return [text or "no run of yours on this GPU and framework: the predictor refitted with your runs"
                for text in self.anchored.explain(X)]

    def describe(self, X: pd.DataFrame | None = None) -> str:
        """What was done with the runs: anchors, runs left out and why, the refit; with the configs
        ``X`` asked about, the runs that anchor none of them (another GPU or framework)."""
        used = len(self.anchored.used_names)
        text = f"calibrated with {used} of your runs from {self.runs} (anchors; and refitted with them joined)"
        by_reason: dict[str, list[str]] = {}
        for run in self.anchored.left_out:
            by_reason.setdefault(run.left_out, []).append(run.name)
        for reason, names in by_reason.items():
            shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
            text += f"; left out {shown}: {reason}"
        idle = [] if X is None else self.anchored.idle(X)
        if idle:
            text += (f"; {', '.join(idle[:3])}{' and more' if len(idle) > 3 else ''} anchor none of these configs "
                     "(another GPU or framework): only the refit uses them")
        return text


def anchor_base(training: Dataset) -> Predictor:
    """The predictor ``--calibrate`` anchors where ``--predictor best`` (the default): the member
    :func:`perfzoo.zoo.anchor_member` names for ``training``, fitted there with its interval (it is
    refitted with the runs anyway, so nothing saved is needed)."""
    name, params = zoo.anchor_member(training)
    return fit_with_interval(zoo.make(name, **params), training)


def calibrated(base: Predictor, training: Dataset, runs: Dataset, runs_name: str) -> Calibrated:
    """``base`` (fitted on ``training``: an :class:`~perfzoo.zoo.interval.Interval`, or a member,
    then wrapped and fitted there with its interval: :func:`fit_with_interval`) calibrated with
    ``runs``: anchored on their offsets against it (:class:`~perfzoo.zoo.anchor.Anchored`), and a fresh
    copy refitted with them joined (:func:`join`). Runs without a measurement, whose config the cost
    model cannot price or that lie more than 3x off their prediction (with a warning naming each;
    the refit leaves them out too) are left out and named (:meth:`Calibrated.describe`), never used.

    Raises :class:`perfzoo.datasets.sources.DataError` when a run is faster than its GPU's peak
    (:mod:`perfzoo.zoo.plausible`) or no run can anchor: each was left out."""
    if not isinstance(base, Interval):
        base = fit_with_interval(clone(base), training)
    joined = join(training, runs)
    if runs.target != training.target and training.target not in runs.frame.columns:
        raise DataError(f"{runs.name} has no column {training.target!r}; give runs that measure it")
    y = pd.to_numeric(runs.frame[training.target], errors="coerce").to_numpy(dtype=float)
    y = np.where(runs.failed, np.nan, y)
    X = runs.frame.reindex(columns=list(training.feature_columns))
    anchored = Anchored(base, X, y, names=run_names(runs), target=training.target)
    flagged = np.array([run.flagged for run in anchored.runs], dtype=bool)
    for run in anchored.runs:
        if run.flagged:
            warnings.warn(f"--calibrate {runs_name}: {run.name} {run.left_out}")
    if flagged.any():  # nor does the refit learn from it
        joined = join(training, runs.subset(~flagged))
    if not anchored.used_names:
        reasons = "; ".join(f"{r.name}: {r.left_out}" for r in anchored.left_out[:5])
        raise DataError(f"--calibrate {runs_name}: no run can anchor a prediction ({reasons}); give finished runs "
                        "of configs predict can price")
    refit = fit_with_interval(clone(base), joined.dataset)
    return Calibrated(base, refit, anchored, joined, runs_name)
