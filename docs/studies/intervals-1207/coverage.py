"""Coverage of the 80% interval leaving each published source out, per source.

    python docs/studies/intervals-1207/coverage.py [member ...]

For each source of published-llm, the member is fitted with its interval
(:func:`perfzoo.zoo.calibrate.fit_with_interval`'s recipe: :class:`perfzoo.zoo.interval.Interval`,
folds by source) on the other sources, and the share of the held-out source's rows inside its
80% interval is printed, with the median width (high / low). Default members: hybrid, analytic.
"""

from __future__ import annotations

import sys

import numpy as np
import pandas as pd

from perfzoo import zoo
from perfzoo.datasets import load_dataset
from perfzoo.zoo.calibrate import release_labels, source_labels
from perfzoo.zoo.interval import Interval


def per_source(member: str) -> pd.DataFrame:
    """One row per held-out source: rows, coverage, median width."""
    ds = load_dataset("published-llm").labelled().ok()
    X, y = ds.X, np.asarray(ds.y, float)
    src, rel = source_labels(ds.frame), release_labels(ds.frame)
    out = []
    for s in np.unique(src):
        te = src == s
        model = Interval(zoo.make(member)).fit(X[~te], y[~te], groups=src[~te], releases=rel[~te])
        low, high = model.predict_interval(X[te])
        out.append({"member": member, "source": s.removesuffix(".csv")[:32], "rows": int(te.sum()),
                    "coverage": float(np.mean((low <= y[te]) & (y[te] <= high))),
                    "width": float(np.median(high / low))})
    return pd.DataFrame(out)


def main(members: list[str]) -> None:
    table = pd.concat([per_source(m) for m in members], ignore_index=True)
    print(table.round(3).to_string(index=False))
    for m, t in table.groupby("member"):
        pooled = float(np.average(t["coverage"], weights=t["rows"]))
        print(f"{m}: pooled {pooled:.3f}, per source {t['coverage'].min():.2f}-{t['coverage'].max():.2f}, "
              f"sources in 0.70-0.90: {int(t['coverage'].between(0.70, 0.90).sum())}/{len(t)}")


if __name__ == "__main__":
    main(sys.argv[1:] or ["hybrid", "analytic"])
