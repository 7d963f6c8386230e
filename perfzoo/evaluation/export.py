"""A benchmark task's rows as files, usable without perfzoo installed
(``perfzoo datasets export NAME --format parquet|csv|hf --split TASK_ID OUT``).

``OUT``, a new folder, holds the task's training and test rows: every column of the dataset's
flat frame, plus

``task.partition``
    which partition of the task the row belongs to: ``seed 3`` (random split), ``seed 3, n=50``
    (learning curve), the held-out value (group split), ``<train source> -> <test source>``
    (transfer matrix), or the split's name where every seed shares one partition;
``task.labelled``
    whether throughput members fit and are scored on the row (``status`` ok with a known target;
    the ``failure`` classifier uses every row),

as ``train.parquet`` and ``test.parquet`` (``csv``: ``train.csv``, ``test.csv``) or as a Hugging
Face ``DatasetDict`` with splits ``train`` and ``test`` (``hf``: ``datasets.load_from_disk(OUT)``);
``README.md`` is the card (the task's definition, how a number on it is computed, the data's
licence and provenance, the dataset's own card) and ``task.json`` the definition its id hashes.

>>> from perfzoo.datasets import load_dataset
>>> from perfzoo.evaluation.suite import define_tasks
>>> ds = load_dataset("llm-cpu")
>>> train, test = task_frames(ds, define_tasks(ds, ["scale"], seeds=range(5))[0])
>>> len(train) + len(test) == len(ds), sorted(set(train[PARTITION]))
(True, ['scale'])
"""

from __future__ import annotations

import errno
import json
from importlib.metadata import PackageNotFoundError, metadata
from pathlib import Path
from typing import Optional, Union

import pandas as pd

from perfzoo.console import InputError
from perfzoo.datasets import external_data_dir
from perfzoo.datasets.dataset import Dataset
from perfzoo.evaluation.suite import RULES, BenchmarkTask
from perfzoo.records.store import EXPORT_FORMATS, export_frame, hf_dataset

PARTITION, LABELLED = "task.partition", "task.labelled"
TASK_FILE, CARD_FILE = "task.json", "README.md"
SIDES = ("train", "test")


def task_frames(dataset: Dataset, task: BenchmarkTask) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(train, test)``: the rows of every partition of ``task`` (:meth:`BenchmarkTask.partitions`),
    each side with the :data:`PARTITION` and :data:`LABELLED` columns first."""
    labelled = dataset.is_labelled
    sides: dict[str, list[pd.DataFrame]] = {side: [] for side in SIDES}
    for sp in task.partitions():
        for side, rows in zip(SIDES, (sp.train, sp.test)):
            part = dataset.frame.iloc[rows].reset_index(drop=True)
            sides[side].append(pd.concat([pd.DataFrame({PARTITION: task.label(sp), LABELLED: labelled[rows]}), part],
                                         axis=1))
    train, test = (pd.concat(sides[side], ignore_index=True) for side in SIDES)
    return train, test


def write_task(dataset: Dataset, task: BenchmarkTask, out: Union[str, Path], format: str,
               external_dir: Optional[Union[str, Path]] = None) -> tuple[Path, int, int]:
    """Write ``task``'s rows into the new folder ``out`` (the module docstring's layout) in
    ``format`` (``parquet``, ``csv`` or ``hf``); ``external_dir`` is where licence files are
    looked for. Returns ``(out, training rows, test rows)``. A path that exists is refused."""
    out = Path(out)
    if format not in EXPORT_FORMATS:
        raise InputError(f"export format {format!r}: choose one of {', '.join(EXPORT_FORMATS)}")
    if out.exists():
        raise FileExistsError(errno.EEXIST, "exists already; give a new path (nothing is overwritten)", str(out))
    train, test = task_frames(dataset, task)
    if format == "hf":
        import datasets  # Hugging Face's: slow to import, needed here only

        datasets.disable_progress_bars()
        datasets.DatasetDict({"train": hf_dataset(train), "test": hf_dataset(test)}).save_to_disk(str(out))
    else:
        out.mkdir(parents=True)
        for side, frame in zip(SIDES, (train, test)):
            export_frame(frame, out / f"{side}.{format}", format)
    (out / TASK_FILE).write_text(json.dumps(task.definition(), indent=1) + "\n")
    (out / CARD_FILE).write_text(card(dataset, task, train, test, format, external_dir))
    return out, len(train), len(test)


def card(dataset: Dataset, task: BenchmarkTask, train: pd.DataFrame, test: pd.DataFrame, format: str,
         external_dir: Optional[Union[str, Path]] = None) -> str:
    """The exported task's ``README.md``."""
    files = ("the `train` and `test` splits of the Hugging Face dataset in this folder" if format == "hf"
             else f"`train.{format}` and `test.{format}`")
    seeds = ", ".join(map(str, task.seeds)) or "none (each partition is run once, its seed its index)"
    labels = list(dict.fromkeys(train[PARTITION]))
    shown = ", ".join(f"`{v}`" for v in labels[:6]) + (", ..." if len(labels) > 6 else "")
    rule = ", ".join(f"{k} = {v}" for k, v in task.rule.items())
    L = [f"# {dataset.name}: perfzoo benchmark task `{task.id}`", "",
         f"The rows of perfzoo's benchmark task `{task.id}` ({files}; `{TASK_FILE}` defines the task), written by "
         f"`perfzoo datasets export {dataset.name} --format {format} --split {task.id} OUT`. A number computed on "
         "these rows compares with every number published under this id, and only with those.", "",
         "| | |", "| --- | --- |",
         f"| task | `{task.id}` |",
         f"| dataset | {dataset.name}: {len(dataset)} jobs, content hash `{task.content_hash}` |",
         f"| target | `{task.target}` ({dataset.target_unit}), higher is better |",
         f"| split | `{task.split}`: {RULES.get(task.kind, '').rstrip('.')}" + (f" ({rule})" if rule else "") + " |",
         f"| seeds | {seeds} |",
         f"| partitions | {len(labels)} (`{PARTITION}`: {shown}) |",
         f"| rows | train {len(train)} ({int(train[LABELLED].sum())} labelled), test {len(test)} "
         f"({int(test[LABELLED].sum())} labelled), over all partitions |",
         f"| metrics | {', '.join(task.metrics)} (perfzoo/evaluation/metrics.py, one definition each) |",
         f"| features | {', '.join(f'`{c}`' for c in dataset.feature_columns)} |", "",
         "## How a number on this task is computed", "",
         f"For each partition (`{PARTITION}`) and seed: fit on the training rows whose `{LABELLED}` is true, predict "
         "the test rows whose `task.labelled` is true, and compute each metric; the task's number for a metric is "
         "its mean over partitions and seeds (the leaderboard adds ± 2 standard deviations). Rows whose "
         f"`{LABELLED}` is false (failed jobs, a configuration published without a usable figure) stay in the "
         "files: perfzoo's `failure` classifier fits and is scored (ROC AUC) on every row. A predictor sees the "
         "feature columns above; the others (metrics, provenance, annotations) are not inputs.", "",
         "## Licence and provenance", "", *_provenance(dataset, external_dir), "",
         "## The dataset's card", "", dataset.card.strip() or "(none)", ""]
    return "\n".join(L)


def _provenance(dataset: Dataset, external_dir: Optional[Union[str, Path]]) -> list[str]:
    """Where the rows come from and under which licence, as the dataset and the external folder say."""
    frame = dataset.frame
    L = [f"Where the data comes from: {dataset.provenance}."] if dataset.provenance else []
    files = frame["annotations.file"].dropna().astype(str).value_counts().sort_index() \
        if "annotations.file" in frame.columns else pd.Series(dtype=int)
    if files.empty:
        L.append(f"Measured with perfzoo's harness (each row's `provenance` column names the command); perfzoo and "
                 f"its bundled datasets are under the {_perfzoo_licence()} licence.")
        return L
    L.append("Rows by published file (each row's `provenance` column names the document, commit and line its "
             "figures come from): " + ", ".join(f"`{name}` ({n})" for name, n in files.items()) + ".")
    folder = external_data_dir(external_dir)
    found = False
    for path in sorted(folder.glob("*LICENSE*")) if folder.is_dir() else []:
        prefix = path.name[:path.name.upper().index("LICENSE")]
        covered = [name for name in files.index if name.startswith(prefix)]
        if covered:
            found = True
            L += ["", f"Licence of {', '.join(f'`{c}`' for c in covered)} (`{path.name}`, reproduced as it is):", "",
                  "```", path.read_text().strip(), "```"]
    if not found:
        L.append("The external-data folder holds no licence file for these files: the figures are as their sources "
                 "published them (above); check those sources' terms before redistributing the rows.")
    return L


def _perfzoo_licence() -> str:
    try:
        return metadata("perfzoo").get("License") or "repository's"
    except PackageNotFoundError:
        return "repository's"
