"""Gains net of the winner's curse: what a layout chosen as the best of many is expected to run at.

A plan ranks thousands of layouts by a predictor that errs from layout to layout; the one predicted
fastest is, on average, also the one whose error is most in its favour, so its predicted advantage
over the others overstates the true one, and the more so where it errs more: about twice as much on
expert-parallel layouts as on dense ones, so both figures are held per :func:`kind` of model (``dense``,
``moe``: ``n_experts > 1``). Measured on the plan benchmark's groups (one model's measured layouts on one
cluster, each predicted by the member fitted without the group: ``python -m perfzoo.plan benchmark``
prints both figures per kind), in log throughput centred within each group, each group weighing alike:

* :data:`SHRINK`: the slope of the measured advantages on the predicted ones, the share of a
  predicted advantage that is real (the true layout-to-layout variance over that plus the
  predictor's error: dense 0.151 / (0.151 + 0.026) = 0.86 by the variances, 0.889 by the slope);
* :data:`RESIDUAL_SD`: what is left of one layout's measured advantage after that, the error of
  an expected throughput relative to its group.

The MoE groups are too few for a slope (14 groups, 30 layouts, most of them two layouts of one setting; one group
weighs 38% of it: the benchmark prints their 0.759 and 0.112 beside the constants), so the MoE figures come from
the variances: the dense groups' true layout-to-layout variance, 0.151, over that plus the predictor's error
variance on expert-parallel layouts, the log-ratio sd of the 135 ``published-llm`` rows with ``ep > 1`` each
predicted by ``analytic`` fitted without their source (``docs/studies/moe-1207/moe.py``), 0.273:
0.151 / (0.151 + 0.273^2) = 0.669; the residual, ``sqrt(0.669 x 0.273^2)`` = 0.224 (dense by the same
rule: ``sqrt(0.86 x 0.026)`` = 0.15).

:func:`expected` shrinks each layout's predicted advantage over the mean of its contenders (the
layouts it was chosen among: the plan's tie set) by its kind's :data:`SHRINK`; :func:`gain` is the expected
gain of one layout over another with its 80% interval (a gain whose interval holds 0 is a tie).

>>> round(float(expected(np.array([1100.0]), np.array([1000.0, 1100.0]), "dense")[0]), 1)
1094.2
>>> for k in KINDS:
...     central, low, high = gain(1100.0, 1000.0, k)
...     print(k, f"{central:+.1%} ({low:+.1%} .. {high:+.1%})")
dense +8.8% (-18.3% .. +44.9%)
moe +6.6% (-29.0% .. +60.0%)
"""

from __future__ import annotations

import numpy as np
import pandas as pd

KINDS = ("dense", "moe")
# measured / predicted advantage within a group (python -m perfzoo.plan benchmark --predictor analytic prints both)
# dense: 198 groups; moe: by the variances (the module docstring)
SHRINK = {"dense": 0.889, "moe": 0.669}
# log sd of one layout's advantage about SHRINK x its predicted one, the same groups; moe by the variances
RESIDUAL_SD = {"dense": 0.158, "moe": 0.224}
Z80 = 1.2816  # the standard normal's 90% quantile: an 80% interval's half-width in sds


def kind(model: dict) -> str:
    """A model's kind for the winner's curse: ``moe`` with more than one expert, else ``dense``.

    >>> kind({"n_experts": 128}), kind({"n_experts": 1}), kind({})
    ('moe', 'dense', 'dense')
    """
    return "moe" if (model.get("n_experts") or 1) > 1 else "dense"


def kind_of_rows(rows: pd.DataFrame) -> str:
    """The :func:`kind` of the model of some measured rows (their ``config.n_experts``).

    >>> kind_of_rows(pd.DataFrame({"config.n_experts": [64, 64]})), kind_of_rows(pd.DataFrame({"config.tp": [1]}))
    ('moe', 'dense')
    """
    experts = pd.to_numeric(rows.get("config.n_experts", pd.Series(dtype=float)), errors="coerce").max()
    return kind({"n_experts": None if pd.isna(experts) else float(experts)})


def expected(predicted: np.ndarray, contenders: np.ndarray, kind: str) -> np.ndarray:
    """Each of ``predicted`` (tokens/s) with its advantage over the geometric mean of ``contenders``
    shrunk by ``kind``'s :data:`SHRINK`."""
    centre = float(np.mean(np.log(np.asarray(contenders, dtype=float))))
    return np.exp(centre + SHRINK[kind] * (np.log(np.asarray(predicted, dtype=float)) - centre))


def gain(pick: float, base: float, kind: str) -> tuple[float, float, float]:
    """The expected gain of a layout predicted ``pick`` over one predicted ``base`` (tokens/s) of a model
    of ``kind``, and its 80% interval: the predicted log ratio shrunk by its :data:`SHRINK`, give or take
    the error of a difference of two layouts' advantages (``sqrt(2) x`` its :data:`RESIDUAL_SD`)."""
    centre = SHRINK[kind] * float(np.log(pick / base))
    half = Z80 * np.sqrt(2.0) * RESIDUAL_SD[kind]
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


__all__ = ["KINDS", "RESIDUAL_SD", "SHRINK", "centred", "expected", "fit", "gain", "kind", "kind_of_rows", "moments"]
