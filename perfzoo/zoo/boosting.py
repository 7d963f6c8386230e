"""Gradient-boosted trees with native categoricals: ``lightgbm``, ``catboost``, the ranking
members ``lightgbm_rank`` and ``catboost_rank``, and ``hybrid`` (analytic x learned correction).
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np
import pandas as pd

from perfzoo.console import InputError
from perfzoo.zoo.analytic_features import MEMORY_FEATURES
from perfzoo.zoo.base import EncodedPredictor
from perfzoo.zoo.features import FeatureEncoder


def _lgb_params(self) -> dict[str, Any]:
    return dict(
        n_estimators=self.n_estimators, learning_rate=self.learning_rate, num_leaves=self.num_leaves,
        min_child_samples=self.min_child_samples, subsample=self.subsample, subsample_freq=1 if self.subsample < 1 else 0,
        colsample_bytree=self.colsample_bytree, reg_lambda=self.reg_lambda, random_state=self.random_state,
        n_jobs=self.n_jobs, deterministic=True, force_col_wise=True, verbose=-1, min_data_per_group=5,
        cat_smooth=1.0,
    )


def lgb_predict(model: Any, Z: np.ndarray, n_jobs: Optional[int]) -> np.ndarray:
    """A fitted LightGBM model's output on the encoder's float matrix
    (:meth:`~perfzoo.zoo.features.FeatureEncoder.matrix`): the booster itself, as the scikit-learn
    wrapper calls it but without its input checks (P(class 1) for a binary classifier)."""
    return model.booster_.predict(Z, num_threads=int(n_jobs or 1))


class LightGBMPredictor(EncodedPredictor):
    """LightGBM regressor of log throughput (native categoricals, log sizes, analytic features)."""

    name = "lightgbm"
    encoding = "native"

    def __init__(self, n_estimators: int = 200, learning_rate: float = 0.1, num_leaves: int = 31,
                 min_child_samples: int = 5, subsample: float = 1.0, colsample_bytree: float = 0.8,
                 reg_lambda: float = 0.0, target: str = "log", n_jobs: int = 1, random_state: int = 0):
        self.n_estimators = n_estimators
        self.learning_rate = learning_rate
        self.num_leaves = num_leaves
        self.min_child_samples = min_child_samples
        self.subsample = subsample
        self.colsample_bytree = colsample_bytree
        self.reg_lambda = reg_lambda
        self.target = target
        self.n_jobs = n_jobs
        self.random_state = random_state

    def _make_model(self):
        import lightgbm as lgb

        return lgb.LGBMRegressor(**_lgb_params(self))

    def _features(self, X) -> np.ndarray:
        return self.encoder_.matrix(X)  # LightGBM's own input: no frame to convert

    def _predict_model(self, Z) -> np.ndarray:
        return lgb_predict(self.model_, Z, self.n_jobs)


def _catboost_frame(Z: pd.DataFrame, cats: Sequence[str]) -> pd.DataFrame:
    """CatBoost takes categories as integers: the fitted category codes (-1: missing/unseen)."""
    if not cats:
        return Z
    Z = Z.copy(deep=False)
    for c in cats:
        Z[c] = Z[c].cat.codes.astype(np.int32)
    return Z


class CatBoostPredictor(EncodedPredictor):
    """CatBoost regressor of log throughput (ordered boosting, native categoricals)."""

    name = "catboost"
    encoding = "native"
    fit_cost = 4.0
    loss_function = "RMSE"

    def __init__(self, iterations: int = 500, learning_rate: float = 0.08, depth: int = 6,
                 l2_leaf_reg: float = 3.0, target: str = "log", n_jobs: int = 1, random_state: int = 0):
        self.iterations = iterations
        self.learning_rate = learning_rate
        self.depth = depth
        self.l2_leaf_reg = l2_leaf_reg
        self.target = target
        self.n_jobs = n_jobs
        self.random_state = random_state

    def _catboost_params(self) -> dict[str, Any]:
        return dict(iterations=self.iterations, learning_rate=self.learning_rate, depth=self.depth,
                    l2_leaf_reg=self.l2_leaf_reg, loss_function=self.loss_function, random_seed=self.random_state,
                    thread_count=self.n_jobs, verbose=False, allow_writing_files=False)

    def _make_model(self):
        from catboost import CatBoostRegressor

        return CatBoostRegressor(**self._catboost_params())

    def _fit_model(self, Z, z, X, groups) -> None:
        cats = self.encoder_.categorical_features_
        self.model_.fit(_catboost_frame(Z, cats), z, cat_features=cats or None)

    def _predict_model(self, Z) -> np.ndarray:
        return self.model_.predict(_catboost_frame(Z, self.encoder_.categorical_features_))


# ------------------------------------------------------------------------------------------
# ranking
# ------------------------------------------------------------------------------------------


def ranking_groups(X: pd.DataFrame, groups: Any, group_by: Optional[Sequence[str]],
                   max_group_size: int, seed: int) -> np.ndarray:
    """Query ids for a ranking objective: pairs are formed only inside a query.

    Comparable jobs first: ``groups`` if given, else the values of the ``group_by``
    columns, else the ``workload`` column if ``X`` has one, else one group. Each group is
    then cut at random (seeded) into queries of at most ``max_group_size`` rows, which
    bounds the pair count (quadratic in the query size) without biasing which pairs are seen.
    """
    n = len(X)
    if groups is not None:
        base = pd.factorize(pd.Series(np.asarray(groups)).astype(str))[0]
    else:
        cols = [c for c in (group_by or ("workload", "config.workload")) if c in X.columns]
        if cols:
            key = X[cols].astype(str).agg("|".join, axis=1)
            base = pd.factorize(key)[0]
        else:
            base = np.zeros(n, dtype=np.int64)
    rng = np.random.default_rng(seed)
    qid = np.empty(n, dtype=np.int64)
    next_id = 0
    for g in np.unique(base):
        rows = np.flatnonzero(base == g)
        rows = rng.permutation(rows)
        k = max(1, int(np.ceil(len(rows) / max_group_size)))
        for part in np.array_split(rows, k):
            qid[part] = next_id
            next_id += 1
    return qid


class LightGBMRankPredictor(LightGBMPredictor):
    """LightGBM with a ranking objective (LambdaRank by default, or ``rank_xendcg``):
    relevance labels are the training throughput cut into ``n_bins`` quantile bins
    (gain linear in the bin), queries are comparable jobs (:func:`ranking_groups`).
    Predictions are scores: only their order means anything.
    """

    name = "lightgbm_rank"
    output = "score"

    def __init__(self, objective: str = "lambdarank", n_bins: int = 31, max_group_size: int = 64,
                 group_by: Optional[Sequence[str]] = None, n_estimators: int = 200, learning_rate: float = 0.1,
                 num_leaves: int = 31, min_child_samples: int = 5, subsample: float = 1.0,
                 colsample_bytree: float = 0.8, reg_lambda: float = 0.0, target: str = "log", n_jobs: int = 1,
                 random_state: int = 0):
        self.objective = objective
        self.n_bins = n_bins
        self.max_group_size = max_group_size
        self.group_by = group_by
        super().__init__(n_estimators=n_estimators, learning_rate=learning_rate, num_leaves=num_leaves,
                         min_child_samples=min_child_samples, subsample=subsample,
                         colsample_bytree=colsample_bytree, reg_lambda=reg_lambda, target=target,
                         n_jobs=n_jobs, random_state=random_state)

    def _validate_params(self) -> None:
        super()._validate_params()
        if self.objective not in ("lambdarank", "rank_xendcg"):
            raise InputError(f"lightgbm_rank: objective must be 'lambdarank' or 'rank_xendcg', got {self.objective!r}")
        if not 2 <= self.n_bins <= 31:
            raise InputError(f"lightgbm_rank: n_bins must be in 2..31, got {self.n_bins}")

    def _make_model(self):
        import lightgbm as lgb

        params = _lgb_params(self)
        params.update(objective=self.objective, label_gain=list(range(self.n_bins)),
                      lambdarank_truncation_level=self.max_group_size)
        return lgb.LGBMRanker(**params)

    def _fit_model(self, Z, z, X, groups) -> None:
        qid = ranking_groups(X, groups, self.group_by, self.max_group_size, self.random_state)
        edges = np.unique(np.quantile(z, np.linspace(0, 1, self.n_bins + 1)[1:-1]))
        labels = np.searchsorted(edges, z, side="right")
        order = np.argsort(qid, kind="stable")
        _, sizes = np.unique(qid[order], return_counts=True)
        self.model_.fit(Z.iloc[order], labels[order], group=sizes)


class CatBoostRankPredictor(CatBoostPredictor):
    """CatBoost with a pairwise ranking loss (``PairLogit`` by default, or ``YetiRank``) over queries
    of comparable jobs (:func:`ranking_groups`), labels = transformed target. Predictions
    are scores: only their order means anything.
    """

    name = "catboost_rank"
    output = "score"

    def __init__(self, loss_function: str = "PairLogit", max_group_size: int = 32,
                 group_by: Optional[Sequence[str]] = None, iterations: int = 500, learning_rate: float = 0.08,
                 depth: int = 6, l2_leaf_reg: float = 3.0, target: str = "log", n_jobs: int = 1,
                 random_state: int = 0):
        self.loss_function = loss_function
        self.max_group_size = max_group_size
        self.group_by = group_by
        super().__init__(iterations=iterations, learning_rate=learning_rate, depth=depth, l2_leaf_reg=l2_leaf_reg,
                         target=target, n_jobs=n_jobs, random_state=random_state)

    def _validate_params(self) -> None:
        super()._validate_params()
        if self.loss_function not in ("YetiRank", "PairLogit", "YetiRankPairwise", "PairLogitPairwise", "QueryRMSE"):
            raise InputError(f"catboost_rank: unsupported loss_function {self.loss_function!r}")

    def _make_model(self):
        from catboost import CatBoostRanker

        return CatBoostRanker(**self._catboost_params())

    def _fit_model(self, Z, z, X, groups) -> None:
        from catboost import Pool

        qid = ranking_groups(X, groups, self.group_by, self.max_group_size, self.random_state)
        order = np.argsort(qid, kind="stable")
        cats = self.encoder_.categorical_features_
        # ranking losses are scale-free in the label; standardise for numeric comfort
        label = (z - z.mean()) / (z.std() or 1.0)
        pool = Pool(_catboost_frame(Z.iloc[order], cats), label[order], group_id=qid[order], cat_features=cats or None)
        self.model_.fit(pool)


# ------------------------------------------------------------------------------------------
# hybrid
# ------------------------------------------------------------------------------------------


class HybridPredictor(LightGBMPredictor):
    """Analytic throughput x a learned correction: LightGBM regresses the log-ratio of
    measured to analytic throughput (``target='log_ratio'``), so the prediction inherits the
    analytic model's scaling in GPUs, model size and hardware where the trees have seen
    nothing, and the trees only learn the (bounded) efficiency. Shallower, more regularised
    trees than ``lightgbm``: the correction should be smooth. The trees do not see the memory
    estimates (:data:`perfzoo.zoo.analytic_features.MEMORY_FEATURES`): whether a config fits is not
    how fast it runs, and each source's recipes put their memory use where their own efficiency
    lies (llm-foundry raises the micro batch to the memory limit), so a correction split on them
    carried one source's efficiency to another's (leaving one published source out, over 5
    seeds: mean MAPE 16.0% with them, 15.4% without, no source worse;
    ``docs/studies/hybrid-features-1127``). Configs with no analytic estimate (unknown
    hardware) fall back to a plain log-throughput fit.

    Parameters as :class:`LightGBMPredictor`, plus ``per_device`` (see
    :class:`perfzoo.zoo.targets.TargetTransform`).
    """

    name = "hybrid"
    fit_cost = 2.0

    def __init__(self, n_estimators: int = 150, learning_rate: float = 0.1, num_leaves: int = 15,
                 min_child_samples: int = 10, subsample: float = 1.0, colsample_bytree: float = 0.8,
                 reg_lambda: float = 1.0, per_device: Optional[bool] = None, n_jobs: int = 1, random_state: int = 0):
        self.n_estimators = n_estimators
        self.learning_rate = learning_rate
        self.num_leaves = num_leaves
        self.min_child_samples = min_child_samples
        self.subsample = subsample
        self.colsample_bytree = colsample_bytree
        self.reg_lambda = reg_lambda
        self.per_device = per_device
        self.n_jobs = n_jobs
        self.random_state = random_state

    target = "log_ratio"  # fixed for this member, not a parameter

    def _encoder(self) -> FeatureEncoder:
        return FeatureEncoder(self.encoding, exclude_analytic=MEMORY_FEATURES)


class HybridRooflinePredictor(HybridPredictor):
    """``hybrid`` over the calibrated roofline (:mod:`perfzoo.analytic.calibration`, its
    efficiency factors fitted on the training jobs) instead of the raw analytic estimate: the
    trees learn only what the fitted roofline misses, which is smaller and extrapolates
    further in scale (vTrain's scale split: 0.952 against ``hybrid``'s 0.920).
    """

    name = "hybrid_roofline"
    target = "log_roofline_ratio"
