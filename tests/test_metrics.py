"""Each benchmark metric against values computed by hand, ties included."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from perfzoo.evaluation import metrics as M

# a small case with a tie on each side, used by the three correlations
T = [1, 2, 2, 3]
P = [1, 2, 3, 3]


def test_kendall_tau_b_with_ties():
    # the 6 pairs (i<j) of T=[1,2,2,3], P=[1,2,3,3]:
    #   (0,1) C  (0,2) C  (0,3) C  (1,3) C
    #   (1,2) tied in T only     (2,3) tied in P only
    # C=4, D=0, n0=6, ties_T=1, ties_P=1
    # tau_b = (C-D)/sqrt((n0-ties_T)(n0-ties_P)) = 4/sqrt(5*5) = 0.8
    assert M.kendall(T, P) == pytest.approx(0.8)
    # no ties: [1,2,3,4] vs [1,3,2,4]: one discordant pair of 6 -> (5-1)/6 = 2/3
    assert M.kendall([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(2 / 3)
    assert M.kendall([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)


def test_spearman_average_ranks_with_ties():
    # ranks T: [1, 2.5, 2.5, 4], ranks P: [1, 2, 3.5, 3.5], both means 2.5
    # deviations T: [-1.5, 0, 0, 1.5], P: [-1.5, -0.5, 1, 1]
    # sum of products 2.25 + 0 + 0 + 1.5 = 3.75; sums of squares 4.5 and 4.5
    # rho = 3.75 / sqrt(4.5 * 4.5) = 0.8333...
    assert M.spearman(T, P) == pytest.approx(3.75 / 4.5)


def test_pearson_raw_values():
    # T mean 2, deviations [-1, 0, 0, 1]; P mean 2.25, deviations [-1.25, -0.25, 0.75, 0.75]
    # covariance sum 1.25 + 0 + 0 + 0.75 = 2.0; squares 2.0 and 2.75
    # r = 2 / sqrt(2 * 2.75) = 0.85280...
    assert M.pearson(T, P) == pytest.approx(2 / math.sqrt(5.5))


def test_correlations_of_constant_side_are_nan():
    for f in (M.kendall, M.spearman, M.pearson):
        assert math.isnan(f([1, 2, 3], [5, 5, 5]))
        assert math.isnan(f([4, 4, 4], [1, 2, 3]))
        assert math.isnan(f([1], [1]))


def test_mape_percent_skips_zero_truth():
    # |110-100|/100 = 0.10, |150-200|/200 = 0.25, |400-400|/400 = 0; the true-0 row is left out
    # mean = 0.35 / 3 = 0.11667 -> 11.667 %
    assert M.mape([100, 200, 400, 0], [110, 150, 400, 9]) == pytest.approx(35 / 3)


def test_grouped_kendall_skips_single_valued_groups():
    t = [1, 2, 3, 5, 5, 1, 2, 4, 8]
    p = [1, 3, 2, 0, 9, 7, 7, 2, 1]
    g = ["a", "a", "a", "b", "b", "c", "c", "d", "d"]
    # a: T=[1,2,3] P=[1,3,2]: pairs (0,1) C, (0,2) C, (1,2) D -> (2-1)/3 = 1/3
    # b: T=[5,5]: one distinct value -> skipped
    # c: T=[1,2] P=[7,7]: predictions constant -> ranks nothing -> 0
    # d: T=[4,8] P=[2,1]: discordant -> -1
    # mean over a, c, d = (1/3 + 0 - 1) / 3 = -2/9
    assert M.grouped_kendall(t, p, g) == pytest.approx(-2 / 9)
    # one group only = plain Kendall
    assert M.grouped_kendall(T, P, None) == pytest.approx(0.8)
    assert math.isnan(M.grouped_kendall([5, 5], [1, 2], ["x", "x"]))


def test_top_k_regret_expected_over_prediction_ties():
    t = [10, 40, 30, 20, 5]
    p = [5, 3, 3, 3, 1]
    # k=1: the top prediction is row 0 (t=10); best is 40 -> 1 - 10/40 = 0.75
    assert M.top_k_regret(t, p, 1) == pytest.approx(0.75)
    # k=2: row 0 is sure, one of rows 1,2,3 (t=40,30,20) is drawn at random:
    #   E[max(10, draw)] = (40+30+20)/3 = 30 -> 1 - 30/40 = 0.25
    assert M.top_k_regret(t, p, 2) == pytest.approx(0.25)
    # k=3: two of {40,30,20} drawn: {20,30}->30, {20,40}->40, {30,40}->40, mean 110/3
    #   -> 1 - (110/3)/40 = 1/12
    assert M.top_k_regret(t, p, 3) == pytest.approx(1 / 12)
    # k larger than the rows: everything is picked -> 0
    assert M.top_k_regret(t, p, 10) == pytest.approx(0.0)
    # a constant predictor scores random picking: E = (1+2+4)/3 = 7/3 -> 1 - 7/12 = 5/12
    assert M.top_k_regret([1, 2, 4], [0, 0, 0], 1) == pytest.approx(5 / 12)


def test_precision_at_k_with_ties_on_both_sides():
    t = [10, 40, 30, 20, 5]
    p = [5, 3, 3, 3, 1]
    # k=2: measured top 2 = rows {1, 2}; predicted: row 0 sure (a miss) and one draw from
    # rows {1,2,3}, of which 2 of 3 are hits -> expected hits 2/3 -> precision (2/3)/2 = 1/3
    assert M.precision_at_k(t, p, 2) == pytest.approx(1 / 3)
    # k=1: row 0 is not the best -> 0
    assert M.precision_at_k(t, p, 1) == pytest.approx(0.0)
    # ties in the measurements: both 5s are "top 1"; predicting either is a hit
    assert M.precision_at_k([5, 5, 1], [3, 2, 1], 1) == pytest.approx(1.0)
    assert M.precision_at_k([5, 5, 1], [1, 2, 3], 1) == pytest.approx(0.0)
    assert M.precision_at_k([5, 5, 1], [2, 3, 1], 1) == pytest.approx(1.0)


def test_roc_auc_ties_count_half():
    failed = [1, 0, 1, 0]
    p_fail = [0.9, 0.5, 0.5, 0.1]
    # (failed, ok) pairs: (0.9,0.5)=1, (0.9,0.1)=1, (0.5,0.5)=1/2, (0.5,0.1)=1 -> 3.5/4
    assert M.roc_auc(failed, p_fail) == pytest.approx(0.875)
    assert M.roc_auc(failed, p_fail) == pytest.approx(roc_auc_score(failed, p_fail))
    assert math.isnan(M.roc_auc([0, 0], [0.1, 0.2]))


def test_score_returns_every_metric():
    rng = np.random.default_rng(0)
    t = rng.lognormal(size=40)
    out = M.score(t, t * 1.1, groups=rng.integers(0, 3, 40))
    assert list(out) == list(M.THROUGHPUT_METRICS)
    assert out["kendall"] == pytest.approx(1.0)
    assert out["grouped_kendall"] == pytest.approx(1.0)
    assert out["top1_regret"] == 0.0 and out["precision_at_10"] == 1.0
    assert out["mape"] == pytest.approx(10.0)
    with pytest.raises(ValueError, match="drop failed jobs"):
        M.score([1.0, float("nan")], [1.0, 2.0])


def test_absolute_errors_by_hand():
    t = [100, 200, 400, 0]
    p = [110, 150, 800, 9]
    # the true-0 row is left out; |errors| / true = 0.10, 0.25, 1.00
    assert M.mape(t, p) == pytest.approx(100 * (0.10 + 0.25 + 1.00) / 3)
    assert M.mdape(t, p) == pytest.approx(25.0)  # the median of 10, 25, 100
    assert M.ratio_median(t, p) == pytest.approx(1.1)  # the median of 1.1, 0.75, 2.0
    assert M.ratio_median([100, 100], [200, 200]) == pytest.approx(2.0)  # off by 2x
    assert math.isnan(M.mdape([0, 0], [1, 2]))


def test_score_leaves_absolute_errors_of_scores_out():
    t = np.array([1.0, 2.0, 3.0, 4.0])
    out = M.score(t, t * 3, absolute=False)
    assert out["kendall"] == pytest.approx(1.0)
    assert all(math.isnan(out[c]) for c in M.ABSOLUTE_METRICS)
    priced = M.score(t, t * 3)
    assert priced["mape"] == pytest.approx(200.0) and priced["mdape"] == pytest.approx(200.0)
    assert priced["ratio_median"] == pytest.approx(3.0)


def test_interval_coverage_and_width():
    t = [10, 20, 30, 40]
    low = [5, 25, 29, 40]  # 20 is below its interval; 40 sits on the edge (inside)
    high = [20, 50, 31, 80]
    assert M.coverage(t, low, high) == pytest.approx(0.75)
    # widths high/low: 4, 2, 31/29, 2 -> median of (1.069, 2, 2, 4) = 2
    assert M.interval_width(low, high) == pytest.approx(2.0)
    assert M.interval_scores(t, low, high) == {"coverage": pytest.approx(0.75), "interval_width": pytest.approx(2.0)}
    with pytest.raises(ValueError, match="must match"):
        M.coverage(t, low[:2], high)
