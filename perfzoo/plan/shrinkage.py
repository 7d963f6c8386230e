"""Gains net of the winner's curse: what a layout chosen as the best of many is expected to run at.

A plan ranks thousands of layouts by a predictor that errs from layout to layout; the one predicted
fastest is, on average, also the one whose error is most in its favour, so its predicted advantage
over the others overstates the true one. Measured on the plan benchmark's groups (one model's
measured layouts on one cluster, each predicted by the member fitted without the group: ``python
-m perfzoo.plan benchmark`` prints both figures), in log throughput centred within each group,
each group weighing alike:

* :data:`SHRINK`: the slope of the measured advantages on the predicted ones, the share of a
  predicted advantage that is real (the true layout-to-layout variance over that plus the
  predictor's error: 0.151 / (0.151 + 0.026) = 0.86 by the variances, 0.887 by the slope);
* :data:`RESIDUAL_SD`: what is left of one layout's measured advantage after that, the error of
  an expected throughput relative to its group.

:func:`expected` shrinks each layout's predicted advantage over the mean of its contenders (the
layouts it was chosen among: the plan's tie set) by :data:`SHRINK`; :func:`gain` is the expected
gain of one layout over another with its 80% interval (a gain whose interval holds 0 is a tie).

>>> round(float(expected(np.array([1100.0]), np.array([1000.0, 1100.0]))[0]), 1)
1094.1
>>> central, low, high = gain(1100.0, 1000.0)
>>> f"{central:+.1%} ({low:+.1%} .. {high:+.1%})"
'+8.8% (-17.8% .. +44.1%)'
"""

from __future__ import annotations

import numpy as np
import pandas as pd

SHRINK = 0.887  # measured / predicted advantage within a group, 212 groups (python -m perfzoo.plan benchmark)
RESIDUAL_SD = 0.155  # log sd of one layout's advantage about SHRINK x its predicted one, the same groups
Z80 = 1.2816  # the standard normal's 90% quantile: an 80% interval's half-width in sds


def expected(predicted: np.ndarray, contenders: np.ndarray) -> np.ndarray:
    """Each of ``predicted`` (tokens/s) with its advantage over the geometric mean of ``contenders``
    shrunk by :data:`SHRINK`."""
    centre = float(np.mean(np.log(np.asarray(contenders, dtype=float))))
    return np.exp(centre + SHRINK * (np.log(np.asarray(predicted, dtype=float)) - centre))


def gain(pick: float, base: float) -> tuple[float, float, float]:
    """The expected gain of a layout predicted ``pick`` over one predicted ``base`` (tokens/s), and its
    80% interval: the predicted log ratio shrunk by :data:`SHRINK`, give or take the error of a
    difference of two layouts' advantages (``sqrt(2) x`` :data:`RESIDUAL_SD`)."""
    centre = SHRINK * float(np.log(pick / base))
    half = Z80 * np.sqrt(2.0) * RESIDUAL_SD
    return float(np.expm1(centre)), float(np.expm1(centre - half)), float(np.expm1(centre + half))


def centred(measured: np.ndarray, predicted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One group's measured and predicted log throughputs, each about its group's mean (NaN: left out)."""
    m, p = np.log(np.asarray(measured, dtype=float)), np.log(np.asarray(predicted, dtype=float))
    return m - np.nanmean(m), p - np.nanmean(p)


def moments(m: np.ndarray, p: np.ndarray) -> dict[str, float]:
    """What :func:`fit` needs of one group's centred advantages (:func:`centred`): the means of
    ``m p``, ``p p`` and ``m m``."""
    return {"mp": float(np.nanmean(m * p)), "pp": float(np.nanmean(p * p)), "mm": float(np.nanmean(m * m))}


def fit(groups: pd.DataFrame) -> tuple[float, float]:
    """``(shrink, residual_sd)`` from the groups' :func:`moments` (one row each, columns ``mp pp mm``),
    each group weighing alike: the slope of measured on predicted advantages, and the spread about it.

    >>> rows = [moments(*centred(np.array(m), np.array(p))) for m, p in
    ...         (([100.0, 150.0], [100.0, 225.0]), ([80.0, 120.0], [80.0, 180.0]))]
    >>> fit(pd.DataFrame(rows))
    (0.5, 0.0)
    """
    shrink = float(groups["mp"].sum() / groups["pp"].sum())
    residual = float(np.sqrt(max((groups["mm"] - 2 * shrink * groups["mp"] + shrink ** 2 * groups["pp"]).mean(), 0.0)))
    return round(shrink, 6), round(residual, 6)


__all__ = ["RESIDUAL_SD", "SHRINK", "centred", "expected", "fit", "gain", "moments"]
