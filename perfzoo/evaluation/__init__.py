"""Evaluation: splits, metrics, the benchmark runner and the leaderboard writer.

* :mod:`perfzoo.evaluation.splits`: random (group-aware), temporal, scale, group and
  learning-curve splits of a Dataset, each with one promise the tests check;
* :mod:`perfzoo.evaluation.metrics`: Kendall tau-b, Spearman, Pearson, MAPE, MdAPE, median
  predicted/measured, grouped Kendall, top-k regret, precision@k, interval coverage, ROC AUC:
  one definition each;
* :mod:`perfzoo.evaluation.suite`: the versioned benchmark tasks (one split of one dataset:
  its data hash, rule, rows, seeds and metrics), each named ``<dataset>/<split>/<hash>``;
* :mod:`perfzoo.evaluation.tasks`: predictor specs, fits (one fit and score each), their
  cache keys and the result cache under ``.perfzoo-cache/``;
* :mod:`perfzoo.evaluation.runner`: runs the tasks in parallel (joblib);
* :mod:`perfzoo.evaluation.cross`: fit on one dataset, score on another, with K of its jobs joined
  (``bench --train A --test B --shots K``);
* :mod:`perfzoo.evaluation.ranking`: results summarised per split, the ★ of a split, the
  shipped-predictor rule;
* :mod:`perfzoo.evaluation.report` and :mod:`perfzoo.evaluation.figures`: the leaderboard's
  README and figures;
* :mod:`perfzoo.evaluation.artifacts`: the shipped predictors (``best.json``, ``artifacts/``),
  which :func:`perfzoo.zoo.load_best` reads back;
* :mod:`perfzoo.evaluation.leaderboard`: :func:`~perfzoo.evaluation.leaderboard.write`, all of
  the above into one folder;
* :mod:`perfzoo.evaluation.export`: a benchmark task's rows as files with their card
  (``perfzoo datasets export NAME --split TASK_ID``).

Every module takes a :class:`perfzoo.datasets.dataset.Dataset` and branches on a member's tags
(``output``, ``fit_cost``), never on its name. ``python -m perfzoo.bench`` drives them all.
"""

from perfzoo.evaluation import metrics, splits
from perfzoo.evaluation.cross import cross_scores
from perfzoo.evaluation.runner import run
from perfzoo.evaluation.splits import Split, SplitNotApplicable, make_splits
from perfzoo.evaluation.tasks import PredictorSpec

__all__ = ["metrics", "splits", "PredictorSpec", "cross_scores", "run", "Split", "SplitNotApplicable",
           "make_splits"]
