"""Evaluation: splits, metrics, the benchmark runner and the leaderboard writer.

* :mod:`perfzoo.evaluation.splits`: random (group-aware), temporal, scale, group and
  learning-curve splits of a Dataset, each with one promise the tests check;
* :mod:`perfzoo.evaluation.metrics`: Kendall tau-b, Spearman, Pearson, MAPE, grouped Kendall,
  top-k regret, precision@k, ROC AUC: one definition each;
* :mod:`perfzoo.evaluation.runner`: predictors x datasets x splits x seeds in parallel
  (joblib), cached under ``.perfzoo-cache/``; cross-dataset evaluation;
* :mod:`perfzoo.evaluation.leaderboard`: ``leaderboard/`` (README.md, results.csv, figures,
  best.json, artifacts) and :func:`load_best`.

``python -m perfzoo.bench`` drives them all.
"""

from perfzoo.evaluation import metrics, splits
from perfzoo.zoo.best import load_best
from perfzoo.evaluation.runner import PredictorSpec, cross_evaluate, run
from perfzoo.evaluation.splits import Split, SplitNotApplicable, make_splits

__all__ = ["metrics", "splits", "load_best", "PredictorSpec", "cross_evaluate", "run", "Split",
           "SplitNotApplicable", "make_splits"]
