"""The floors every other member must beat: ``constant``, ``analytic`` and ``roofline``."""

from __future__ import annotations

from typing import Any, Optional

import numpy as np
import pandas as pd

from perfzoo.console import InputError
from perfzoo.zoo.base import Predictor
from perfzoo.zoo.targets import TargetTransform, analytic_log_throughput


class ConstantPredictor(Predictor):
    """Predicts one number for every config: the training median (or mean) throughput.

    Its Kendall tau is undefined (every prediction ties): the benchmark's zero line.

    >>> import pandas as pd
    >>> ConstantPredictor().fit(pd.DataFrame({"config.tp": [1, 2, 4]}), [1.0, 2.0, 9.0]).predict(pd.DataFrame({"config.tp": [8]}))
    array([2.])
    """

    name = "constant"
    floor = True

    def __init__(self, statistic: str = "median"):
        self.statistic = statistic

    def _validate_params(self) -> None:
        if self.statistic not in ("median", "mean"):
            raise InputError(f"constant: statistic must be 'median' or 'mean', got {self.statistic!r}")

    def _fit(self, X: pd.DataFrame, y: np.ndarray, groups: Any) -> None:
        self.value_ = float(np.median(y) if self.statistic == "median" else np.mean(y))

    def _predict(self, X: pd.DataFrame) -> np.ndarray:
        return np.full(len(X), self.value_)


class AnalyticPredictor(Predictor):
    """The analytic throughput estimate alone (:mod:`perfzoo.analytic`), scaled by one
    fitted efficiency factor (the median measured/analytic ratio), so its numbers are in
    the target's range; its ranking is the analytic model's.

    Parameters
    ----------
    per_device : bool or None
        Compare with analytic throughput per device (True) or global (False); None picks
        the unit that matches the training target best (see
        :class:`perfzoo.zoo.targets.TargetTransform`).

    Notes
    -----
    Configs whose estimate is unknown (e.g. an accelerator missing from
    :data:`perfzoo.analytic.HARDWARE`) get the training median.
    """

    name = "analytic"
    floor = True

    def __init__(self, per_device: Optional[bool] = None):
        self.per_device = per_device

    def _fit(self, X: pd.DataFrame, y: np.ndarray, groups: Any) -> None:
        self.target_ = TargetTransform("log_ratio", per_device=self.per_device).fit(y, X)
        r = np.log(np.maximum(y, 1e-12)) - analytic_log_throughput(X, self.target_.per_device_)
        known = np.isfinite(r)
        self.log_efficiency_ = float(np.median(r[known])) if known.any() else 0.0
        self.fallback_ = float(np.median(y))

    def _predict(self, X: pd.DataFrame) -> np.ndarray:
        base = analytic_log_throughput(X, self.target_.per_device_)
        with np.errstate(over="ignore"):
            return np.where(np.isfinite(base), np.exp(base + self.log_efficiency_), self.fallback_)


class RooflinePredictor(Predictor):
    """The analytic step time with one efficiency factor per term fitted to the training jobs
    (:mod:`perfzoo.analytic.calibration`: compute per precision, critical-path, pipeline and
    exposed data-parallel communication): a calibrated roofline. Where ``analytic`` scales
    every config by one factor, this one learns, e.g., that fp8 reaches a smaller fraction of
    its peak than bf16, or that collectives run at a third of the link's figure.

    Parameters
    ----------
    per_device : bool or None
        Whether the target is throughput per device (True) or global (False); None decides
        as :class:`perfzoo.zoo.targets.TargetTransform` does.

    Notes
    -----
    Configs whose estimate is unknown get the training median (of the log).
    """

    name = "roofline"
    floor = True

    def __init__(self, per_device: Optional[bool] = None):
        self.per_device = per_device

    def _fit(self, X: pd.DataFrame, y: np.ndarray, groups: Any) -> None:
        self.target_ = TargetTransform("log_roofline_ratio", per_device=self.per_device).fit(y, X)

    def _predict(self, X: pd.DataFrame) -> np.ndarray:
        return self.target_.inverse(np.zeros(len(X)), X)  # the calibrated roofline itself
