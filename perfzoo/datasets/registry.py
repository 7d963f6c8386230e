"""The dataset registry: every set of job records perfzoo fits and scores predictors on, each
loaded as a :class:`perfzoo.datasets.dataset.Dataset` (a flat frame of job records, one row per job,
failures included, and what an experiment needs to know about it).

Where datasets come from (:func:`list_datasets`, :func:`load_dataset`):

* **external files**, read in place from the external-data directory: the ``external_dir``
  argument, else ``$PERFZOO_EXTERNAL_DATA``, else ``../shared/external`` beside the checkout.
  Registered: ``vtrain-a100``, ``published-mosaicml``, ``published-torchtitan``,
  ``published-nemo``, ``published-megatron``, ``published-megatron-bridge``, ``published-dgxc`` and
  ``published-llm``
  (every published-table CSV there together: :func:`published_tables` names them). Any other CSV there in
  either layout is listed under its file name (``megatron_runs.csv`` -> ``megatron-runs``).
* **bundled record stores** ``datasets/<name>/`` (``records.jsonl``, ``dataset.json``,
  ``README.md``; ``$PERFZOO_DATASETS`` names another folder), found automatically.
* **any path**: a vTrain or published-table CSV, a record-store directory or its
  ``records.jsonl``: whatever a source of :data:`perfzoo.datasets.sources.SOURCES` detects.

``dataset.json`` (optional) may set ``name``, ``target``, ``target_unit``, ``time_column``,
``scale_column``, ``scale_threshold``, ``group_columns``, ``feature_columns`` and
``provenance``; anything unset is inferred (see :meth:`Dataset.from_records`).

Example
-------
>>> ds = load_dataset("vtrain-a100")
>>> len(ds), ds.target, ds.scale_column, ds.scale_threshold
(1440, 'metrics.throughput', 'config.n_gpus', 4)
>>> ds.X.shape, ds.y.shape
((1440, 17), (1440,))
"""

from __future__ import annotations

import os
import warnings
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Sequence, Union

from perfzoo.console import InputError
from perfzoo.datasets import cache, sources
from perfzoo.datasets.dataset import Dataset
from perfzoo.datasets.sources import DataError, Source
from perfzoo.records.store import RECORDS_FILE

PathLike = Union[str, Path]

REPO_ROOT = Path(__file__).resolve().parents[2]  # perfzoo/datasets/registry.py -> the checkout
ENV_EXTERNAL = "PERFZOO_EXTERNAL_DATA"
ENV_DATASETS = "PERFZOO_DATASETS"

class UnknownDatasetError(InputError, KeyError):
    """No dataset has this name (and it is not a path that exists)."""

    def __str__(self) -> str:
        return str(self.args[0])


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
    :data:`perfzoo.datasets.sources.SOURCES`), its files (none: every CSV of that source), the scale
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
        "included (60 rows; the 4 whose model the doc leaves unspecified, 'dense model (unspecified)', "
        "are kept unscored). Target: tokens/s per GPU. Scale split: <=64 GPUs predict 128-512."),
    "published-nemo": ExternalSpec(
        "published", ("nvidia_nemo_perf_summary_2024.csv",), PUBLISHED_SCALE,
        "compiled from the NVIDIA NeMo performance summary tables (https://github.com/NVIDIA/NeMo, "
        "docs/source/performance/) into the published-table schema of SOURCES.md in the shared "
        "external-data folder",
        "NVIDIA NeMo performance summary 2024-08 to 2025-04: DGX-H100 FP8 pre-training, SFT and "
        "LoRA of GPT-3, Llama 2/3 and Nemotron, plus long-context CP rows on H100 and B200 (71 "
        "rows; the CP rows publish TFLOP/s only, their tokens/s is derived; the SFT and LoRA rows' "
        "figures count attention over short samples packed into each sequence, read into "
        "packed_sample_len). Target: tokens/s per GPU."),
    "published-megatron": ExternalSpec(
        "published", ("megatron_lm_readme_scaling.csv",), PUBLISHED_SCALE,
        "compiled from the scaling tables of the NVIDIA/Megatron-LM README "
        "(https://github.com/NVIDIA/Megatron-LM) and its history into the published-table schema "
        "of SOURCES.md in the shared external-data folder",
        "Megatron-LM README scaling tables 2020-09 to 2024-07: GPT 1B-1T on 1-6,144 V100, A100 and "
        "H100 (49 rows; most publish TFLOP/s or MFU only, their tokens/s is derived; 4 rows without "
        "a GPU count are skipped). Target: tokens/s per GPU."),
    "published-megatron-bridge": ExternalSpec(
        "published", ("nvidia_megatron_bridge_perf_summary.csv",), PUBLISHED_SCALE,
        "compiled from the NVIDIA Megatron-Bridge performance summary "
        "(https://github.com/NVIDIA-NeMo/Megatron-Bridge, docs/performance-summary.md and its archive) into "
        "the published-table schema of SOURCES.md in the shared external-data folder",
        "NVIDIA Megatron-Bridge performance summary, NeMo containers 25.09 to 26.02.01: pre-training of "
        "Llama 3 8B/70B, Llama 3.1 405B, DeepSeek-V3, Qwen3 30B-A3B and 235B-A22B, GPT-OSS-120B, "
        "Kimi-K2 and Nemotron-3 Nano on H100, B200, B300, GB200 and GB300 (8-1,024 GPUs) in BF16, "
        "FP8, MXFP8 and NVFP4 (129 rows, half of them MoE; MoE rows force-balance the experts' "
        "load; shapes from model_architectures.csv, then perfzoo's model catalog). Target: "
        "tokens/s per GPU. Scale split: <=64 GPUs predict 128-1,024."),
    "published-dgxc": ExternalSpec(
        "published", ("nvidia_dgxc_benchmarking_perf_tables.csv",), PUBLISHED_SCALE,
        "compiled from the 'Expected performance' tables of NVIDIA's DGX Cloud benchmarking recipes "
        "(https://github.com/NVIDIA/dgxc-benchmarking, the recipe READMEs of releases v24.11.1 to v25.05.05) "
        "into the published-table schema of SOURCES.md in the shared external-data folder",
        "NVIDIA DGX Cloud benchmarking recipes, releases 24.11 to 25.05: NeMo / Megatron-Core pre-training "
        "of Llama 3.1 8B/70B/405B, Nemotron-4 15B/340B, GPT-3 175B, Grok-1, DeepSeek-V3, Llama 4 Maverick "
        "and Nemotron-H 56B, NeMo SFT and LoRA of Llama 3, JAX MaxText and Paxml rows, on H100 and GB200 "
        "(8-2,304 GPUs) in BF16 and FP8 (332 rows; the same slot re-measured release after release, "
        "earlier figures marked superseded; '(proxy, N layers)' rows are the full model cut to N layers). "
        "Target: tokens/s per GPU. Its releases make a temporal split."),
    "published-llm": ExternalSpec(
        "published", (), PUBLISHED_SCALE,
        "any CSV whose header is the published-table schema of SOURCES.md in the shared "
        "external-data folder",
        "Every published-table CSV in the external-data directory together (MosaicML, "
        "torchtitan, NeMo, Megatron-LM, Megatron-Bridge, DGX Cloud recipes, and any file in that schema "
        "added later). Target: tokens/s per GPU. "
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


def published_tables(external_dir: Optional[PathLike] = None) -> dict[str, Path]:
    """``name -> path`` of every published-table CSV in the external directory, each a dataset
    of its own (registered or found); ``published-llm`` is their union.

    Whatever files the directory holds, each is a table of its own (the union is not one):

    >>> tables = published_tables()
    >>> all(path.is_file() and path.suffix == ".csv" for path in tables.values()), "published-llm" in tables
    (True, False)
    """
    directory = external_data_dir(external_dir)
    by_file = {spec.files[0]: name for name, spec in EXTERNAL.items() if len(spec.files) == 1}
    return {by_file.get(path.name, name): path for name, (source, path) in _external_csvs(directory).items()
            if source is sources.get("published")}


def list_datasets(external_dir: Optional[PathLike] = None) -> list[str]:
    """Every dataset name: the registered external ones, other CSVs found in the external
    directory, then every bundled ``datasets/<name>/`` folder holding ``records.jsonl``.

    >>> list_datasets()[:3]
    ['vtrain-a100', 'published-mosaicml', 'published-torchtitan']
    """
    directory = external_data_dir(external_dir)
    names = list(EXTERNAL) + list(_discovered(directory))
    return names + [n for n in _bundled() if n not in names]


def knows(name: PathLike, external_dir: Optional[PathLike] = None) -> bool:
    """Whether :func:`load_dataset` finds something under ``name``: a registered name (looked up
    first: no folder is listed for it), a bundled folder, a CSV found in the external directory, or
    an existing path.

    >>> knows("published-llm"), knows("no-such-dataset")
    (True, False)
    """
    name = str(name)
    if name in EXTERNAL or Path(name).expanduser().exists():
        return True
    return "/" not in name and (name in _bundled() or name in _discovered(external_data_dir(external_dir)))


# --- loading ------------------------------------------------------------------------------

def load_dataset(name_or_path: PathLike, external_dir: Optional[PathLike] = None) -> Dataset:
    """The dataset with this name (see :func:`list_datasets`), or the one stored at this path.

    A path may be a vTrain CSV (either layout), a published-table CSV, a record-store
    directory or its ``records.jsonl``. Raises :class:`UnknownDatasetError` (a ``KeyError``
    and ``ValueError``) for an unknown name, ``FileNotFoundError`` for a missing file (saying
    where it is published), :class:`~perfzoo.datasets.sources.DataError` for a malformed one.

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
    """The dataset stored at ``path``: a file or folder one of :data:`perfzoo.datasets.sources.SOURCES`
    detects (a CSV in a known layout, a record store or its records.jsonl)."""
    path = Path(path)
    return _load(sources.detect(path), path)


def _load(source: Source, *paths: Path, **given: Any) -> Dataset:
    """The dataset in ``paths``: the metadata ``source`` gives them, overridden by ``given``; a table
    read before by the same code comes back from :mod:`perfzoo.datasets.cache` (a record store never)."""
    if source is sources.get("store"):
        return _read(source, paths, given)
    return cache.cached(paths, {"source": source.name, **given}, lambda: _read(source, paths, given))


def _read(source: Source, paths: Sequence[Path], given: dict) -> Dataset:
    records, reports = source.read(paths)
    if not records:
        raise DataError(_no_jobs(paths, reports))
    metadata = {**source.metadata(paths), **given}
    return Dataset.from_records(metadata.pop("name"), records, load_reports=reports, **metadata)


def _no_jobs(paths: Sequence[Path], reports: Sequence[Any]) -> str:
    """Why ``paths`` gave no job, in one line: the reasons their rows were skipped, commonest first."""
    where = ", ".join(map(str, paths))
    reasons = Counter(why for report in reports for _, why in getattr(report, "skipped", ()))
    if not reasons:
        return f"{where}: holds no jobs"
    listed = "; ".join(f"{why} ({n} row{'s' * (n > 1)})" for why, n in reasons.most_common(3))
    return f"{where}: no job in it, its rows were skipped: {listed}; fill what is missing"


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


__all__ = ["UnknownDatasetError", "knows", "list_datasets", "published_tables", "load_dataset", "load_path", "external_data_dir", "bundled_dir",
           "EXTERNAL", "DataError"]
