"""Benchmark metrics, one definition each, used by the tests, the runner and the leaderboard.

All throughput metrics compare *measured* throughput ``y_true`` with a predictor's output
``y_pred`` on successful jobs only (failed jobs have no throughput; they are scored by the
``failure`` classifier with :func:`roc_auc`). Higher throughput is better.

Correlations (the CubicML paper's three)
    :func:`kendall` (tau-b, which corrects for ties), :func:`spearman` (Pearson correlation of
    average ranks), :func:`pearson` (linear correlation of the raw values).
What a searcher needs
    :func:`grouped_kendall`: mean tau-b within groups of comparable jobs (e.g. same model and
    GPU count), because a searcher only ever compares configurations of one job;
    :func:`top_k_regret` and :func:`precision_at_k`: did the predicted top k contain the best
    configuration? Ties in the prediction are broken uniformly at random and the *expected*
    value is returned, so a constant predictor scores exactly what random picking scores.
Absolute error (:data:`ABSOLUTE_METRICS`)
    :func:`mape` and :func:`mdape` (mean and median absolute percentage error, in percent) and
    :func:`ratio_median` (median predicted / measured: 1 is unbiased, 2 is off by 2x). Only
    meaningful for predictors that output throughput (ranking predictors output scores):
    :func:`score` gives ``nan`` for them when told ``absolute=False``, as the runner does.
Intervals (:data:`INTERVAL_METRICS`)
    :func:`coverage`: the share of measured values inside a predicted interval (an
    :data:`INTERVAL_LEVEL` interval should cover about that share of held-out rows);
    :func:`interval_width`: the median ratio high / low, so a coverage bought with useless
    width shows.

Degenerate inputs (fewer than two rows, a constant side) give ``nan`` for the correlations,
never an exception: a benchmark must not crash on one odd split.

Example
-------
>>> round(kendall([1, 2, 3, 4], [1, 3, 2, 4]), 4)
0.6667
>>> top_k_regret([10, 20, 40], [3, 2, 1], k=1)
0.75
>>> mdape([100, 200, 400], [110, 150, 400])
10.0
"""

from __future__ import annotations

from math import comb
from typing import Any, Iterable, Optional, Sequence

import numpy as np
from scipy import stats

KS: tuple[int, ...] = (1, 5, 10)
"""The k of top-k regret and precision@k reported by the benchmark."""

# the throughput metrics :func:`score` returns, in leaderboard order
THROUGHPUT_METRICS: tuple[str, ...] = (
    "kendall",
    "spearman",
    "pearson",
    "grouped_kendall",
    *(f"top{k}_regret" for k in KS),
    *(f"precision_at_{k}" for k in KS),
    "mape",
    "mdape",
    "ratio_median",
)
# the metrics of absolute error: nan for members whose outputs are scores
ABSOLUTE_METRICS: tuple[str, ...] = ("mape", "mdape", "ratio_median")
INTERVAL_LEVEL = 0.8  # the prediction interval the benchmark scores: 80% (alpha = 0.2)
INTERVAL_METRICS: tuple[str, ...] = ("coverage", "interval_width")
# K runs of each held-out group anchor the member (perfzoo.evaluation.anchored): its MAPE and coverage then
WITHIN_SHOTS: tuple[int, ...] = (1, 3)
WITHIN_METRICS: tuple[str, ...] = tuple(f"{m}_within_{k}" for k in WITHIN_SHOTS for m in ("mape", "coverage"))
# metrics whose best value is a target, not an extreme: the closest to it is best
TARGET_VALUE: dict[str, float] = {"ratio_median": 1.0, "coverage": INTERVAL_LEVEL,
                                  **{f"coverage_within_{k}": INTERVAL_LEVEL for k in WITHIN_SHOTS}}
HIGHER_IS_BETTER: dict[str, bool] = {
    **{f"mape_within_{k}": False for k in WITHIN_SHOTS},
    "kendall": True,
    "spearman": True,
    "pearson": True,
    "grouped_kendall": True,
    **{f"top{k}_regret": False for k in KS},
    **{f"precision_at_{k}": True for k in KS},
    "mape": False,
    "mdape": False,
    "interval_width": False,
    "roc_auc": True,
    "fit_time_s": False,
    "predict_time_s": False,
}


def _pair(y_true: Iterable[float], y_pred: Iterable[float]) -> tuple[np.ndarray, np.ndarray]:
    t = np.asarray(y_true, dtype=float).ravel()
    p = np.asarray(y_pred, dtype=float).ravel()
    if t.shape != p.shape:
        raise ValueError(f"y_true has {t.size} values but y_pred has {p.size}; they must match")
    if not np.all(np.isfinite(t)):
        raise ValueError("y_true holds NaN or infinite values; drop failed jobs before scoring")
    return t, p


def _degenerate(t: np.ndarray, p: np.ndarray) -> bool:
    return t.size < 2 or np.ptp(t) == 0 or np.ptp(p) == 0 or not np.all(np.isfinite(p))


def kendall(y_true: Iterable[float], y_pred: Iterable[float]) -> float:
    """Kendall tau-b between measured and predicted values.

    tau_b = (concordant - discordant) / sqrt((n0 - ties_true) * (n0 - ties_pred)), with
    n0 = n(n-1)/2 and ties counted as pairs; ``nan`` if either side is constant.
    """
    t, p = _pair(y_true, y_pred)
    if _degenerate(t, p):
        return float("nan")
    return float(stats.kendalltau(t, p, variant="b").statistic)


def spearman(y_true: Iterable[float], y_pred: Iterable[float]) -> float:
    """Spearman rho: Pearson correlation of the average ranks (ties get their mean rank)."""
    t, p = _pair(y_true, y_pred)
    if _degenerate(t, p):
        return float("nan")
    return float(stats.spearmanr(t, p).statistic)


def pearson(y_true: Iterable[float], y_pred: Iterable[float]) -> float:
    """Pearson r of the raw values (the paper's figure; scale-free, sensitive to outliers)."""
    t, p = _pair(y_true, y_pred)
    if _degenerate(t, p):
        return float("nan")
    return float(np.corrcoef(t, p)[0, 1])


def mape(y_true: Iterable[float], y_pred: Iterable[float]) -> float:
    """Mean absolute percentage error, in percent: 100 * mean(|pred - true| / |true|).

    Rows with ``true == 0`` are left out (their relative error is undefined).
    """
    t, p = _pair(y_true, y_pred)
    keep = t != 0
    if not keep.any():
        return float("nan")
    return float(100.0 * np.mean(np.abs(p[keep] - t[keep]) / np.abs(t[keep])))


def mdape(y_true: Iterable[float], y_pred: Iterable[float]) -> float:
    """Median absolute percentage error, in percent: 100 * median(|pred - true| / |true|).

    Robust where :func:`mape` is pulled by a few rows off by 10x; rows with ``true == 0`` are left out.
    """
    t, p = _pair(y_true, y_pred)
    keep = t != 0
    if not keep.any():
        return float("nan")
    return float(100.0 * np.median(np.abs(p[keep] - t[keep]) / np.abs(t[keep])))


def ratio_median(y_true: Iterable[float], y_pred: Iterable[float]) -> float:
    """Median of predicted / measured: 1 is unbiased, 2 over-predicts by 2x, 0.5 under-predicts by 2x.

    Rows with ``true <= 0`` are left out.

    >>> ratio_median([100, 200, 400], [150, 400, 400])
    1.5
    """
    t, p = _pair(y_true, y_pred)
    keep = t > 0
    if not keep.any():
        return float("nan")
    return float(np.median(p[keep] / t[keep]))


def coverage(y_true: Iterable[float], low: Iterable[float], high: Iterable[float]) -> float:
    """The share of measured values inside their predicted interval ``[low, high]``.

    >>> coverage([1, 2, 3, 4], [0, 0, 0, 5], [2, 2, 2, 6])
    0.5
    """
    t, lo = _pair(y_true, low)
    _, hi = _pair(y_true, high)
    if t.size == 0:
        return float("nan")
    return float(np.mean((lo <= t) & (t <= hi)))


def interval_width(low: Iterable[float], high: Iterable[float]) -> float:
    """The median ratio high / low of positive intervals (2 means the interval spans a factor of 2).

    >>> interval_width([1, 2, 10], [2, 8, 15])
    2.0
    """
    lo, hi = np.asarray(low, dtype=float).ravel(), np.asarray(high, dtype=float).ravel()
    keep = (lo > 0) & np.isfinite(hi)
    if not keep.any():
        return float("nan")
    return float(np.median(hi[keep] / lo[keep]))


def interval_scores(y_true: Iterable[float], low: Iterable[float], high: Iterable[float]) -> dict[str, float]:
    """Every :data:`INTERVAL_METRICS` value of an interval at once."""
    return {"coverage": coverage(y_true, low, high), "interval_width": interval_width(low, high)}


def grouped_kendall(
    y_true: Iterable[float], y_pred: Iterable[float], groups: Optional[Sequence[Any]]
) -> float:
    """Mean Kendall tau-b within groups of comparable jobs (unweighted mean over groups).

    A group with fewer than two distinct measured values is skipped (there is nothing to
    rank). A group whose predictions are all equal counts as tau = 0 (it ranks nothing).
    ``groups=None`` treats everything as one group (= :func:`kendall`, with the 0 rule).
    ``nan`` when no group qualifies.
    """
    t, p = _pair(y_true, y_pred)
    if groups is None:
        codes = np.zeros(t.size, dtype=int)
    else:
        g = np.asarray(groups, dtype=object).ravel()
        if g.size != t.size:
            raise ValueError(f"groups has {g.size} values but y_true has {t.size}")
        codes = _group_codes(g)
    taus = []
    for code in np.unique(codes):
        sel = codes == code
        tg, pg = t[sel], p[sel]
        if np.unique(tg).size < 2:
            continue
        if np.ptp(pg) == 0 or not np.all(np.isfinite(pg)):
            taus.append(0.0)
            continue
        taus.append(float(stats.kendalltau(tg, pg, variant="b").statistic))
    return float(np.mean(taus)) if taus else float("nan")


def _group_codes(g: np.ndarray) -> np.ndarray:
    """Integer codes for group labels (None / NaN labels form their own group)."""
    keys = ["\x00missing" if (v is None or (isinstance(v, float) and np.isnan(v))) else repr(v) for v in g]
    _, codes = np.unique(np.asarray(keys, dtype=object).astype(str), return_inverse=True)
    return codes


def _top_k_block(p: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, int]:
    """Split the predicted top k into a sure part and a tied block to draw from.

    Returns (sure, tied, r): ``sure`` holds the rows predicted strictly above the k-th
    largest prediction, ``tied`` the rows equal to it, and ``r = k - len(sure)`` rows are
    drawn uniformly at random from ``tied``.
    """
    k = min(k, p.size)
    kth = np.sort(p)[::-1][k - 1]
    sure = np.flatnonzero(p > kth)
    tied = np.flatnonzero(p == kth)
    return sure, tied, k - sure.size


def _expected_max(a: float, values: np.ndarray, r: int) -> float:
    """E[max(a, max of r values drawn without replacement from ``values``)].

    With the values sorted ascending v_1..v_m, the drawn maximum is v_j with probability
    C(j-1, r-1) / C(m, r).
    """
    if r <= 0:
        return a
    v = np.sort(values)
    m = v.size
    total = comb(m, r)
    return float(sum(comb(j - 1, r - 1) / total * max(a, v[j - 1]) for j in range(r, m + 1)))


def top_k_regret(y_true: Iterable[float], y_pred: Iterable[float], k: int = 1) -> float:
    """1 - (best measured throughput among the predicted top k) / (best measured throughput).

    0 means the predicted top k contains the best configuration; k larger than the number of
    rows is clipped. Ties in the prediction at the k-th place are broken uniformly at random
    and the expected regret is returned.
    """
    t, p = _pair(y_true, y_pred)
    if t.size == 0:
        return float("nan")
    best = t.max()
    if best <= 0:
        return float("nan")
    p = np.where(np.isfinite(p), p, -np.inf)
    sure, tied, r = _top_k_block(p, k)
    a = t[sure].max() if sure.size else -np.inf
    return float(1.0 - _expected_max(a, t[tied], r) / best)


def precision_at_k(y_true: Iterable[float], y_pred: Iterable[float], k: int = 1) -> float:
    """Expected share of the predicted top k that is in the measured top k.

    The measured top k includes every row tied with the k-th best measured value; ties in
    the prediction at the k-th place are broken uniformly at random (expected value).
    """
    t, p = _pair(y_true, y_pred)
    if t.size == 0:
        return float("nan")
    k = min(k, t.size)
    p = np.where(np.isfinite(p), p, -np.inf)
    in_true = t >= np.sort(t)[::-1][k - 1]
    sure, tied, r = _top_k_block(p, k)
    hits = in_true[sure].sum() + r * in_true[tied].mean()
    return float(hits / k)


def roc_auc(failed: Iterable[bool], p_fail: Iterable[float]) -> float:
    """ROC AUC of a failure classifier: P(a failed job scores above an ok job), ties count 1/2.

    ``nan`` when the test side holds only one class.
    """
    y = np.asarray(failed, dtype=bool).ravel()
    s = np.asarray(p_fail, dtype=float).ravel()
    if y.size != s.size:
        raise ValueError(f"failed has {y.size} values but p_fail has {s.size}")
    if y.all() or not y.any():
        return float("nan")
    ranks = stats.rankdata(s)  # average ranks: ties count one half (Mann-Whitney U)
    n_pos, n_neg = y.sum(), (~y).sum()
    u = ranks[y].sum() - n_pos * (n_pos + 1) / 2
    return float(u / (n_pos * n_neg))


def score(
    y_true: Iterable[float],
    y_pred: Iterable[float],
    groups: Optional[Sequence[Any]] = None,
    ks: Sequence[int] = KS,
    absolute: bool = True,
) -> dict[str, float]:
    """Every throughput metric at once: ``{name: value}`` in :data:`THROUGHPUT_METRICS` order.

    ``absolute=False`` (predictions are scores, not throughput): the :data:`ABSOLUTE_METRICS` are ``nan``.
    """
    t, p = _pair(y_true, y_pred)
    out = {
        "kendall": kendall(t, p),
        "spearman": spearman(t, p),
        "pearson": pearson(t, p),
        "grouped_kendall": grouped_kendall(t, p, groups),
    }
    for k in ks:
        out[f"top{k}_regret"] = top_k_regret(t, p, k)
    for k in ks:
        out[f"precision_at_{k}"] = precision_at_k(t, p, k)
    nan = float("nan")
    out["mape"] = mape(t, p) if absolute else nan
    out["mdape"] = mdape(t, p) if absolute else nan
    out["ratio_median"] = ratio_median(t, p) if absolute else nan
    return out
