"""``failure``: the probability that a config's job fails (out of memory, timeout, crash).

Used by the searcher (expected throughput = predicted throughput x P(success), or a hard
filter) and by the benchmark (ROC AUC on failed vs finished jobs).
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np
import pandas as pd
from scipy.special import expit

from perfzoo.console import InputError
from perfzoo.zoo.base import Predictor
from perfzoo.zoo.boosting import lgb_predict
from perfzoo.zoo.features import FeatureEncoder, as_columns


def failure_labels(y: Any) -> np.ndarray:
    """``y`` as a boolean "failed" array. Accepted forms:

    * status strings (``dataset.frame['status']``): failed = anything but ``'ok'``;
    * booleans, or numbers that are all 0/1: ``True`` / 1 = failed;
    * throughput (``dataset.y``, NaN where the job failed): failed = not a finite number.

    >>> failure_labels(["ok", "oom", "ok"]).tolist(), failure_labels([1200.0, float("nan")]).tolist()
    ([False, True, False], [False, True])
    """
    s = pd.Series(y.to_numpy() if isinstance(y, pd.Series) else np.asarray(y, dtype=object))
    if len(s) == 0:
        return np.zeros(0, dtype=bool)
    values = s.dropna()
    if len(values) and all(isinstance(v, str) for v in values):
        return (s.astype(str).str.lower() != "ok").to_numpy()
    if len(values) and all(isinstance(v, (bool, np.bool_)) for v in values):
        return s.fillna(False).astype(bool).to_numpy()
    num = pd.to_numeric(s, errors="coerce").to_numpy(dtype=float)
    finite = num[np.isfinite(num)]
    if len(finite) == len(num) and np.isin(finite, (0.0, 1.0)).all():
        return num == 1.0
    return ~np.isfinite(num)


class FailurePredictor(Predictor):
    """Classifier of P(job fails) from the config (native categoricals + analytic features,
    whose memory estimate and memory fraction carry most of the OOM signal).

    ``fit(X, y)``: ``y`` as in :func:`failure_labels` (``dataset.y`` works: NaN = failed).

    Methods
    -------
    ``predict_failure(X)``  P(fail) per config.
    ``predict_proba(X)``    scikit-learn style, columns ``[P(ok), P(fail)]`` (``classes_ = [0, 1]``,
                            1 = failed).
    ``predict(X)``          P(success) = 1 - P(fail): higher is better, like every other member,
                            so ``throughput * predict(X)`` is an expected throughput.

    ``model``: ``lightgbm`` (gradient-boosted trees), ``logistic`` (L2 logistic regression on
    standardised features: smooth, extrapolates monotonically, better with few failures) or
    ``auto`` (logistic when the rarer class has fewer than ``min_class_for_trees`` rows). With
    one class only, the predictor returns the (Laplace-smoothed) observed rate.
    """

    name = "failure"
    output = "probability"

    def __init__(self, model: str = "auto", min_class_for_trees: int = 20, n_estimators: int = 100,
                 learning_rate: float = 0.1, num_leaves: int = 15, C: float = 1.0, n_jobs: int = 1,
                 random_state: int = 0):
        self.model = model
        self.min_class_for_trees = min_class_for_trees
        self.n_estimators = n_estimators
        self.learning_rate = learning_rate
        self.num_leaves = num_leaves
        self.C = C
        self.n_jobs = n_jobs
        self.random_state = random_state

    def _validate_params(self) -> None:
        if self.model not in ("auto", "lightgbm", "logistic"):
            raise InputError(f"failure: model must be 'auto', 'lightgbm' or 'logistic', got {self.model!r}")

    def _check_y(self, y: Any, n: int) -> np.ndarray:
        failed = failure_labels(y)
        if len(failed) != n:
            raise ValueError(f"failure: X has {n} rows but y has {len(failed)} values")
        return failed.astype(float)

    def _rows_to_fit(self, y: np.ndarray) -> Optional[np.ndarray]:
        return None  # every row counts: failures are the point

    def _fit(self, X: pd.DataFrame, y: np.ndarray, groups: Any) -> None:
        self.classes_ = np.array([0, 1])
        n_fail = int(y.sum())
        minority = min(n_fail, len(y) - n_fail)
        self.rate_ = (n_fail + 1.0) / (len(y) + 2.0)
        self.kind_ = "constant"
        if minority == 0:
            return
        kind = self.model
        if kind == "auto":
            kind = "lightgbm" if minority >= self.min_class_for_trees else "logistic"
        self.kind_ = kind
        if kind == "lightgbm":
            import lightgbm as lgb

            self.encoder_ = FeatureEncoder("native").fit(X)
            self.model_ = lgb.LGBMClassifier(
                n_estimators=self.n_estimators, learning_rate=self.learning_rate, num_leaves=self.num_leaves,
                min_child_samples=5, colsample_bytree=0.8, random_state=self.random_state, n_jobs=self.n_jobs,
                deterministic=True, force_col_wise=True, verbose=-1)
        else:
            from sklearn.linear_model import LogisticRegression

            self.encoder_ = FeatureEncoder("scaled").fit(X)
            self.model_ = LogisticRegression(C=self.C, class_weight="balanced", max_iter=2000)
        self.model_.fit(self.encoder_.transform(X), y.astype(int))

    def predict_failure(self, X: pd.DataFrame) -> np.ndarray:
        """P(the job fails) per config."""
        self._check_fitted()
        X = as_columns(X)
        if self.kind_ == "constant":
            return np.full(len(X), self.rate_)
        with self._threads():
            if self.kind_ == "lightgbm":
                return lgb_predict(self.model_, self.encoder_.matrix(X), self.n_jobs)
            # logistic: LogisticRegression.predict_proba's arithmetic on the encoder's linear form
            return expit(self.encoder_.linear(X, self.model_.coef_[0], self.model_.intercept_[0]))

    def predict_proba(self, X: pd.DataFrame) -> np.ndarray:
        """``[P(ok), P(fail)]`` per config (scikit-learn's layout, ``classes_ = [0, 1]``)."""
        p = self.predict_failure(X)
        return np.column_stack([1.0 - p, p])

    def _predict(self, X: pd.DataFrame) -> np.ndarray:
        return 1.0 - self.predict_failure(X)
