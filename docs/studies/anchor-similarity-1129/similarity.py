"""How much of one run's offset carries to another layout of its model: rho(d), fitted on the shared tables.

    python docs/studies/anchor-similarity-1129/similarity.py

The anchoring member (`analytic`, best.json's `calibrate` pick for published-llm) is fitted on
published-llm less one source and its log residual, log(measured / predicted), taken on that source,
for each of the six published sources; vtrain-a100 (tokens/s per GPU) is predicted by the member
fitted on all of published-llm. Every pair of rows of one group (model shape, GPU, precision, task,
framework: perfzoo.zoo.offsets.keys) and release: how much of one's residual carries to the other
against their layout distance (perfzoo.zoo.similarity.fit, each source alike). Prints the fit
(what perfzoo.zoo.similarity.FITTED holds) and, per source and distance, the share carried (the
least-squares slope of each pair's residual on the other's, sum 2 r_i r_j / sum (r_i^2 + r_j^2))
beside the fitted rho.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from perfzoo import zoo
from perfzoo.datasets import load_dataset
from perfzoo.zoo import similarity
from perfzoo.zoo.analytic_features import n_devices
from perfzoo.zoo.offsets import keys
from perfzoo.zoo.calibrate import release_labels, source_labels

MEMBER = "analytic"
BINS = [-0.01, 0.01, 1, 2, 3, 4, 6, 8, 12, 40]


def residuals() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(residuals, layouts, labels, sources)`` of every labelled row of the shared tables, each
    predicted by the member fitted without its source."""
    ds = load_dataset("published-llm").labelled().ok()
    f, X, y = ds.frame.reset_index(drop=True), ds.X.reset_index(drop=True), np.asarray(ds.y, float)
    src, rel = source_labels(f), release_labels(f)
    r = np.full(len(y), np.nan)
    for s in np.unique(src):
        out = src == s
        model = zoo.make(MEMBER).fit(X[~out], y[~out], groups=src[~out])
        r[out] = np.log(y[out] / model.predict(X[out]))
    model = zoo.make(MEMBER).fit(X, y, groups=src)
    vt = load_dataset("vtrain-a100").labelled().ok()
    Xv = vt.frame.reindex(columns=list(ds.feature_columns)).reset_index(drop=True)
    rv = np.log(np.asarray(vt.y, float) / n_devices(Xv) / model.predict(Xv))
    rel_v = release_labels(vt.frame.reset_index(drop=True))
    X_all = pd.concat([X, Xv], ignore_index=True)
    sources = np.r_[src, ["vtrain_ground_truth_single.csv"] * len(rv)].astype(object)
    labels = pd.Series(list(zip(sources, np.r_[rel, rel_v], keys(X_all).group))).factorize()[0]
    return np.r_[r, rv], similarity.layout(X_all), labels, sources


def main() -> None:
    r, coords, labels, sources = residuals()
    fitted = similarity.fit(r, coords, labels, sources)
    print(f"fitted: {fitted} (perfzoo.zoo.similarity.FITTED: {similarity.FITTED})")
    i, j, d = similarity.pairs(r, coords, labels)
    pairs = pd.DataFrame({"source": sources[i], "bin": pd.cut(d, BINS), "both": 2 * r[i] * r[j],
                          "each": r[i] ** 2 + r[j] ** 2})
    sums = pairs.groupby(["source", "bin"], observed=True)[["both", "each"]].sum()
    table = (sums["both"] / sums["each"]).unstack("bin")
    table.loc["fitted rho (bin middle)"] = [float(fitted((b.left + b.right) / 2)) for b in table.columns]
    counts = pairs.groupby("source").size().rename("pairs")
    pd.set_option("display.width", 250)
    print(table.round(2).join(counts).to_string())


if __name__ == "__main__":
    main()
