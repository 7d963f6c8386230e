"""The dataset registry: every set of job records perfzoo fits and scores predictors on.

A :class:`Dataset` is a flat frame of job records (one row per job, failures included; the
columns of :func:`perfzoo.store.records_to_frame` plus ``config_key``) and what an experiment
needs to know about it: the target (higher is better), the time column (temporal split), the
scale column and threshold (scale split), the group columns (group split), the features a
predictor sees, the key shared by copies of one configuration, provenance and a card.

Where datasets come from (:func:`list_datasets`, :func:`load_dataset`):

* **external files**, read in place from the external-data directory: the ``external_dir``
  argument, else ``$PERFZOO_EXTERNAL_DATA``, else ``../shared/external`` beside the checkout.
  Registered: ``vtrain-a100``, ``published-mosaicml``, ``published-torchtitan``,
  ``published-nemo``, ``published-megatron`` and ``published-llm`` (every published-table CSV there together). Any other CSV there in
  either layout is listed under its file name (``megatron_runs.csv`` -> ``megatron-runs``).
* **bundled record stores** ``datasets/<name>/`` (``records.jsonl``, ``dataset.json``,
  ``README.md``; ``$PERFZOO_DATASETS`` names another folder), found automatically.
* **any path**: a vTrain or published-table CSV, a record-store directory or its
  ``records.jsonl``: whatever a source of :data:`perfzoo.sources.SOURCES` detects.

``dataset.json`` (optional) may set ``name``, ``target``, ``target_unit``, ``time_column``,
``scale_column``, ``scale_threshold``, ``group_columns``, ``feature_columns`` and
``provenance``; anything unset is inferred (see :meth:`Dataset.from_records`).

Example
-------
>>> ds = load_dataset("vtrain-a100")
>>> len(ds), ds.target, ds.scale_column, ds.scale_threshold
(1440, 'metrics.throughput', 'config.n_gpus', 4)
>>> ds.X.shape, ds.y.shape
((1440, 10), (1440,))
"""

from __future__ import annotations

import hashlib
import os
import warnings
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Iterable, Optional, Sequence, Union

import numpy as np
import pandas as pd

from perfzoo import sources
from perfzoo.sources import DataError, LoadReport, Source, config_key
from perfzoo.records import STATUSES, JobRecord, canonical_json
from perfzoo.store import RECORDS_FILE, records_to_frame

PathLike = Union[str, Path]

REPO_ROOT = Path(__file__).resolve().parents[2]  # src/perfzoo/datasets.py -> the checkout
ENV_EXTERNAL = "PERFZOO_EXTERNAL_DATA"
ENV_DATASETS = "PERFZOO_DATASETS"

SCALE_CANDIDATES = ("config.n_gpus", "config.world_size", "hardware.accelerator_count")
GROUP_CANDIDATES = ("config.model_name", "hardware.accelerator", "source", "workload")
HARDWARE_FEATURES = ("hardware.accelerator", "hardware.accelerator_memory_gib", "hardware.nodes",
                     "hardware.interconnect")
NOT_FEATURES = ("config.model_name",)  # an identity, not a knob: a group column instead
MODEL_SHAPE_COLUMNS = ("config.n_layers", "config.hidden_dim", "config.ffn_dim", "config.n_heads",
                       "config.seq_len", "config.width", "config.n_tables", "config.rows_per_table",
                       "config.emb_dim")  # a model's identity where no row names it
HOLDOUT_FALLBACK = ("source", "hardware.accelerator")  # held out when a dataset names no group columns


class UnknownDatasetError(KeyError, ValueError):
    """No dataset has this name (and it is not a path that exists)."""

    def __str__(self) -> str:
        return str(self.args[0])


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
    group_columns : what a group split holds out (model, accelerator, source, workload).
    feature_columns : the ``config.*`` / ``hardware.*`` columns a predictor sees.
    duplicate_key : a column equal for rows that measure the same configuration
        (``config_key``): splits keep such rows on one side.
    provenance, card : where the data came from; the dataset card (markdown).
    load_reports : what reading each published-table file did with its rows
        (:class:`~perfzoo.sources.LoadReport`; empty for record stores and vTrain files).

    ``X`` and ``y`` cover every row as it is, failures included (``y`` is NaN there); use
    :meth:`ok` for the successful rows only, ``failed`` to tell them apart, and
    :meth:`labelled` (mask: ``is_labelled``) for the rows a throughput predictor can fit and be
    scored on (``ok`` with a known target: a published configuration without a usable figure is
    ``ok`` but unlabelled). ``comparable_columns`` / :meth:`comparable_groups` name the jobs a
    searcher chooses between (grouped Kendall), ``holdout_columns`` what a group split holds out,
    and :meth:`content_hash` identifies the data (the benchmark's cache key).

    Example
    -------
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
            raise ValueError(
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
        a predictor applied to other data must see them.

        >>> from perfzoo.sources import read_published
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
        no name), the device count (the first of :data:`SCALE_CANDIDATES` with a known value)
        and the accelerator: the jobs a searcher chooses between (same model on the same machines).
        """
        frame = self.frame
        named = "config.model_name" in frame.columns and frame["config.model_name"].notna().all()
        cols = ["config.model_name"] if named else [c for c in MODEL_SHAPE_COLUMNS if c in frame.columns]
        devices = next((c for c in SCALE_CANDIDATES if c in frame.columns and frame[c].notna().any()), None)
        for c in (devices, "hardware.accelerator"):
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
            "group_columns": list(self.group_columns),
            "feature_columns": list(self.feature_columns),
            "provenance": self.provenance,
            "load_reports": [report.to_dict() for report in self.load_reports],
        }


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


# --- where datasets live ------------------------------------------------------------------

def external_data_dir(directory: Optional[PathLike] = None) -> Path:
    """The external-data directory: ``directory``, else ``$PERFZOO_EXTERNAL_DATA``, else
    ``../shared/external`` beside the checkout (the folder holding the ``perfzoo`` package)."""
    if directory is not None:
        return Path(directory).expanduser()
    env = os.environ.get(ENV_EXTERNAL)
    return Path(env).expanduser() if env else REPO_ROOT.parent / "shared" / "external"


def bundled_dir() -> Path:
    """The folder of bundled datasets: ``$PERFZOO_DATASETS``, else ``datasets/`` in the checkout."""
    env = os.environ.get(ENV_DATASETS)
    return Path(env).expanduser() if env else REPO_ROOT / "datasets"


@dataclass(frozen=True)
class ExternalSpec:
    """A registered external dataset: the source its files are in (a name in
    :data:`perfzoo.sources.SOURCES`), its files (none: every CSV of that source), the scale
    threshold, where the files come from (completes "It is ..."), and what the data is."""

    source: str
    files: tuple[str, ...]
    scale_threshold: float
    published_at: str
    about: str


VTRAIN_AT = ("published in the vTrain repository (https://github.com/VIA-Research/vTrain) as "
             "data/ground_truth_single.csv, commit f8dda8473a48 (MIT licence)")
# <=64 GPUs predict 128-512 (58 of the 576 published rows): 2-8x beyond the largest training
# scale, as the paper's <=3072 -> >=4096 split, with enough rows on both sides of each source
PUBLISHED_SCALE = 64

EXTERNAL: dict[str, ExternalSpec] = {
    "vtrain-a100": ExternalSpec(
        "vtrain", ("vtrain_ground_truth_single.csv",), 4, VTRAIN_AT,
        "vTrain ground truth: Megatron-DeepSpeed GPT training on one node of 2-8 NVIDIA A100 "
        "GPUs, one row per configuration (1,440 rows). Throughput = global batch x sequence "
        "length / iteration time. Scale split: 2-4 GPUs predict 8."),
    "published-mosaicml": ExternalSpec(
        "published", ("mosaicml_llmfoundry_benchmarks.csv",), PUBLISHED_SCALE,
        "compiled from the MosaicML llm-foundry MPT throughput tables "
        "(https://github.com/mosaicml/llm-foundry, llm/throughput/README.md and its history) into "
        "the published-table schema of SOURCES.md in the shared external-data folder",
        "MosaicML llm-foundry MPT-125M..70B training throughput on 8-512 A100-40GB/80GB and "
        "H100-80GB, pure FSDP, 2022-12 to 2024-01 (516 rows; re-published rows share a "
        "config_key). Target: tokens/s per GPU. Scale split: <=64 GPUs predict 128-512."),
    "published-torchtitan": ExternalSpec(
        "published", ("torchtitan_benchmarks.csv",), PUBLISHED_SCALE,
        "compiled from the PyTorch torchtitan published benchmarks "
        "(https://github.com/pytorch/torchtitan, docs/performance.md, benchmarks/ and the "
        "quantization docs) into the published-table schema of SOURCES.md in the shared "
        "external-data folder",
        "PyTorch torchtitan Llama 2/3/3.1 8B..405B benchmarks with FSDP2/TP/PP/CP, "
        "torch.compile, Float8/MXFP8/NVFP4 on 4-512 GPUs, 2024-04 to 2026-08, OOM rows "
        "included (60 rows). Target: tokens/s per GPU. Scale split: <=64 GPUs predict 128-512."),
    "published-nemo": ExternalSpec(
        "published", ("nvidia_nemo_perf_summary_2024.csv",), PUBLISHED_SCALE,
        "compiled from the NVIDIA NeMo performance summary tables (https://github.com/NVIDIA/NeMo, "
        "docs/source/performance/) into the published-table schema of SOURCES.md in the shared "
        "external-data folder",
        "NVIDIA NeMo performance summary 2024-08 to 2025-04: DGX-H100 FP8 pre-training, SFT and "
        "LoRA of GPT-3, Llama 2/3 and Nemotron, plus long-context CP rows on H100 and B200 (71 "
        "rows; the CP rows publish TFLOP/s only, their tokens/s is derived). Target: tokens/s per GPU."),
    "published-megatron": ExternalSpec(
        "published", ("megatron_lm_readme_scaling.csv",), PUBLISHED_SCALE,
        "compiled from the scaling tables of the NVIDIA/Megatron-LM README "
        "(https://github.com/NVIDIA/Megatron-LM) and its history into the published-table schema "
        "of SOURCES.md in the shared external-data folder",
        "Megatron-LM README scaling tables 2020-09 to 2024-07: GPT 1B-1T on 1-6,144 V100, A100 and "
        "H100 (49 rows; most publish TFLOP/s or MFU only, their tokens/s is derived; 4 rows without "
        "a GPU count are skipped). Target: tokens/s per GPU."),
    "published-llm": ExternalSpec(
        "published", (), PUBLISHED_SCALE,
        "any CSV whose header is the published-table schema of SOURCES.md in the shared "
        "external-data folder",
        "Every published-table CSV in the external-data directory together (MosaicML, "
        "torchtitan, NeMo, Megatron-LM, and any file in that schema added later). Target: tokens/s per GPU. "
        "Scale split: <=64 GPUs predict more."),
}


def _external_csvs(directory: Path) -> dict[str, tuple[Source, Path]]:
    """``name -> (source, path)`` for every CSV in ``directory`` in a known layout."""
    found = {}
    for path in sorted(directory.glob("*.csv")) if directory.is_dir() else []:
        try:
            found[sources.file_dataset_name(path)] = (sources.detect(path), path)
        except (DataError, OSError):
            continue  # a CSV in no known layout (the architecture table, notes) is not a dataset
    return found


def _discovered(directory: Path) -> dict[str, tuple[Source, Path]]:
    registered = {f for spec in EXTERNAL.values() for f in spec.files}
    return {name: found for name, found in _external_csvs(directory).items()
            if found[1].name not in registered and name not in EXTERNAL}


def _bundled() -> dict[str, Path]:
    root = bundled_dir()
    if not root.is_dir():
        warnings.warn(f"the bundled-datasets folder {root} does not exist"
                      + (f" (from ${ENV_DATASETS}); unset it or point it at a folder of datasets"
                         if os.environ.get(ENV_DATASETS) else ""), UserWarning, stacklevel=3)
    folders = sorted(root.iterdir()) if root.is_dir() else []
    return {p.name: p for p in folders if (p / RECORDS_FILE).is_file()}


def list_datasets(external_dir: Optional[PathLike] = None) -> list[str]:
    """Every dataset name: the registered external ones, other CSVs found in the external
    directory, then every bundled ``datasets/<name>/`` folder holding ``records.jsonl``.

    >>> list_datasets()[:3]
    ['vtrain-a100', 'published-mosaicml', 'published-torchtitan']
    """
    directory = external_data_dir(external_dir)
    names = list(EXTERNAL) + list(_discovered(directory))
    return names + [n for n in _bundled() if n not in names]


# --- loading ------------------------------------------------------------------------------

def load_dataset(name_or_path: PathLike, external_dir: Optional[PathLike] = None) -> Dataset:
    """The dataset with this name (see :func:`list_datasets`), or the one stored at this path.

    A path may be a vTrain CSV (either layout), a published-table CSV, a record-store
    directory or its ``records.jsonl``. Raises :class:`UnknownDatasetError` (a ``KeyError``
    and ``ValueError``) for an unknown name, ``FileNotFoundError`` for a missing file (saying
    where it is published), :class:`~perfzoo.sources.DataError` for a malformed one.

    >>> load_dataset("published-torchtitan").summary()["oom"]
    2
    """
    directory = external_data_dir(external_dir)
    name = str(name_or_path)
    if name in EXTERNAL:
        return _load_external(name, directory, external_dir)
    discovered = _discovered(directory) if "/" not in name else {}
    if name in discovered:
        return _load(*discovered[name])
    bundled = _bundled() if "/" not in name else {}
    if name in bundled:
        return _load(sources.get("store"), bundled[name], name=name)
    path = Path(name_or_path).expanduser()
    if path.exists():
        return load_path(path)
    if os.sep in name or "/" in name or path.suffix in (".csv", ".jsonl", ".json"):
        raise FileNotFoundError(f"{path}: no such file or directory")
    known = list(EXTERNAL) + list(discovered) + list(bundled)
    raise UnknownDatasetError(
        f"unknown dataset {name!r}; known: {', '.join(known)}. Give one of these names, or the "
        f"path of a CSV file or record-store folder (bundled datasets are the folders of "
        f"{bundled_dir()} holding {RECORDS_FILE})")


def load_path(path: PathLike) -> Dataset:
    """The dataset stored at ``path``: a file or folder one of :data:`perfzoo.sources.SOURCES`
    detects (a CSV in a known layout, a record store or its records.jsonl)."""
    path = Path(path)
    return _load(sources.detect(path), path)


def _load(source: Source, *paths: Path, **given: Any) -> Dataset:
    """The dataset in ``paths``: the metadata ``source`` gives them, overridden by ``given``."""
    records, reports = source.read(paths)
    metadata = {**source.metadata(paths), **given}
    return Dataset.from_records(metadata.pop("name"), records, load_reports=reports, **metadata)


def _missing(what: str, directory: Path, given: Optional[PathLike], published_at: str) -> FileNotFoundError:
    chosen = ("as given" if given is not None else f"from ${ENV_EXTERNAL}" if os.environ.get(ENV_EXTERNAL)
              else "the default: ../shared/external beside the checkout")
    return FileNotFoundError(
        f"{what} not found in {directory} (the external-data directory, {chosen}). It is "
        f"{published_at}. Put it there, or point perfzoo at the folder holding it: "
        f"--external-dir DIR on the command line, load_dataset(..., external_dir=DIR) in Python, "
        f"or the {ENV_EXTERNAL} environment variable.")


def _load_external(name: str, directory: Path, given: Optional[PathLike]) -> Dataset:
    spec = EXTERNAL[name]
    source = sources.get(spec.source)
    for file in spec.files:
        if not (directory / file).is_file():
            raise _missing(file, directory, given, spec.published_at)
    paths = ([directory / f for f in spec.files] if spec.files else
             [p for found, p in _external_csvs(directory).values() if found is source])
    if not paths:
        raise _missing(f"a {source.title} CSV", directory, given, spec.published_at)
    card = f"# {name}\n\n{spec.about}\n\nRead in place from: {', '.join(map(str, paths))}.\n"
    return _load(source, *paths, name=name, scale_threshold=spec.scale_threshold,
                 provenance=f"{', '.join(p.name for p in paths)} in {directory}; {spec.published_at}",
                 card=card)


__all__ = ["Dataset", "UnknownDatasetError", "list_datasets", "load_dataset", "load_path",
           "external_data_dir", "bundled_dir", "default_threshold", "EXTERNAL", "DataError"]
