"""The Dataset contract: a flat frame of job records and what an experiment needs to know
about it (the target, higher is better; the time column for the temporal split; the scale
column and threshold for the scale split; the group columns; the features a predictor sees;
the key shared by copies of one configuration; provenance and a card). Evaluation, search and
predict read data through it; :mod:`perfzoo.datasets` finds and loads datasets.

>>> from perfzoo.datasets import load_dataset
>>> ds = load_dataset("vtrain-a100").labelled().ok()
>>> ds.X.shape[0] == len(ds.y) == 1440
True
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Optional, Sequence, Union

import numpy as np
import pandas as pd

from perfzoo.console import DataError
from perfzoo.datasets.sources import LoadReport, config_key
from perfzoo.hardware.capability import CPU_COLUMN, ENVIRONMENT_COLUMNS, hardware_of, kind
from perfzoo.records import STATUSES, JobRecord, canonical_json
from perfzoo.records.store import records_to_frame

SCALE_CANDIDATES = ("config.n_gpus", "config.world_size", "hardware.accelerator_count")
GROUP_CANDIDATES = ("config.model_name", "hardware.accelerator", "source", "workload")
HARDWARE_FEATURES = ("hardware.accelerator", "hardware.accelerator_memory_gib", "hardware.nodes",
                     "hardware.interconnect")
NOT_FEATURES = ("config.model_name",)  # an identity, not a knob: a group column instead
MODEL_SHAPE_COLUMNS = ("config.n_layers", "config.hidden_dim", "config.ffn_dim", "config.n_heads",
                       "config.seq_len", "config.width", "config.n_tables", "config.rows_per_table",
                       "config.emb_dim")  # a model's identity where no row names it
HOLDOUT_FALLBACK = ("source", "hardware.accelerator")  # held out when a dataset names no group columns


def varying_environment(frame: pd.DataFrame) -> list[str]:
    """The columns of :data:`perfzoo.hardware.capability.ENVIRONMENT_COLUMNS` that tell this frame's machines
    apart: the CPU capability over its CPU jobs, the GPU clocks and power limit over its GPU jobs,
    where they take two values or more (unknown, a record made before perfzoo captured it, is one).

    >>> varying_environment(pd.DataFrame({"hardware.accelerator": ["cpu", "cpu", "H100-80GB"],
    ...                                   "hardware.cpu_capability": ["AVX2", None, "AMX"]}))
    ['hardware.cpu_capability']
    """
    if "hardware.accelerator" not in frame.columns:
        return []
    cpu = (frame["hardware.accelerator"] == "cpu").to_numpy()
    return [c for c in ENVIRONMENT_COLUMNS if c in frame.columns
            and frame.loc[cpu if c == CPU_COLUMN else ~cpu, c].nunique(dropna=False) > 1]



@dataclass(eq=False)
class Dataset:
    """Job records as a flat frame, with the metadata experiments need.

    Attributes
    ----------
    name : registry name (or file / folder name).
    frame : one row per record, success or failure (``status`` column).
    target : the column to predict, higher is better (e.g. ``metrics.throughput``).
    target_unit : its unit (``tokens/s``, ``queries/s``).
    time_column : what the temporal split orders on (``started_at``, tz-aware).
    scale_column, scale_threshold : the scale split trains on rows with scale <= threshold
        and tests on the rows above.
    group_columns : what a group split holds out (model, accelerator, source, workload; and the
        machines' capability where it varies, :func:`varying_environment`).
    feature_columns : the ``config.*`` / ``hardware.*`` columns a predictor sees.
    duplicate_key : a column equal for rows that measure the same configuration
        (``config_key``): splits keep such rows on one side.
    provenance, card : where the data came from; the dataset card (markdown).
    load_reports : what reading each published-table file did with its rows
        (:class:`~perfzoo.datasets.sources.LoadReport`; empty for record stores and vTrain files).

    Notes
    -----
    ``X`` and ``y`` cover every row as it is, failures included (``y`` is NaN there); use
    :meth:`ok` for the successful rows only, ``failed`` to tell them apart, and
    :meth:`labelled` (mask: ``is_labelled``) for the rows a throughput predictor can fit and be
    scored on (``ok`` with a known target: a published configuration without a usable figure is
    ``ok`` but unlabelled). ``comparable_columns`` / :meth:`comparable_groups` name the jobs a
    searcher chooses between (grouped Kendall), ``holdout_columns`` what a group split holds out,
    and :meth:`content_hash` identifies the data (the benchmark's cache key).

    Example
    -------
    >>> from perfzoo.datasets import load_dataset
    >>> ds = load_dataset("published-torchtitan")
    >>> int(ds.failed.sum()), len(ds.ok())
    (2, 58)
    """

    name: str
    frame: pd.DataFrame = field(repr=False)
    target: str
    target_unit: str
    time_column: str = "started_at"
    scale_column: str = "config.n_gpus"
    scale_threshold: Optional[float] = None
    group_columns: tuple[str, ...] = ()
    feature_columns: tuple[str, ...] = ()
    duplicate_key: str = "config_key"
    provenance: str = ""
    card: str = field(default="", repr=False)
    load_reports: tuple[LoadReport, ...] = field(default=(), repr=False)

    def __post_init__(self):
        self.group_columns = tuple(self.group_columns)
        self.feature_columns = tuple(self.feature_columns)
        named = [self.target, self.time_column, self.scale_column, self.duplicate_key, "status",
                 *self.group_columns, *self.feature_columns]
        missing = [c for c in dict.fromkeys(named) if c not in self.frame.columns]
        if missing:
            raise DataError(
                f"dataset {self.name!r}: its frame has no column {', '.join(map(repr, missing))}; "
                f"name columns it has (e.g. {', '.join(list(self.frame.columns)[:6])}, ...)")

    @classmethod
    def from_records(cls, name: str, records: Sequence[JobRecord], *,
                     target: str = "metrics.throughput", target_unit: Optional[str] = None,
                     time_column: str = "started_at", scale_column: Optional[str] = None,
                     scale_threshold: Optional[float] = None,
                     group_columns: Optional[Iterable[str]] = None,
                     feature_columns: Optional[Iterable[str]] = None,
                     provenance: str = "", card: str = "",
                     load_reports: Sequence[LoadReport] = ()) -> "Dataset":
        """A Dataset over ``records``; metadata left as None is inferred from the frame.

        Inferred: ``target_unit`` from ``metrics.throughput_unit``; ``scale_column``, the first
        of :data:`SCALE_CANDIDATES` present; ``scale_threshold``, the second-largest scale
        (train on every smaller scale, predict the largest); ``group_columns``, those of
        :data:`GROUP_CANDIDATES` present; ``feature_columns``, the ``config.*`` and
        :data:`HARDWARE_FEATURES` columns with any known value (not model_name). Columns that
        are constant here are kept: analytic estimates need them (vTrain's ``seq_len``), and
        a predictor applied to other data must see them. Given or inferred, the group and
        feature columns gain the machines' capability where it varies (:func:`varying_environment`):
        jobs of an AVX2 and an AVX-512 BF16 machine are two groups, not one.

        >>> from perfzoo.datasets import external_data_dir
        >>> from perfzoo.datasets.sources import read_published
        >>> path = external_data_dir() / "torchtitan_benchmarks.csv"
        >>> ds = Dataset.from_records("torchtitan", read_published(path).records)
        >>> ds.scale_column, ds.scale_threshold
        ('config.n_gpus', 256)
        """
        frame = records_to_frame(records)
        frame["config_key"] = [config_key(r.workload, r.config, r.hardware.accelerator,
                                          r.hardware.accelerator_count) for r in records]
        if target_unit is None:
            units = frame.get("metrics.throughput_unit", pd.Series(dtype=object)).dropna()
            target_unit = units.mode().iloc[0] if len(units) else ""
        if scale_column is None:
            scale_column = next((c for c in SCALE_CANDIDATES if c in frame.columns), "hardware.accelerator_count")
        if scale_threshold is None:
            scale_threshold = default_threshold(frame[scale_column])
        if group_columns is None:
            group_columns = [c for c in GROUP_CANDIDATES if c in frame.columns]
        if feature_columns is None:
            candidates = [c for c in frame.columns if c.startswith("config.")] + list(HARDWARE_FEATURES)
            feature_columns = [c for c in candidates if c in frame.columns and c not in NOT_FEATURES
                               and frame[c].notna().any()]
        machines = varying_environment(frame)
        group_columns = [*group_columns, *(c for c in machines if c not in group_columns)]
        feature_columns = [*feature_columns, *(c for c in machines if c not in feature_columns)]
        return cls(name=name, frame=frame, target=target, target_unit=target_unit,
                   time_column=time_column, scale_column=scale_column,
                   scale_threshold=scale_threshold, group_columns=tuple(group_columns),
                   feature_columns=tuple(feature_columns), provenance=provenance, card=card,
                   load_reports=tuple(load_reports))

    def __len__(self) -> int:
        return len(self.frame)

    @property
    def X(self) -> pd.DataFrame:
        """The feature columns of every row (a copy)."""
        return self.frame.loc[:, list(self.feature_columns)].copy()

    @property
    def y(self) -> np.ndarray:
        """The target of every row as floats (NaN where a job failed)."""
        return pd.to_numeric(self.frame[self.target], errors="coerce").to_numpy(dtype=float)

    @property
    def failed(self) -> np.ndarray:
        """Boolean mask of rows whose status is not ``ok`` (oom, timeout, failed)."""
        return (self.frame["status"] != "ok").to_numpy()

    def subset(self, rows: Union[np.ndarray, Sequence[int], Sequence[bool], pd.Series]) -> "Dataset":
        """The same dataset restricted to ``rows`` (a boolean mask or integer positions)."""
        rows = np.asarray(rows)
        frame = self.frame[rows] if rows.dtype == bool else self.frame.iloc[rows]
        return replace(self, frame=frame.reset_index(drop=True))

    def ok(self) -> "Dataset":
        """The rows whose job finished (``status == 'ok'``)."""
        return self.subset(~self.failed)

    @property
    def unlabelled(self) -> np.ndarray:
        """Boolean mask of ``ok`` rows whose target is unknown (kept for prediction, not scored)."""
        return ~self.failed & ~np.isfinite(self.y)

    @property
    def is_labelled(self) -> np.ndarray:
        """Boolean mask of ``ok`` rows with a known target: what throughput fits and scores use."""
        return ~self.failed & np.isfinite(self.y)

    def labelled(self) -> "Dataset":
        """The rows with a known target: ``ok`` and not :attr:`unlabelled` (what fits and scores use)."""
        return self.subset(self.is_labelled)

    @property
    def comparable_columns(self) -> list[str]:
        """The columns that define a group of comparable jobs (for grouped Kendall).

        The model (its ``config.model_name``, or :data:`MODEL_SHAPE_COLUMNS` where a row has
        no name), the device count (the first of :data:`SCALE_CANDIDATES` with a known value),
        the accelerator and the machines' capability where it varies (:func:`varying_environment`):
        the jobs a searcher chooses between (same model on the same machines).
        """
        frame = self.frame
        named = "config.model_name" in frame.columns and frame["config.model_name"].notna().all()
        cols = ["config.model_name"] if named else [c for c in MODEL_SHAPE_COLUMNS if c in frame.columns]
        devices = next((c for c in SCALE_CANDIDATES if c in frame.columns and frame[c].notna().any()), None)
        for c in (devices, "hardware.accelerator", *varying_environment(frame)):
            if c and c in frame.columns and c not in cols:
                cols.append(c)
        return cols

    def comparable_groups(self) -> Optional[np.ndarray]:
        """One label per row naming its group of comparable jobs (None without :attr:`comparable_columns`)."""
        cols = self.comparable_columns
        if not cols:
            return None
        parts = self.frame[cols].astype(object).where(self.frame[cols].notna(), "<na>").astype(str)
        return parts.agg("|".join, axis=1).to_numpy()

    @property
    def holdout_columns(self) -> list[str]:
        """What group splits hold out by default: the ``group_columns`` (without any,
        :data:`HOLDOUT_FALLBACK`) that vary here."""
        named = self.group_columns or HOLDOUT_FALLBACK
        return [c for c in named if c in self.frame.columns and self.frame[c].nunique(dropna=False) > 1]

    def content_hash(self) -> str:
        """A stable hash of the frame and the metadata that changes what is fitted or scored.

        Equal data and metadata give equal hashes across processes: a cache key.
        """
        meta = {key: getattr(self, key) for key in (
            "target", "time_column", "scale_column", "scale_threshold", "group_columns",
            "feature_columns", "duplicate_key")}
        digest = hashlib.sha256(canonical_json({"columns": list(self.frame.columns), **meta}).encode())
        digest.update(pd.util.hash_pandas_object(self.frame, index=False).to_numpy().tobytes())
        return digest.hexdigest()[:16]

    def summary(self) -> dict[str, Any]:
        """JSON-ready facts about the dataset: counts by status, time/scale/target ranges, sources."""
        frame = self.frame
        status = frame["status"].value_counts()
        times = frame[self.time_column].dropna()
        scale = pd.to_numeric(frame[self.scale_column], errors="coerce")
        target = pd.to_numeric(frame.loc[frame["status"] == "ok", self.target], errors="coerce").dropna()
        absent = pd.Series([], dtype=object)
        return {
            "name": self.name,
            "rows": len(frame),
            **{s: int(status.get(s, 0)) for s in STATUSES},
            "unlabelled": int(self.unlabelled.sum()),
            "time_column": self.time_column,
            "time_min": _plain(times.min()) if len(times) else None,
            "time_max": _plain(times.max()) if len(times) else None,
            "scale_column": self.scale_column,
            "scale_min": _plain(scale.min()),
            "scale_max": _plain(scale.max()),
            "scale_threshold": _plain(self.scale_threshold),
            "scale_train_rows": int((scale <= self.scale_threshold).sum()) if self.scale_threshold is not None else None,
            "scale_test_rows": int((scale > self.scale_threshold).sum()) if self.scale_threshold is not None else None,
            "target": self.target,
            "target_unit": self.target_unit,
            "target_min": _plain(target.min()) if len(target) else None,
            "target_max": _plain(target.max()) if len(target) else None,
            "configurations": int(frame[self.duplicate_key].nunique()),
            "sources": sorted(frame.get("source", absent).dropna().unique().tolist()),
            "origins": sorted(frame.get("annotations.source", absent).dropna().unique().tolist()),
            "machines": self.machines(),
            "group_columns": list(self.group_columns),
            "feature_columns": list(self.feature_columns),
            "provenance": self.provenance,
            "load_reports": [report.to_dict() for report in self.load_reports],
        }

    def machines(self) -> dict[str, int]:
        """Rows per machine kind (:func:`perfzoo.hardware.capability.kind`), the most first: the CPU and its
        capability of CPU jobs (``unknown CPU capability`` where the records do not say: records
        made before perfzoo captured it), the GPU of GPU jobs, with its clocks and power limit where
        recorded.

        >>> from perfzoo.datasets import load_dataset
        >>> load_dataset("llm-cpu").machines()
        {'AMD EPYC: unknown CPU capability': 329}
        """
        columns = [c for c in self.frame.columns if c.startswith("hardware.")]
        if "hardware.accelerator" not in columns:
            return {}
        rows = self.frame[columns].astype(object).where(self.frame[columns].notna(), None).to_dict("records")
        counts = pd.Series([kind(hardware_of(row)) for row in rows], dtype=object).value_counts()
        return {str(k): int(v) for k, v in sorted(counts.items(), key=lambda kv: (-kv[1], str(kv[0])))}


def _plain(value: Any) -> Any:
    """A JSON-ready scalar: ints stay ints, timestamps become ISO-8601, NaN becomes None."""
    if value is None or (isinstance(value, float) and np.isnan(value)) or value is pd.NaT:
        return None
    if isinstance(value, pd.Timestamp):
        return value.isoformat()
    value = value.item() if isinstance(value, np.generic) else value
    return int(value) if isinstance(value, float) and value.is_integer() else value


def default_threshold(scale: pd.Series) -> Optional[float]:
    """The second-largest distinct scale: train on every smaller scale, predict the largest.

    With a single scale it is that scale (nothing is held out); None without any.

    >>> default_threshold(pd.Series([2, 4, 8, 8]))
    4
    """
    values = sorted(pd.to_numeric(scale, errors="coerce").dropna().unique())
    if not values:
        return None
    return _plain(values[-2] if len(values) > 1 else values[-1])
