"""How much wider an interval must get per doubling beyond the training data: measured on the
published tables' scale split, it sets :data:`perfzoo.zoo.extrapolation.WIDENING_PER_DOUBLING`.

    python scripts/extrapolation_widening.py                  # the shipped member of published-llm
    python scripts/extrapolation_widening.py --member ridge

The scale split of ``published-llm`` trains on the jobs of at most 64 GPUs and tests on the rest
(128 to 6,144 GPUs: up to 6.6 doublings beyond). The member (the leaderboard's best for
``published-llm``, with its parameters) is fitted on the training side and its 80% interval
calibrated there, across published sources (:func:`perfzoo.zoo.calibrate.fit_with_interval`), as the
shipped artifact's is on all the data. Each test job lies ``D`` doublings beyond the training
side (:func:`perfzoo.zoo.extrapolation.beyond_training`: ``log2`` of how many times the training side's
largest device count, sequence length and parameter count it is, summed) and misses its
measurement by ``r = log(measured / predicted)``. How ``|r|`` spreads as ``D`` grows is the 80th
percentile of ``|r|`` as a line in ``D`` (linear quantile regression, scikit-learn's
``QuantileRegressor``, pinball loss, no penalty): its slope ``g`` is the spread's growth per
doubling, and :func:`perfzoo.zoo.extrapolation.widened` moves each end of an interval out by ``g`` per
doubling (on the 2026-11-28 tables: 0.022, from 0.13 at the edge of the training range). Printed:
by bins of ``D``, the jobs, the median ``r``, the 80th percentile of ``|r|``, and the coverage of
the plain and the widened interval; then the fitted line.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np
import pandas as pd
from sklearn.linear_model import QuantileRegressor

from perfzoo import analytic, zoo
from perfzoo.datasets import load_dataset
from perfzoo.evaluation.splits import scale_split
from perfzoo.zoo import calibrate
from perfzoo.zoo.extrapolation import Seen, beyond_training

LEVEL = 0.8  # the quantile of |log residual| whose growth is measured: the shipped interval's level


def measure(member: str, params: dict, dataset: str = "published-llm") -> dict:
    """The scale split's test jobs: doublings beyond, log residuals, the widening each needs, ``g``."""
    ds = load_dataset(dataset)
    labelled = ds.labelled()
    split = scale_split(labelled)
    train, test = labelled.subset(split.train), labelled.subset(split.test).ok()
    model = calibrate.fit_with_interval(zoo.make(member, **params), train)
    pred = model.predict(test.X)
    low, high = model.predict_interval(test.X)
    y = test.y
    keep = np.isfinite(pred) & (pred > 0) & np.isfinite(y) & (y > 0)
    frame = test.frame[keep]
    doublings = beyond_training(frame, analytic.estimate(frame)["n_params"].to_numpy(dtype=float), Seen.of(train))[
        "doublings"].to_numpy()
    y, pred, low, high = y[keep], pred[keep], low[keep], high[keep]
    residual = np.log(y / pred)
    line = QuantileRegressor(quantile=LEVEL, alpha=0.0, solver="highs").fit(doublings.reshape(-1, 1), np.abs(residual))
    g = max(0.0, float(line.coef_[0]))
    need = np.maximum.reduce([np.zeros(len(y)), np.log(low / y), np.log(y / high)])  # log widening to cover
    return {"member": member, "threshold": split.info["threshold"], "train": len(train.X), "doublings": doublings,
            "residual": residual, "covered": need <= 0, "covered_widened": need <= g * doublings, "g": g,
            "edge": float(line.intercept_)}


def table(m: dict) -> pd.DataFrame:
    frame = pd.DataFrame({"doublings": m["doublings"], "residual": m["residual"], "size": np.abs(m["residual"]),
                          "covered": m["covered"], "widened": m["covered_widened"]})
    bins = pd.cut(frame["doublings"], [-0.01, 0.0, 1, 2, 3, 4, 5, 6, 8, 12])
    q = lambda x: x.quantile(LEVEL)  # noqa: E731
    out = frame.groupby(bins, observed=True).agg(jobs=("residual", "size"), median_r=("residual", "median"),
                                                 p80_abs_r=("size", q), coverage=("covered", "mean"),
                                                 widened_coverage=("widened", "mean"))
    out.loc["all"] = [len(frame), frame["residual"].median(), q(frame["size"]), frame["covered"].mean(),
                      frame["widened"].mean()]
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--member", help="a zoo member (default: the leaderboard's best for published-llm)")
    args = parser.parse_args(argv)
    member, params = (args.member, {}) if args.member else zoo.best_member("published-llm")
    m = measure(member, params)
    print(f"{m['member']} fitted on published-llm's scale split: {m['train']} jobs on <= {m['threshold']:,.0f} GPUs, "
          f"{len(m['residual'])} test jobs beyond")
    print(table(m).to_string(float_format=lambda x: f"{x:.3f}"))
    print(f"80th percentile of |log residual| = {m['edge']:.4f} + {m['g']:.4f} x doublings beyond: each end of the "
          f"interval moves out by {m['g']:.4f} log throughput per doubling (x{np.exp(m['g']):.3f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
