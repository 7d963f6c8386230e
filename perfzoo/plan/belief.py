"""What a plan believes of its layouts' throughput after each run: a Gaussian process over their log.

Each layout's log tokens/s is normal about the predictor's (its anchored prediction once runs
anchor it), and two layouts of one model share the anchoring's covariance of offsets
(:func:`perfzoo.zoo.offsets.covariance`: ``rho(d)`` of the offset's variance, ``rho`` the
layout-similarity kernel fitted on the shared tables, :mod:`perfzoo.zoo.similarity`). So one run
moves its near neighbours more than distant ones, narrows their interval, and leaves layouts far away nearly as they were:
:class:`Belief` holds the posterior mean and covariance that :mod:`perfzoo.plan.propose` chooses the
next runs from and that the stopping rule reads (:meth:`Belief.upper`).

>>> import pandas as pd
>>> X = pd.DataFrame({"config.tp": [1, 2, 8], "config.n_gpus": 8, "hardware.accelerator": "H100"})
>>> b = Belief.of(np.log([100.0, 100.0, 100.0]), X, runs=[0], measured=[150.0], variance=0.04)
>>> np.exp(b.mean).round(1).tolist()          # the run's neighbour moves more than a layout 3 doublings away
[143.9, 136.4, 125.2]
>>> bool(b.sd[0] < b.sd[1] < b.sd[2] < 0.2)  # and narrows its interval more
True
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Optional, Sequence

import numpy as np
import pandas as pd

from perfzoo.plan.shrinkage import RESIDUAL_SD
from perfzoo.zoo.offsets import Keys, Spread, covariance, keys, posterior
from perfzoo.zoo.similarity import FITTED, Similarity

Z80 = 1.2816  # an 80% interval's upper end in standard deviations (Gaussian)


def spread_of(predictor, variance: Optional[float] = None, kind: str = "dense") -> Spread:
    """The spread of offsets the anchoring uses for ``predictor`` (an
    :class:`~perfzoo.zoo.interval.Interval`'s ``spread_``, an anchored or calibrated one's, updated
    by the runs), held to ``kind``'s layout-to-layout error (:func:`for_kind`); ``variance`` (log^2)
    alone where given, or ``kind``'s residual (:data:`perfzoo.plan.shrinkage.RESIDUAL_SD`) where the
    predictor has none: one model's layouts, no cluster or group level.

    >>> spread_of(None).within == RESIDUAL_SD["dense"] ** 2, spread_of(None, kind="moe").within == RESIDUAL_SD["moe"] ** 2
    (True, True)
    """
    for holder in (predictor, getattr(predictor, "anchored", None)):
        found = getattr(holder, "spread", None) or getattr(holder, "spread_", None)
        if isinstance(found, Spread) and variance is None:
            return for_kind(found, kind)
    v = RESIDUAL_SD[kind] ** 2 if variance is None else float(variance)
    empty = np.zeros(0)
    return Spread(0.0, 0.0, v, empty, empty, empty, empty, similarity=FITTED)


def for_kind(spread: Spread, kind: str) -> Spread:
    """``spread`` with its scatter between one model's layouts (``within``) no less than ``kind``'s
    residual: a predictor's spread is fitted on mostly dense rows, and its expert-parallel layouts err
    about twice as much (:mod:`perfzoo.plan.shrinkage`), so an MoE plan's untried layouts keep the wider
    prior and its stopping rule waits for the runs that settle them."""
    return replace(spread, within=max(spread.within, RESIDUAL_SD[kind] ** 2))


@dataclass
class Belief:
    """The posterior of some layouts' log tokens/s: ``mean``, ``cov``; ``measured`` marks the
    layouts that ran (their measured log in ``value``, NaN elsewhere)."""

    mean: np.ndarray
    cov: np.ndarray
    measured: np.ndarray
    value: np.ndarray

    @property
    def sd(self) -> np.ndarray:
        return np.sqrt(np.maximum(np.diag(self.cov), 0.0))

    def upper(self, z: float = Z80) -> np.ndarray:
        """Each layout's upper bound (log), ``z`` standard deviations above its mean."""
        return self.mean + z * self.sd

    def best_measured(self) -> float:
        """The best measured log throughput (-inf before any run)."""
        return float(np.nanmax(self.value)) if self.measured.any() else -np.inf

    def believed(self, i: int) -> "Belief":
        """The covariance as it would be once layout ``i`` ran and measured its mean (a batch's
        next proposal chosen before the first has run: the kriging believer)."""
        c = self.cov[:, i]
        cov = self.cov - np.outer(c, c) / max(float(self.cov[i, i]), 1e-12)
        return replace(self, cov=cov)

    @classmethod
    def of(cls, mean: np.ndarray, X: pd.DataFrame, runs: Sequence[int] = (), measured: Sequence[float] = (),
           variance: Optional[float] = None, similarity: Similarity = FITTED) -> "Belief":
        """One model's layouts ``X`` (config columns), prior ``mean`` (log, the predictor's), the
        layouts at positions ``runs`` measured at ``measured`` (tokens/s): conditioned on them with
        the offsets' variance ``variance`` (default: plan's layout-to-layout error of a dense model)."""
        spread = replace(spread_of(None, variance), similarity=similarity)
        q = keys(X)
        runs = np.asarray(list(runs), dtype=int)
        offsets = np.log(np.asarray(measured, dtype=float)) - np.asarray(mean, dtype=float)[runs]
        value = np.full(len(X), np.nan)
        value[runs] = np.log(np.asarray(measured, dtype=float))
        return cls.given(np.asarray(mean, dtype=float), q, q.take(runs), offsets, spread, value)

    @classmethod
    def given(cls, prior: np.ndarray, queries: Keys, runs: Keys, offsets: np.ndarray, spread: Spread,
              value: np.ndarray, shifted: bool = False) -> "Belief":
        """The posterior of ``queries`` (prior mean ``prior``, log) given the ``runs``' log
        ``offsets`` under ``spread`` (:func:`perfzoo.zoo.offsets.posterior`, whose variance is this
        covariance's diagonal); ``shifted``: ``prior`` already holds the runs' shift (an anchored
        prediction). ``value``: each query's measured log (NaN: not run)."""
        C = covariance(queries, queries, spread)
        np.fill_diagonal(C, spread.prior)
        shift = np.zeros(len(queries))
        if len(runs):
            K = covariance(runs, runs, spread)
            np.fill_diagonal(K, spread.prior)
            k = covariance(queries, runs, spread)
            C = C - k @ np.linalg.solve(K, k.T)
            if not shifted:
                shift = posterior(runs, offsets, queries, spread)[0]
        measured = np.isfinite(value)
        return cls(prior + shift, C, measured, value)


__all__ = ["Belief", "Z80", "for_kind", "spread_of"]
