"""Prediction intervals as a wrapper: any throughput member with its 80% interval and its spread of offsets.

:class:`Interval` wraps a zoo member as scikit-learn's meta-estimators wrap an estimator:
``Interval(member, folds=5, seed=0).fit(X, y, groups=sources)`` fits a clone of the member on every
row (``member_``) and calibrates, on the same rows, the cross-conformal interval
(:mod:`perfzoo.zoo.conformal`: out-of-fold log residuals of ``folds`` clones, rows of one source in
one fold, each source weighed alike, MoE and dense rows calibrated apart) and the spread of offsets anchoring reads
(:meth:`perfzoo.zoo.offsets.Spread.estimate`, on the same residuals by model, cluster and software
release). ``predict`` is the member's; ``predict_interval(X, alpha)`` the interval at level
``1 - alpha``; ``relative()`` the error between two layouts of one model. The interval at the
default level (:data:`~perfzoo.zoo.conformal.ALPHA`) is computed when fitted, so loading a saved
Interval and predicting with it imports no scipy; another level computes its quantiles when asked.

Anchoring on a user's runs (:class:`perfzoo.zoo.anchor.Anchored`) and ``--calibrate``
(:class:`perfzoo.zoo.calibrate.Calibrated`) wrap a fitted Interval and offer the same surface
(``predict``, ``predict_interval``, ``relative``, ``name``, ``input_columns_``: :class:`LayoutUncertain`),
so a caller reads the three alike.

>>> import numpy as np, pandas as pd
>>> from perfzoo.zoo.classic import RidgePredictor
>>> X = pd.DataFrame({"config.n_gpus": [1, 2, 4, 8, 16, 32] * 4})
>>> y = 100.0 * X["config.n_gpus"].to_numpy() * np.repeat([0.9, 1.0, 1.05, 1.1], 6)
>>> model = Interval(RidgePredictor()).fit(X, y)
>>> low, high = model.predict_interval(X.head(1))
>>> model.name, bool(low[0] < model.predict(X.head(1))[0] < high[0]), type(model.member_).__name__
('ridge', True, 'RidgePredictor')
"""

from __future__ import annotations

import math
import time
from typing import Any, Optional, Protocol, runtime_checkable

import numpy as np
import pandas as pd

from perfzoo.console import InputError
from perfzoo.zoo import conformal
from perfzoo.zoo.base import Predictor, json_safe
from perfzoo.zoo.conformal import ALPHA, FOLDS
from perfzoo.zoo.estimator import clone
from perfzoo.zoo.features import check_frame
from perfzoo.zoo.offsets import Spread, keys


@runtime_checkable
class Uncertain(Protocol):
    """A predictor with an interval: ``predict`` and ``predict_interval`` (an :class:`Interval`, the
    anchored and calibrated predictors that wrap one, or one of yours). ``isinstance(model, Uncertain)``
    tells it from a bare member or a formula.

    >>> from perfzoo.zoo.baselines import ConstantPredictor
    >>> isinstance(Interval(ConstantPredictor()), Uncertain), isinstance(ConstantPredictor(), Uncertain)
    (True, False)
    """

    def predict(self, X: Any) -> np.ndarray: ...

    def predict_interval(self, X: Any, alpha: float = ALPHA) -> tuple[np.ndarray, np.ndarray]: ...


@runtime_checkable
class LayoutUncertain(Uncertain, Protocol):
    """An :class:`Uncertain` predictor that also knows its error between two layouts of one model,
    ``relative()`` (an :class:`Interval`, from its spread of offsets, and what wraps one:
    :class:`~perfzoo.zoo.anchor.Anchored`, :class:`~perfzoo.zoo.calibrate.Calibrated`)."""

    def relative(self, alpha: float = ALPHA) -> tuple[float, float]: ...


def _tag(attr: str) -> property:
    """The wrapped member's class attribute ``attr`` (:mod:`perfzoo.zoo.base`'s tags)."""
    return property(lambda self: getattr(self.member, attr), doc=f"the member's ``{attr}``")


class Interval(Predictor):
    """A throughput member and its prediction interval (see the module docstring).

    Parameters
    ----------
    member : Predictor
        An unfitted zoo member whose ``output`` is ``throughput``; ``fit`` fits a clone (``member_``).
    folds : int
        Cross-fitting folds (fewer where the data holds fewer sources).
    seed : int
        Shuffles the folds, and the anchoring replayed on the training residuals.

    Attributes
    ----------
    member_, residuals_, weights_, units_, spread_
        The fitted member; each training row's out-of-fold log residual, its weight in the quantiles
        and what it was held out with; the spread of offsets (:class:`~perfzoo.zoo.offsets.Spread`).
    input_columns_, dataset_, n_train_, fit_time_s_
        The member's (``fit_time_s_``: its own fit; ``interval_time_s_`` the interval's cross-fits).
    """

    name = _tag("name")  # type: ignore[assignment]
    output = _tag("output")  # type: ignore[assignment]
    encoding = _tag("encoding")  # type: ignore[assignment]
    floor = _tag("floor")  # type: ignore[assignment]
    has_std = _tag("has_std")  # type: ignore[assignment]
    fit_cost = _tag("fit_cost")  # type: ignore[assignment]

    def __init__(self, member: Predictor, folds: int = FOLDS, seed: int = 0):
        self.member = member
        self.folds = folds
        self.seed = seed

    def _validate_params(self) -> None:
        if not isinstance(self.member, Predictor):
            raise TypeError(f"Interval wraps a zoo member (a perfzoo.zoo.Predictor), not a {type(self.member).__name__}")
        if self.member.output != "throughput":
            raise TypeError(f"{self.name}: its outputs are {self.member.output}s, not throughput; it has no interval")
        if isinstance(self.folds, bool) or not isinstance(self.folds, (int, np.integer)) or self.folds < 2:
            raise InputError(f"Interval: folds must be an integer of at least 2, got {self.folds!r}")

    def fit(self, X: pd.DataFrame, y: Any, *, dataset: Optional[str] = None, groups: Any = None,
            releases: Any = None) -> "Interval":
        """Fit the member on ``X, y`` and calibrate its interval and spread of offsets on the same rows;
        returns ``self``. ``groups``: each row's source (rows of one source are held out together, so the
        interval is sized for a source never seen; :func:`perfzoo.zoo.calibrate.source_labels`);
        ``releases``: each row's software release (:func:`perfzoo.zoo.calibrate.release_labels`), which
        cuts the groups of the spread further; ``dataset`` names the data in the saved metadata."""
        self._validate_params()
        X = check_frame(X)
        member = clone(self.member).fit(X, y, dataset=dataset)  # y as given: a Series names its target
        y = self._check_y(y, len(X))
        start = time.perf_counter()
        residuals, weights, units = conformal.out_of_fold_residuals(member, X, y, groups=groups, folds=self.folds,
                                                                    seed=self.seed)
        kept = np.isfinite(y) & (y > 0)  # the rows with residuals
        self.spread_ = Spread.estimate(residuals, keys(X.loc[kept]), None if groups is None else np.asarray(groups)[kept],
                                       seed=self.seed, releases=None if releases is None else np.asarray(releases)[kept])
        self.member_, self.residuals_, self.weights_, self.units_ = member, residuals, weights, units
        self.kinds_ = conformal.kinds(X.loc[kept])
        self.quantiles_ = {ALPHA: conformal.quantiles(residuals, ALPHA, weights, units)}  # loads without scipy
        self.kind_factors_ = {ALPHA: conformal.kind_quantiles(residuals, self.kinds_, ALPHA, weights, units)}
        self.input_columns_, self.dataset_ = member.input_columns_, member.dataset_
        self.n_train_, self.target_name_ = member.n_train_, member.target_name_
        self.fit_time_s_, self.interval_time_s_ = member.fit_time_s_, time.perf_counter() - start
        return self

    def predict(self, X: Any) -> np.ndarray:
        """The member's predictions (a DataFrame of configs or :class:`~perfzoo.records.columns.Columns`)."""
        self._check_fitted()
        return self.member_.predict(X)

    @property
    def predict_std(self):
        """The member's ``predict_std``; an ``AttributeError`` where it has none (``has_std`` False)."""
        if not self.has_std:
            raise AttributeError(f"{self.name} gives no standard deviation (has_std is False)")
        self._check_fitted()
        return self.member_.predict_std

    def predict_interval(self, X: Any, alpha: float = ALPHA) -> tuple[np.ndarray, np.ndarray]:
        """``(low, high)`` per row of ``X``: the interval that holds the measured throughput with
        probability ``1 - alpha`` (:mod:`perfzoo.zoo.conformal`)."""
        self._check_fitted()
        factors = self._kind_factors(alpha)
        kind = pd.Series(conformal.kinds(X), dtype=object)
        low, high = ((kind.map({k: f[end] for k, f in factors.items()}).fillna(factors["*"][end]).to_numpy(dtype=float))
                     for end in (0, 1))
        pred = np.asarray(self.member_.predict(X), dtype=float)
        return conformal.scaled(pred, (low, high))

    def _quantiles(self, alpha: float) -> tuple[float, float]:
        """The pooled interval's log factors at ``alpha`` (every kind of job together): kept when fitted,
        else computed now."""
        for level, factors in self.quantiles_.items():
            if math.isclose(level, alpha, rel_tol=1e-12):
                return factors
        return conformal.quantiles(self.residuals_, alpha, self.weights_, self.units_)

    def _kind_factors(self, alpha: float) -> dict[str, tuple[float, float]]:
        """The log factors at ``alpha`` per kind of job (:func:`perfzoo.zoo.conformal.kind_quantiles`;
        ``"*"`` the pooled ones): kept when fitted, else computed now; an Interval saved before kinds
        were calibrated apart has the pooled ones only."""
        if not hasattr(self, "kinds_"):
            return {"*": self._quantiles(alpha)}
        for level, factors in self.kind_factors_.items():
            if math.isclose(level, alpha, rel_tol=1e-12):
                return factors
        return conformal.kind_quantiles(self.residuals_, self.kinds_, alpha, self.weights_, self.units_)

    def relative(self, alpha: float = ALPHA) -> tuple[float, float]:
        """``(low, high)`` factors of the error between two layouts of one model, one measured
        (:meth:`perfzoo.zoo.offsets.Spread.relative`)."""
        self._check_fitted()
        return self.spread_.relative(alpha)

    def metadata(self) -> dict[str, Any]:
        """The member's metadata, with this class, its parameters, the member's own (``member``) and
        what the interval was calibrated on (``interval``)."""
        self._check_fitted()
        member = self.member_.metadata()
        sources = {u for u in self.units_ if str(u).startswith("group:")}
        return {**member, "class": f"{type(self).__module__}.{type(self).__qualname__}",
                "params": json_safe(self.get_params(deep=False)), "member": {k: member[k] for k in ("class", "params")},
                "interval": {"residuals": len(self.residuals_), "sources": len(sources), "folds": self.folds,
                             "alpha": ALPHA, "log_factors": json_safe(self.quantiles_[ALPHA]),
                             "time_s": round(float(self.interval_time_s_), 6)}}


__all__ = ["Interval", "LayoutUncertain", "Uncertain"]
