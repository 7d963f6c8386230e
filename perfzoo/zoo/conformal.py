"""The cross-conformal recipe of every throughput member's prediction interval, on log-throughput residuals.

One recipe, used for every member by the wrapper :class:`perfzoo.zoo.interval.Interval`: the training
rows are cut into folds, a fresh copy of the member is fitted on all folds but one and predicts the one left out, and the
out-of-fold residuals ``log(measured / predicted)`` are kept. An interval at level ``1 - alpha``
around a new prediction ``p`` is ``[p * exp(q_lo), p * exp(q_hi)]``, ``q_lo`` and ``q_hi`` the
conformal ``alpha / 2`` and ``1 - alpha / 2`` quantiles of those residuals (split-conformal's
finite-sample rank, on each tail: Vovk et al. 2005; Barber et al. 2021, "Predictive inference
with the jackknife+", arXiv 1905.02928, for the cross-fitted variant). The tails are kept
separately, so a member that under-predicts a kind of job gets an interval that leans up.

What a fold holds decides what the interval covers. Rows of one group (``groups``: e.g. the
published source a row came from, or the collection session of a measured job:
:func:`perfzoo.zoo.calibrate.source_labels`) stay in one fold, so the residuals are those of predicting a
source never seen, the error a user meets on their own cluster. A group of fewer than
:data:`MIN_GROUP_ROWS` rows (a user's few calibration runs) is too small to be held out against
the rest, or to train on alone: its configurations are dealt over the folds of the large groups.
Without two large groups, copies of one configuration (equal feature rows) stay in one fold.

Each large group weighs the same in the quantiles, however many rows it has (the rows dealt as
configurations together weigh as one more group): a new source is one draw from the population of
sources, not of rows, so one big source must not set the interval alone. This is CDF pooling
(Dunn, Wasserman & Ramdas 2023, "Distribution-free prediction sets for two-layer hierarchical
models", JASA, arXiv 1809.07441): asymptotic coverage for a new group, where pooling the rows
covers a new row of the big group. Left out in turn, each shared published source's 80% interval
(``hybrid``, leaderboard of 2026-11-27) covered 56-95% of its rows with rows pooled, 71-92% with
sources weighed alike.

Each kind of job is calibrated apart (Mondrian conformal, :func:`kinds`, :func:`kind_quantiles`):
mixtures of experts err twice as far as dense models, and one pooled width under-covered the sources
rich in MoE (Megatron-Bridge 0.53 with ``hybrid``) while over-covering the dense ones (0.98);
calibrated apart, 4 of 6 sources land in 0.70-0.90 (was 2): docs/studies/intervals-1207.

>>> import numpy as np
>>> low, high = scaled(np.array([100.0]), quantiles(np.log([0.5, 0.8, 0.9, 1.0, 1.1, 1.2, 2.0]), alpha=0.5))
>>> float(low[0]), float(high[0])
(80.0, 120.0)
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np
import pandas as pd

from perfzoo.console import DataError, InputError
from perfzoo.records.columns import row_keys
from perfzoo.zoo.estimator import clone

ALPHA = 0.2  # the default interval: 80%
FOLDS = 5  # cross-fitting folds (fewer when there are fewer groups)
MIN_GROUP_ROWS = 20  # a smaller group is dealt over the folds configuration by configuration
# the kinds of job an interval is calibrated apart (Mondrian conformal, Vovk et al. 2005 ch. 4): a mixture
# of experts (n_experts > 1) or not. Left out in turn, a published source's MoE rows err twice as far as its
# dense rows (hybrid: p80 |log error| 0.56 vs 0.22; analytic 0.30 vs 0.16), so one pooled width under-covers
# the sources rich in MoE and over-covers the dense ones (docs/studies/intervals-1207)
KIND_COLUMN = "config.n_experts"
MIN_KIND_ROWS = 40  # a kind with fewer training residuals (or from fewer than two sources) takes the pooled width


def units(X: pd.DataFrame, groups: Optional[Any]) -> np.ndarray:
    """What each row is held out with: ``"group:<label>"`` for a group of at least
    :data:`MIN_GROUP_ROWS` rows (where there are two such groups), else ``"config:<hash>"``, its
    configuration (rows with equal features)."""
    config = pd.Series(row_keys(X)).astype(str).radd("config:").to_numpy(dtype=object)
    if groups is None:
        return config
    labels = pd.Series(np.asarray(groups, dtype=object).astype(str), dtype=object).radd("group:")
    large = labels.map(labels.value_counts()) >= MIN_GROUP_ROWS
    return np.where(large, labels, config) if large.any() and labels[large].nunique() >= 2 else config


def fold_labels(X: pd.DataFrame, groups: Optional[Any], folds: int, seed: int) -> np.ndarray:
    """One fold number per row in ``0 .. k-1``. Each group of at least :data:`MIN_GROUP_ROWS` rows
    is one unit (:func:`units`), ``k = min(folds, such groups)``; the other rows are dealt as
    configurations. Units are shuffled by ``seed`` and dealt round-robin, the large groups first,
    so every fold holds one; with fewer than two large groups every unit is a configuration.

    >>> X = pd.DataFrame({"config.tp": range(45)})
    >>> fold = fold_labels(X, ["a"] * 20 + ["b"] * 20 + ["mine"] * 5, folds=5, seed=0)
    >>> sorted(set(fold[:20].tolist())), sorted(set(fold[20:40].tolist())), sorted(set(fold[40:].tolist()))
    ([0], [1], [0, 1])
    """
    return _deal(units(X, groups), folds, seed)


def _deal(keys: np.ndarray, folds: int, seed: int) -> np.ndarray:
    """:func:`fold_labels` of the rows' :func:`units`."""
    codes, uniques = pd.factorize(pd.Series(keys, dtype=object))
    is_group = pd.Series(uniques, dtype=object).str.startswith("group:").to_numpy(dtype=bool)
    k = min(int(folds), int(is_group.sum()) if is_group.any() else len(uniques))
    if k < 2:
        raise DataError(f"an interval needs rows of at least two configurations to cross-fit; got {len(uniques)}")
    rng = np.random.default_rng(seed)
    fold_of_unit = np.empty(len(uniques), dtype=int)
    for unit in (np.flatnonzero(is_group), np.flatnonzero(~is_group)):  # large groups first
        order = unit[rng.permutation(unit.size)]
        fold_of_unit[order] = np.arange(unit.size) % k
    return fold_of_unit[codes]


def group_weights(X: pd.DataFrame, groups: Optional[Any]) -> np.ndarray:
    """One weight per row, averaging 1: each large group (:func:`units`) weighs the same in all,
    and the rows held out as configurations together weigh as one more group.

    >>> w = group_weights(pd.DataFrame({"config.tp": range(60)}), ["a"] * 30 + ["b"] * 20 + ["mine"] * 10)
    >>> [round(float(w[i] * n), 1) for i, n in ((0, 30), (30, 20), (50, 10))]  # each group's total weight
    [20.0, 20.0, 20.0]
    """
    return _weights(units(X, groups))


def _weights(keys: np.ndarray) -> np.ndarray:
    """:func:`group_weights` of the rows' :func:`units`."""
    kind = pd.Series(keys, dtype=object)
    kind = kind.where(kind.str.startswith("group:"), "config")
    weight = 1.0 / kind.map(kind.value_counts()).to_numpy(dtype=float)
    return weight * len(weight) / weight.sum()


def out_of_fold_residuals(model: Any, X: pd.DataFrame, y: np.ndarray, groups: Optional[Any] = None,
                          folds: int = FOLDS, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(residuals, weights, units)``: ``log(measured / predicted)`` of every row with a positive
    measurement, each predicted by a clone of ``model`` fitted without the row's fold
    (:func:`fold_labels`), the row's weight in the quantiles (:func:`group_weights`) and what it
    was held out with (:func:`units`)."""
    y = np.asarray(y, dtype=float)
    keep = np.isfinite(y) & (y > 0)
    X, y = X.loc[keep].reset_index(drop=True), y[keep]
    groups = None if groups is None else np.asarray(groups, dtype=object)[keep]
    keys = units(X, groups)
    fold = _deal(keys, folds, seed)
    residuals = np.empty(len(y))
    for k in np.unique(fold):
        out = fold == k
        part = clone(model).fit(X.loc[~out], y[~out])
        pred = np.asarray(part.predict(X.loc[out]), dtype=float)
        with np.errstate(divide="ignore", invalid="ignore"):
            residuals[out] = np.log(y[out] / pred)
    if not np.isfinite(residuals).all():
        raise DataError(f"{getattr(model, 'name', type(model).__name__)}: a non-positive prediction; "
                         "a log-throughput interval needs throughput predictions above 0")
    return residuals, _weights(keys), keys


def conformal_quantiles(residuals: np.ndarray, alpha: float,
                        weights: Optional[np.ndarray] = None) -> tuple[float, float]:
    """The ``alpha / 2`` and ``1 - alpha / 2`` conformal quantiles of ``residuals``. Unweighted:
    the ``floor((n + 1) alpha / 2)``-th smallest and the ``ceil((n + 1)(1 - alpha / 2))``-th
    smallest (infinite where ``n`` is too small for the level, as split-conformal prescribes).
    With ``weights`` (mean 1), the same ranks counted in weight: the largest residual with at most
    ``(n + 1) alpha / 2`` of the weight at or below it, the smallest with at least
    ``(n + 1)(1 - alpha / 2)``.

    >>> r = np.log([0.5, 0.8, 0.9, 1.0, 1.1, 1.2, 2.0])
    >>> [round(float(np.exp(q)), 2) for q in conformal_quantiles(r, 0.5)]
    [0.8, 1.2]
    >>> w = np.array([1.5, 1.5, 1, 1, 1, 0.5, 0.5])
    >>> [round(float(np.exp(q)), 2) for q in conformal_quantiles(r, 0.5, weights=w)]
    [0.5, 1.1]
    """
    _check_alpha(alpha)
    r = np.asarray(residuals, dtype=float)
    w = np.ones(r.size) if weights is None else np.asarray(weights, dtype=float)
    order = np.argsort(r, kind="stable")
    r, rank = r[order], np.cumsum(w[order])  # rank in weight: 1, 2, .., n when unweighted
    slack = 1e-9 * max(r.size, 1)
    below = np.flatnonzero(rank <= (r.size + 1) * alpha / 2 + slack)
    above = np.flatnonzero(rank >= (r.size + 1) * (1 - alpha / 2) - slack)
    low = r[below[-1]] if below.size else -np.inf
    high = r[above[0]] if above.size else np.inf
    return float(low), float(high)


def _check_alpha(alpha: float) -> None:
    if not 0 < alpha < 1:
        raise InputError(f"alpha must lie strictly between 0 and 1 (0.2: an 80% interval), got {alpha}")


def stack_quantiles(residuals: np.ndarray, unit_keys: np.ndarray, alpha: float,
                    weights: Optional[np.ndarray] = None) -> tuple[float, float]:
    """The ``alpha / 2`` and ``1 - alpha / 2`` quantiles of the residual of a row from a source never
    seen: that source's offset plus the row's scatter about it. The offset is drawn from the training
    sources' offsets (each large group of :func:`units` one source, its weighted mean residual) as a
    Student t with ``k - 1`` degrees of freedom about their mean, scale ``s sqrt(1 + 1 / k)`` (the
    predictive distribution of a new draw from a population seen ``k`` times); the scatter is the
    residuals less their source's offset (rows held out as configurations: less the mean of all of
    them), weighted as :func:`group_weights` does. Below three sources, :func:`conformal_quantiles`.

    >>> r = np.r_[np.full(10, -0.1), np.full(10, 0.0), np.full(10, 0.1)]
    >>> keys = np.repeat(["group:a", "group:b", "group:c"], 10)
    >>> [round(float(q), 3) for q in stack_quantiles(r, keys, 0.2)]   # t(2) quantiles x 0.1 x sqrt(4/3)
    [-0.218, 0.218]
    """
    # at fit time, and for a level other than the one an Interval keeps: loading one imports no scipy
    from scipy.optimize import brentq
    from scipy.stats import t as student_t

    _check_alpha(alpha)
    r = np.asarray(residuals, dtype=float)
    w = np.ones(r.size) if weights is None else np.asarray(weights, dtype=float)
    keys = pd.Series(np.asarray(unit_keys, dtype=object)).where(lambda k: k.str.startswith("group:"), "config")
    sources = [k for k in keys.unique() if k != "config"]
    if len(sources) < 3:
        return conformal_quantiles(r, alpha, weights)
    frame = pd.DataFrame({"r": r, "w": w, "k": keys})
    offsets = frame.groupby("k").apply(lambda g: np.average(g["r"], weights=g["w"]), include_groups=False)
    scatter = r - keys.map(offsets).to_numpy(dtype=float)
    m = offsets[sources].to_numpy(dtype=float)
    k = m.size
    scale = max(float(m.std(ddof=1)), 1e-6) * np.sqrt(1 + 1 / k)
    center = float(m.mean())
    share = w / w.sum()

    def cdf(x: float) -> float:
        return float(share @ student_t.cdf((x - center - scatter) / scale, k - 1))

    span = float(np.abs(scatter).max()) + 50 * scale
    low = brentq(lambda x: cdf(x) - alpha / 2, center - span, center + span)
    high = brentq(lambda x: cdf(x) - (1 - alpha / 2), center - span, center + span)
    return float(low), float(high)


def quantiles(residuals: np.ndarray, alpha: float = ALPHA, weights: Optional[np.ndarray] = None,
              unit_keys: Optional[np.ndarray] = None) -> tuple[float, float]:
    """The log factors of an interval at level ``1 - alpha`` (``weights``: :func:`conformal_quantiles`;
    with ``unit_keys``, what each residual was held out with, the quantiles for a source never seen:
    :func:`stack_quantiles`)."""
    return (conformal_quantiles(residuals, alpha, weights) if unit_keys is None
            else stack_quantiles(residuals, unit_keys, alpha, weights))


def kinds(X: pd.DataFrame) -> np.ndarray:
    """Each row's kind (:data:`KIND_COLUMN`): ``"moe"`` where it has more than one expert, else ``"dense"``
    (a frame without the column: all dense).

    >>> kinds(pd.DataFrame({"config.n_experts": [8, 1, None]})).tolist()
    ['moe', 'dense', 'dense']
    """
    experts = (pd.to_numeric(pd.Series(np.asarray(X[KIND_COLUMN], dtype=object)), errors="coerce").to_numpy(dtype=float)
               if KIND_COLUMN in X else np.full(len(X), np.nan))
    return np.where(np.nan_to_num(experts, nan=1.0) > 1, "moe", "dense").astype(object)


def kind_quantiles(residuals: np.ndarray, row_kinds: np.ndarray, alpha: float = ALPHA,
                   weights: Optional[np.ndarray] = None, unit_keys: Optional[np.ndarray] = None
                   ) -> dict[str, tuple[float, float]]:
    """:func:`quantiles` of each kind's residuals (:func:`kinds`) where it has at least
    :data:`MIN_KIND_ROWS` rows from two or more sources (``unit_keys``' groups; all rows without
    them), and ``"*"``: the quantiles of all, which a kind with fewer takes.

    >>> r = np.r_[np.linspace(-0.1, 0.1, 60), np.linspace(-0.5, 0.5, 60)]
    >>> q = kind_quantiles(r, np.repeat(["dense", "moe"], 60), alpha=0.2)
    >>> [round(q[k][1], 2) for k in ("dense", "moe", "*")]
    [0.08, 0.42, 0.31]
    """
    r = np.asarray(residuals, dtype=float)
    w = np.ones(r.size) if weights is None else np.asarray(weights, dtype=float)
    out = {"*": quantiles(r, alpha, w, unit_keys)}
    for kind in pd.unique(np.asarray(row_kinds, dtype=object)):
        sel = np.asarray(row_kinds) == kind
        sources = 2 if unit_keys is None else len({u for u in np.asarray(unit_keys)[sel] if str(u).startswith("group:")})
        if sel.sum() >= MIN_KIND_ROWS and (unit_keys is None or sources >= 2):
            out[str(kind)] = quantiles(r[sel], alpha, w[sel] / w[sel].mean(), None if unit_keys is None else np.asarray(unit_keys)[sel])
    return out


def scaled(pred: np.ndarray, factors: tuple[float, float]) -> tuple[np.ndarray, np.ndarray]:
    """``(pred * exp(low), pred * exp(high))`` for the log factors ``factors``.

    >>> [float(v[0]) for v in scaled(np.array([100.0]), (np.log(0.5), np.log(2.0)))]
    [50.0, 200.0]
    """
    pred = np.asarray(pred, dtype=float)
    with np.errstate(over="ignore"):
        return pred * np.exp(factors[0]), pred * np.exp(factors[1])


__all__ = ["ALPHA", "FOLDS", "KIND_COLUMN", "MIN_GROUP_ROWS", "MIN_KIND_ROWS", "conformal_quantiles", "fold_labels",
           "group_weights", "kind_quantiles", "kinds", "out_of_fold_residuals", "quantiles", "scaled", "stack_quantiles", "units"]
