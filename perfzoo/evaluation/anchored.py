"""Shots within a group: how good a prediction is once one or a few runs of that model anchor it.

The workflow scored (:mod:`perfzoo.zoo.anchor`): a user about to train a model measures K short
runs of it on their cluster, then asks for the rest of its layouts and scales. So the K shots are
drawn *inside* each group of the test data (same model shape, accelerator, precision, task and
framework: :func:`perfzoo.zoo.offsets.keys`), anchor the fitted member, and the group's other rows are
scored; a group of K rows or fewer has nothing left to score and is skipped (counted). Every group's
shots anchor at once, as one user's runs of several models would. ``python -m perfzoo.bench --train A
--test B --shots 0,1,3 --shots-within`` and the leaderboard's leave-one-source-out rows report it.

>>> import numpy as np, pandas as pd
>>> from perfzoo.zoo.classic import RidgePredictor
>>> from perfzoo.zoo.interval import Interval
>>> X = pd.DataFrame({"config.hidden_dim": [1024] * 6 + [2048] * 6, "config.n_gpus": [1, 2, 4, 8, 16, 32] * 2})
>>> y = 100.0 * X["config.n_gpus"].to_numpy() * np.repeat([1.0, 0.5], 6)
>>> model = Interval(RidgePredictor()).fit(X, y)
>>> out = shots_within(model, X, 1.4 * y, shots=(0, 1), draws=2)   # a stack 1.4x faster than the training data
>>> round(out[0]["mape"]), round(out[1]["mape"]), round(out[1]["mape_unanchored"]), out[1]["groups"], out[1]["scored"]
(28, 9, 28, 2.0, 10.0)
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np
import pandas as pd

from perfzoo.evaluation import metrics as M
from perfzoo.zoo.anchor import Anchored
from perfzoo.zoo.interval import Interval
from perfzoo.zoo.offsets import keys

SHOTS_WITHIN_METRICS = ("mape", "mdape", "coverage", "interval_width", "mape_unanchored", "scored", "groups",
                        "groups_skipped")
DRAWS = 5  # draws of the shots per count


def shots_within(model: Interval, X_test: pd.DataFrame, y_test: Any, shots: Sequence[int] = (1, 3), draws: int = DRAWS,
                 seed: int = 0, alpha: float = 1 - M.INTERVAL_LEVEL,
                 releases: Optional[np.ndarray] = None) -> dict[int, dict[str, float]]:
    """Per shot count K: :data:`SHOTS_WITHIN_METRICS` of ``model`` (a fitted :class:`~perfzoo.zoo.interval.Interval`)
    anchored by K rows of each test group and scored on the group's other rows, averaged over
    ``draws`` draws (``scored``: rows scored per draw; ``groups`` used and ``groups_skipped``, those of
    K rows or fewer; ``mape_unanchored``: the unanchored model's MAPE on the same rows, what the anchor
    is to beat). K = 0 scores the unanchored model on every row. ``releases`` (each row's
    software release: :func:`perfzoo.zoo.calibrate.release_labels`) cut the groups further, and each
    release is anchored by its own shots only: a user's runs and the layouts they ask about run one
    release."""
    X = X_test.reset_index(drop=True)
    y = np.asarray(y_test, dtype=float)
    label = pd.Series(keys(X).group)
    release = np.zeros(len(y), dtype=np.int64) if releases is None else pd.factorize(np.asarray(releases, dtype=object))[0]
    label = label.astype(str) + "@" + pd.Series(release).astype(str)
    members = pd.Series(np.arange(len(y))).groupby(label.to_numpy()).apply(np.asarray).tolist()
    base = np.asarray(model.predict(X), dtype=float)
    out: dict[int, dict[str, float]] = {}
    for k in shots:
        if k == 0:
            low, high = model.predict_interval(X, alpha=alpha)
            out[0] = {"mape": M.mape(y, base), "mdape": M.mdape(y, base), **M.interval_scores(y, low, high),
                      "mape_unanchored": M.mape(y, base), "scored": float(len(y)), "groups": float(len(members)),
                      "groups_skipped": 0.0}
            continue
        usable = [rows for rows in members if rows.size > k]
        if not usable:
            out[k] = {m: float("nan") for m in SHOTS_WITHIN_METRICS} | {
                "scored": 0.0, "groups": 0.0, "groups_skipped": float(len(members))}
            continue
        rows_scored = []
        for d in range(draws):
            rng = np.random.default_rng([seed, k, d])
            picks = [rng.choice(rows, k, replace=False) for rows in usable]
            anchors = np.concatenate(picks)
            rest = np.concatenate([np.setdiff1d(rows, p) for rows, p in zip(usable, picks)])
            pred, low, high = np.empty(rest.size), np.empty(rest.size), np.empty(rest.size)
            for stack in np.unique(release[anchors]):  # one user's runs and questions: one release
                at, shots = release[rest] == stack, anchors[release[anchors] == stack]
                anchored = Anchored(model, X.iloc[shots], y[shots])
                pred[at] = anchored.predict(X.iloc[rest[at]])
                low[at], high[at] = anchored.predict_interval(X.iloc[rest[at]], alpha=alpha)
            rows_scored.append({"mape": M.mape(y[rest], pred), "mdape": M.mdape(y[rest], pred),
                                **M.interval_scores(y[rest], low, high), "mape_unanchored": M.mape(y[rest], base[rest]),
                                "scored": float(rest.size)})
        mean = pd.DataFrame(rows_scored).mean()
        out[k] = {**{m: float(mean[m]) for m in mean.index}, "groups": float(len(usable)),
                  "groups_skipped": float(len(members) - len(usable))}
    return out


def within_columns(scores: dict[int, dict[str, float]]) -> dict[str, float]:
    """:func:`shots_within`'s scores as flat result columns, ``<metric>_within_<K>``.

    >>> within_columns({1: {"mape": 4.0, "coverage": 0.8}})
    {'mape_within_1': 4.0, 'coverage_within_1': 0.8}
    """
    return {f"{metric}_within_{k}": value for k, per in scores.items() for metric, value in per.items()}
