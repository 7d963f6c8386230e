"""The transfer matrix: fit on one public source, score on each other one.

Users judge a predictor on tables it never saw. Over the sources of a dataset (the files of
``published-llm``: MosaicML, torchtitan, NeMo, Megatron-LM), each off-diagonal cell fits on
one source alone and scores on another; the diagonal is a scale split *within* the source
(fit on jobs with at most the source's median device count, score on the larger ones); the
last row, ``all others``, fits on every source but the column's (leave one source out, the
figure the shipped pick is judged by). Each cell is scored once (:func:`transfer_scores`) on
the test side's successful jobs: Kendall tau and the absolute errors (MAPE, MdAPE) of the
dataset's target; :func:`transfer_matrix` lays out one of them.

>>> from perfzoo.datasets import load_dataset
>>> table = transfer_matrix(load_dataset("published-llm"), ["analytic"])   # doctest: +SKIP
>>> table.loc[("analytic", "all others"), "mosaicml_llmfoundry_benchmarks.csv"]   # doctest: +SKIP
0.93...
"""

from __future__ import annotations

from typing import Optional, Sequence

import numpy as np
import pandas as pd

from pathlib import Path

from perfzoo import zoo
from perfzoo.datasets.dataset import Dataset
from perfzoo.evaluation.metrics import kendall, mape, mdape
from perfzoo.evaluation.splits import Split, SplitNotApplicable
from perfzoo.zoo.calibrate import SOURCE_COLUMN

LEAVE_ONE_OUT = "all others"
MIN_ROWS = 5  # a side with fewer successful jobs is not scored
MAX_FIT_COST = 2.0  # members the bench puts in the matrix (zoo ``fit_cost`` tag): 5 x sources fits each


METRICS = ("kendall", "mape", "mdape")  # what each cell holds


def _fit_score(predictor: str, train: Dataset, test: Dataset) -> dict[str, float]:
    if len(train) < MIN_ROWS or len(test) < MIN_ROWS:
        return dict.fromkeys(METRICS, float("nan"))
    pred = zoo.make(predictor).fit(train.X, train.y).predict(test.X)
    return {"kendall": kendall(test.y, pred), "mape": mape(test.y, pred), "mdape": mdape(test.y, pred)}


def partitions(dataset: Dataset, source_column: str = SOURCE_COLUMN) -> list[Split]:
    """Every cell of the matrix as a :class:`~perfzoo.evaluation.splits.Split` of ``dataset.frame``
    over its labelled rows, in the matrix's order (each training source, then ``all others``, by
    test source): ``fold`` is ``'<train> -> <test>'``, ``info`` names both; a diagonal cell is the
    scale split within the source (at most its median device count predicts the rest)."""
    frame = dataset.frame
    if source_column not in frame.columns:
        raise SplitNotApplicable(f"{dataset.name}: no column {source_column!r} to tell its sources apart")
    labelled = np.flatnonzero(dataset.is_labelled)
    source = frame[source_column].astype(str).to_numpy()[labelled]
    names = sorted(set(source))
    if len(names) < 2:
        held = f"one source only ({names[0]!r})" if names else "no labelled rows"
        raise SplitNotApplicable(f"{dataset.name}: {held}; a transfer matrix needs two or more sources")
    scale = pd.to_numeric(frame[dataset.scale_column], errors="coerce").to_numpy(dtype=float)[labelled]
    cells = []
    for train in [*names, LEAVE_ONE_OUT]:
        for test in names:
            te = source == test
            if train == LEAVE_ONE_OUT:
                tr = source != test
            elif train == test:  # the scale split within the source
                cut = np.nanmedian(scale[te]) if np.isfinite(scale[te]).any() else np.nan
                tr, te = te & (scale <= cut), te & (scale > cut)
            else:
                tr = source == train
            cells.append(Split("transfer", "transfer", len(cells), labelled[tr], labelled[te], fold=f"{train} -> {test}",
                               info={"source_column": source_column, "train": train, "test": test}))
    return cells


def transfer_scores(dataset: Dataset, predictors: Sequence[str], source_column: str = SOURCE_COLUMN) -> pd.DataFrame:
    """One row per (predictor, training source, test source) with :data:`METRICS`: each source
    fitted alone and scored on each other, the diagonal the scale split within the source, and
    the ``all others`` rows fitted on every source but the test one (:func:`partitions`)."""
    cells = partitions(dataset, source_column)
    rows = []
    for predictor in predictors:
        for cell in cells:
            scores = _fit_score(predictor, dataset.subset(cell.train), dataset.subset(cell.test))
            rows.append({"predictor": predictor, "train": cell.info["train"], "test": cell.info["test"], **scores})
    return pd.DataFrame(rows)


def transfer_matrix(dataset: Dataset, predictors: Sequence[str], source_column: str = SOURCE_COLUMN,
                    metric: str = "kendall") -> pd.DataFrame:
    """``metric`` (one of :data:`METRICS`) per (predictor, training source) row and test-source
    column, plus the leave-one-source-out row; the diagonal is the scale split within the source."""
    return matrix(transfer_scores(dataset, predictors, source_column), metric)


def matrix(scores: pd.DataFrame, metric: str = "kendall") -> pd.DataFrame:
    """:func:`transfer_scores` laid out as the matrix of one ``metric``, rows in their order."""
    table = scores.pivot(index=["predictor", "train"], columns="test", values=metric)
    order = list(dict.fromkeys(zip(scores["predictor"], scores["train"])))
    table = table.loc[order]
    table.columns.name = None
    return table


def leave_one_out_mean(table: pd.DataFrame, predictor: str) -> float:
    """A predictor's mean Kendall over held-out sources (the ``all others`` row)."""
    return float(np.nanmean(table.loc[(predictor, LEAVE_ONE_OUT)].to_numpy(dtype=float)))


def to_markdown(table: pd.DataFrame, dataset: str, errors: Optional[pd.DataFrame] = None,
                task_id: Optional[str] = None) -> str:
    """The matrix as markdown: one block per predictor, sources shortened (:func:`short_names`);
    with ``errors`` (the same layout, MAPE in percent) each cell reads ``Kendall / MAPE %``; with
    ``task_id`` the heading names the task."""
    short = short_names(table.columns)
    lines = [f"## Transfer matrix: {dataset}", "", *([f"Task `{task_id}`.", ""] if task_id else []),
             ("Kendall tau / MAPE %" if errors is not None else "Kendall tau")
             + "; row: the source fitted on; column: the source scored on. Diagonal: scale "
             "split within the source (fit on jobs with at most its median device count). "
             f"`{LEAVE_ONE_OUT}`: fitted on every source but the column's.", ""]
    for predictor, block in table.groupby(level=0, sort=False):
        lines += [f"### {predictor}", "", "| fitted on | " + " | ".join(short[c] for c in table.columns) + " |",
                  "| --- |" + " ---: |" * len(table.columns)]
        for (_, train), values in block.iterrows():
            cells = ["–" if not np.isfinite(v) else f"{v:.3f}" for v in values]
            if errors is not None:
                cells = [c if not np.isfinite(m) else f"{c} / {m:.0f}"
                         for c, m in zip(cells, errors.loc[(predictor, train)].to_numpy(dtype=float))]
            lines.append(f"| {short.get(train, train)} | " + " | ".join(cells) + " |")
        summary = f"Leave one source out, mean over sources: **{leave_one_out_mean(table, predictor):.3f}**"
        if errors is not None:
            summary += f" Kendall, **{leave_one_out_mean(errors, predictor):.1f}%** MAPE"
        lines += ["", summary, ""]
    return "\n".join(lines)


def short_names(sources: Sequence[str]) -> dict[str, str]:
    """Each source by the fewest leading words of its name (``_``-separated, ``.csv`` dropped)
    that no other source shares.

    >>> short_names(["nvidia_nemo_perf.csv", "nvidia_megatron_bridge_perf.csv", "torchtitan_benchmarks.csv"])
    {'nvidia_nemo_perf.csv': 'nvidia_nemo', 'nvidia_megatron_bridge_perf.csv': 'nvidia_megatron', 'torchtitan_benchmarks.csv': 'torchtitan'}
    """
    words = {s: str(s).removesuffix(".csv").split("_") for s in sources}
    out = {}
    for s, w in words.items():
        n = 1
        while n < len(w) and any(o != s and words[o][:n] == w[:n] for o in words):
            n += 1
        out[s] = "_".join(w[:n])
    return out


def has_sources(dataset: Dataset, source_column: str = SOURCE_COLUMN) -> bool:
    """Whether ``dataset`` holds jobs from two or more sources."""
    frame = dataset.frame
    return source_column in frame.columns and frame[source_column].nunique() >= 2


def _ranking(table: pd.DataFrame) -> pd.DataFrame:
    """The members that rank something (a constant predictor's Kendall is undefined everywhere)."""
    ranks = table.notna().any(axis=1).groupby(level=0).any()
    return table.loc[[p for p in table.index.get_level_values(0).unique() if ranks[p]]]


def write(datasets: Sequence[Dataset], predictors: Sequence[str], out: Path,
          task_ids: Optional[dict[str, str]] = None) -> list[Path]:
    """The matrix of every dataset with several sources, for the throughput members cheap enough
    to fit five times per source (``fit_cost <= MAX_FIT_COST``) that rank anything (not
    ``constant``): ``out/transfer.md`` (Kendall / MAPE per cell) and ``out/transfer.csv`` (one row
    per cell with every :data:`METRICS` value); nothing (an empty list) when no dataset has two sources.
    ``task_ids`` maps a dataset name to its transfer task's id (:mod:`perfzoo.evaluation.suite`),
    named above its matrix and in a ``task`` column."""
    members = [p for p in predictors if getattr(zoo.get(p), "output", "throughput") == "throughput"
               and float(getattr(zoo.get(p), "fit_cost", 1.0)) <= MAX_FIT_COST]
    if not members:
        return []
    task_ids = task_ids or {}
    scores = {ds.name: transfer_scores(ds, members) for ds in datasets if has_sources(ds)}
    tables = {name: _ranking(matrix(s)) for name, s in scores.items()}
    if not tables:
        return []
    out.mkdir(parents=True, exist_ok=True)
    text = ["# perfzoo transfer matrix", "",
            "Written by `python -m perfzoo.bench` (split `transfer`); do not edit by hand. Members with "
            f"`fit_cost <= {MAX_FIT_COST:g}`. The shipped pick (`best.json`) is judged on the "
            "leave-one-source-out row.", ""]
    frames = []
    for name, table in tables.items():
        errors = matrix(scores[name], "mape").loc[table.index]
        text += [to_markdown(table, name, errors, task_ids.get(name)), ""]
        kept = set(table.index.get_level_values(0))
        frames.append(scores[name][scores[name]["predictor"].isin(kept)].assign(dataset=name, task=task_ids.get(name)))
    md, csv = out / "transfer.md", out / "transfer.csv"
    md.write_text("\n".join(text))
    pd.concat(frames).to_csv(csv, index=False)
    return [md, csv]
