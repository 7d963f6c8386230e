"""The leaderboard writer: one call that turns the runner's results into a leaderboard folder.

:func:`write` puts into ``out_dir``

``README.md``
    the report (:mod:`perfzoo.evaluation.report`): per dataset and split, every member's
    metrics as mean ± 2 std, the ★ of the split, the paper's figures and the issue's targets;
``results.csv``
    every fit: one row per (dataset, predictor, split, fold, seed) with every number, its ``task``
    column naming the benchmark task (:mod:`perfzoo.evaluation.suite`);
``tasks.json``
    the definition of every benchmark task the run covered (data hash, split rule, seeds, rows,
    metrics), by id;
``figures/``
    ``<dataset>-scatter.png`` and ``<dataset>-curve.png`` (:mod:`perfzoo.evaluation.figures`);
``best.json`` and ``artifacts/``
    the shipped predictor per dataset (:mod:`perfzoo.evaluation.artifacts`, picked by
    :data:`~perfzoo.evaluation.ranking.BEST_RULE`), which :func:`perfzoo.zoo.load_best` returns.

Example
-------
>>> from perfzoo.zoo import load_best
>>> predictor = load_best("vtrain-a100")                       # doctest: +SKIP
>>> predictor.predict(load_dataset("vtrain-a100").X.head(3))   # doctest: +SKIP
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Optional, Sequence, Union

import pandas as pd

from perfzoo.datasets.dataset import Dataset
from perfzoo.evaluation.artifacts import write_best
from perfzoo.evaluation.ranking import metric_columns, summarize
from perfzoo.evaluation.report import beside_lines, readme
from perfzoo.evaluation.runner import Results
from perfzoo.evaluation.tasks import PredictorSpec

RESULT_ID_COLUMNS = ("task", "dataset", "predictor", "output", "split", "kind", "fold", "seed", "n_train", "n_test")
TASKS_FILE = "tasks.json"
# every file a bench run puts in its folder, as glob patterns relative to it: what :func:`write`
# writes, the transfer split's tables (:func:`perfzoo.evaluation.transfer.write`) and the held-out
# hardware tables (:func:`perfzoo.evaluation.hardware.write`)
OUTPUTS = ("README.md", "results.csv", "tasks.json", "best.json", "figures/*-scatter.png", "figures/*-curve.png",
           "artifacts/*/model.joblib", "artifacts/*/metadata.json", "transfer.md", "transfer.csv",
           "hardware.md", "hardware.csv")


def write(
    results: Results,
    datasets: Sequence[Dataset],
    predictors: Sequence[PredictorSpec],
    out_dir: Union[str, os.PathLike],
    context: dict[str, Any],
    *,
    figures: bool = True,
    artifacts: bool = True,
    beside: Optional[tuple[str, pd.DataFrame]] = None,
    yours: Sequence[str] = (),
) -> dict[str, Any]:
    """Write README.md, results.csv, tasks.json, figures/, best.json and artifacts/ into ``out_dir``.

    ``context`` is :func:`~perfzoo.evaluation.report.run_context` (plus ``notes``, lines for
    the README header). ``beside`` (a leaderboard's folder and its ``results.csv``) adds a README
    section setting the members named in ``yours`` beside that leaderboard's on each task id both
    hold. Returns the best.json content.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    frame = results.frame
    summary = summarize(frame)

    # results.csv: every task, every number
    cols = [*RESULT_ID_COLUMNS, *metric_columns(frame), "error"]
    frame.reindex(columns=[c for c in cols if c in frame.columns or c == "error"]).sort_values(
        ["dataset", "split", "predictor", "fold", "seed"]).to_csv(out / "results.csv", index=False, float_format="%.6g")

    (out / TASKS_FILE).write_text(json.dumps([t.definition() for t in results.tasks], indent=1) + "\n")

    fig_dir = out / "figures"
    if figures:
        fig_dir.mkdir(exist_ok=True)
    best_doc = write_best(summary, datasets, predictors, out, context, artifacts=artifacts)
    lines = readme(results, summary, datasets, context, best_doc, fig_dir if figures else None)
    if beside is not None:
        lines += beside_lines(summary, beside[0], beside[1], yours)
    (out / "README.md").write_text("\n".join(lines) + "\n")
    return best_doc
