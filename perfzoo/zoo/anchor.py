"""Anchored calibration: one measured run of your own model moves every prediction of its group.

The situation (the CubicML premise: profiling jobs are cheap): a predictor fitted on public tables,
and one or a few short runs of the model about to be trained, on the user's cluster and software.
A new software stack is off by a factor (a release, a tuned submission: 1.3-1.5x), and that factor
is shared by the layouts of one model on one cluster: one run measures it.

:class:`Anchored` wraps a fitted :class:`~perfzoo.zoo.interval.Interval` (a member with its interval
and its spread of offsets) and a user's runs. A run's offset is ``log(measured / predicted)``;
offsets are a Gaussian process over configs (:mod:`perfzoo.zoo.offsets`: shared by the layouts of
one model, less by the models of one cluster, less the farther apart two layouts lie). An anchored
prediction is ``predicted x exp(shift)``, the shift the posterior mean of the query's offset given
the runs; its interval is ``shift +- z sqrt(posterior variance)`` (a far run narrows it little),
``z`` the quantiles of the standardised anchored residuals met when the same anchoring is replayed
on the training residuals; a config no run shares a cluster with keeps the predictor's own. Runs are
checked first (:mod:`perfzoo.zoo.plausible`).

>>> import numpy as np, pandas as pd
>>> from perfzoo.zoo.baselines import ConstantPredictor
>>> from perfzoo.zoo.interval import Interval
>>> X = pd.DataFrame({"config.hidden_dim": np.repeat([1024, 2048], 12), "config.n_gpus": [1, 2, 4, 8, 16, 32] * 4,
...                   "hardware.accelerator": ["H100"] * 24})
>>> y = 100.0 * np.tile([0.9, 1.1], 12)
>>> model = Interval(ConstantPredictor()).fit(X, y)
>>> anchored = Anchored(model, X.head(1), [150.0], names=["my run"])
>>> [round(float(v)) for v in anchored.predict(X.iloc[[1, 12]])]   # its model's layout, another model's
[136, 108]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from perfzoo.zoo import plausible, similarity
from perfzoo.zoo.conformal import ALPHA
from perfzoo.zoo.interval import Interval
from perfzoo.zoo.offsets import Keys, keys, posterior, updated


@dataclass(frozen=True)
class Run:
    """One measured run offered as an anchor: its name (file and line, or record id), why it was
    left out (None: it anchors) and whether that is worth a warning (``flagged``: far off its
    prediction, :func:`perfzoo.zoo.plausible.far_off`)."""

    name: str
    measured: float
    predicted: float
    left_out: str | None = None
    flagged: bool = False


class Anchored:
    """A fitted :class:`~perfzoo.zoo.interval.Interval` anchored on measured runs
    (:func:`~perfzoo.zoo.offsets.posterior`, from the spread of offsets it keeps), with its surface:
    ``predict``, ``predict_interval``, ``relative``, ``name``, ``input_columns_``.

    Runs the predictor cannot price (no finite positive prediction), that did not finish with a
    measurement, whose framework cannot run their layout as written (its bundle's rules,
    :func:`perfzoo.frameworks.refusal`) or that lie more than 3x off their prediction are left out and
    named in :attr:`runs`. With ``target`` (the measured column, e.g. ``metrics.throughput_per_device``), a
    run faster than its GPU's peak is refused (:func:`perfzoo.zoo.plausible.refuse_faster_than_peak`:
    a one-line ``DataError``).
    """

    def __init__(self, predictor: Interval, X_runs: pd.DataFrame, y_runs: Any, names: Sequence[str] | None = None,
                 target: str | None = None):
        if not isinstance(predictor, Interval) or not predictor.__sklearn_is_fitted__():
            raise TypeError(f"{getattr(predictor, 'name', type(predictor).__name__)}: anchoring needs a throughput member "
                            "fitted with its interval (perfzoo.zoo.interval.Interval, fitted on its training data)")
        self.predictor, spread = predictor, predictor.spread_
        y = np.asarray(y_runs, dtype=float).reshape(-1)
        names = list(names) if names is not None else [f"run {i + 1}" for i in range(len(y))]
        plausible.refuse_faster_than_peak(X_runs, y, target, names)
        pred = np.asarray(predictor.predict(X_runs), dtype=float) if len(y) else np.zeros(0)
        self.runs = []
        for name, m, p, refused in zip(names, y, pred, plausible.refused_by_framework(X_runs)):
            why = (None if np.isfinite(m) and m > 0 and np.isfinite(p) and p > 0 else
                   "no measured throughput (failed or not finished)" if not (np.isfinite(m) and m > 0) else
                   "the cost model cannot price its config")
            far = (refused or plausible.far_off(m, p)) if why is None else None
            self.runs.append(Run(str(name), float(m), float(p), why or far, far is not None))
        used = np.array([r.left_out is None for r in self.runs], dtype=bool)
        self.keys = keys(X_runs).take(used) if len(y) else Keys(np.zeros(0), np.zeros(0))
        self.offsets = np.log(y[used] / pred[used]) if used.any() else np.zeros(0)
        self.spread = updated(spread, self.keys, self.offsets)
        self.used_names = [r.name for r in self.runs if r.left_out is None]

    @property
    def name(self) -> str:
        return self.predictor.name

    @property
    def input_columns_(self) -> list[str]:
        return list(self.predictor.input_columns_)

    @property
    def left_out(self) -> list[Run]:
        return [r for r in self.runs if r.left_out is not None]

    def relative(self, alpha: float = ALPHA) -> tuple[float, float]:
        """``(low, high)`` factors of the error between two layouts of one model, one measured, by the
        spread as the runs show it (:func:`~perfzoo.zoo.offsets.updated`, :meth:`~perfzoo.zoo.offsets.Spread.relative`)."""
        return self.spread.relative(alpha)

    def _posterior(self, X: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray, Keys]:
        q = keys(X)
        return (*posterior(self.keys, self.offsets, q, self.spread), q)

    def levels(self, X: pd.DataFrame) -> np.ndarray:
        """Per row of ``X``: ``group`` where a run of its group anchors it, ``cluster`` where only runs
        of its GPU and framework do, ``none`` where no run does."""
        return self._posterior(X)[2]

    def predict(self, X: pd.DataFrame) -> np.ndarray:
        shift, _, _, _ = self._posterior(X)
        return np.asarray(self.predictor.predict(X), dtype=float) * np.exp(shift)

    def predict_interval(self, X: pd.DataFrame, alpha: float = ALPHA) -> tuple[np.ndarray, np.ndarray]:
        """The anchored interval where a run anchors the row, else the predictor's own."""
        shift, var, level, _ = self._posterior(X)
        base = np.asarray(self.predictor.predict(X), dtype=float)
        low, high = self.predictor.predict_interval(X, alpha=alpha)
        sd = np.sqrt(var)
        for name in ("group", "cluster"):
            z_lo, z_hi = self.spread.quantiles(alpha, name)
            at = level == name
            with np.errstate(over="ignore"):
                low = np.where(at, base * np.exp(shift + z_lo * sd), low)
                high = np.where(at, base * np.exp(shift + z_hi * sd), high)
        return low, high

    def idle(self, X: pd.DataFrame) -> list[str]:
        """The runs that anchor no row of ``X``: none of its rows shares their GPU and framework."""
        clusters = set(keys(X).cluster.tolist())
        return [n for n, c in zip(self.used_names, self.keys.cluster) if c not in clusters]

    def explain(self, X: pd.DataFrame) -> list[str]:
        """Per row of ``X``: which runs anchor it, how far the nearest lies in layout
        (:func:`perfzoo.zoo.similarity.distance`) and by how much they moved it ('' where none does)."""
        shift, _, level, q = self._posterior(X)
        apart = similarity.distance(q.coordinates(), self.keys.coordinates())
        out = []
        for s, lv, g, c, d in zip(shift, level, q.group, q.cluster, apart):
            if lv == "none":
                out.append("")
                continue
            mine = self.keys.group == g if lv == "group" else self.keys.cluster == c
            names = [n for n, on in zip(self.used_names, mine) if on]
            shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
            where = "of this model, GPU, precision and framework" if lv == "group" else \
                "on this GPU and framework (another model: shrunk further)"
            out.append(f"anchored by {len(names)} run{'s' if len(names) > 1 else ''} {where} ({shown}; the nearest "
                       f"at layout distance {d[mine].min():g}): x{np.exp(s):.3f}")
        return out


__all__ = ["Anchored", "Run"]
