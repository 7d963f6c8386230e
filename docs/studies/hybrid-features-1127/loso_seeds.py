"""Leave one published source out with ``hybrid``, over its random states, with and without some
of the features its learned correction may split on (the study's README says why).

    python docs/studies/hybrid-features-1127/loso_seeds.py --variants memory,hybrid,dense,shape --seeds 5

Prints, per variant and held-out source, the mean and spread over seeds of MAPE, Kendall and the
80% interval's coverage (the interval calibrated as the leaderboard does: cross-conformal with the
training rows' sources as groups).
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd
from scipy.stats import kendalltau

from perfzoo.datasets import load_dataset
from perfzoo.llmconfig.catalog import SHAPE_KEYS
from perfzoo.zoo.analytic_features import MEMORY_FEATURES
from perfzoo.zoo.boosting import HybridPredictor
from perfzoo.zoo.features import FeatureEncoder
from perfzoo.zoo.interval import Interval

DENSE = SHAPE_KEYS[:8]  # n_params, n_layers, hidden_dim, ffn_dim, n_heads, n_kv_heads, head_dim, vocab_size
# variant -> (the memory estimates among the features, what else the trees do not see)
VARIANTS = {"memory": (True, ()), "fraction": (True, ("analytic.memory_fraction",)), "hybrid": (False, ()),
            "dense": (False, DENSE), "shape": (False, SHAPE_KEYS)}


class Without(HybridPredictor):
    """``hybrid`` whose trees do not see the features named by ``drop`` (config keys, their log2,
    or analytic feature names), with or without the memory estimates (``memory``: as ``hybrid``
    was before this study); the analytic estimate still reads every column."""

    def __init__(self, memory: bool = False, drop=(), random_state: int = 0):
        super().__init__(random_state=random_state)
        self.memory, self.drop = memory, drop

    def _encoder(self) -> FeatureEncoder:
        return FeatureEncoder(self.encoding, exclude_analytic=() if self.memory else MEMORY_FEATURES)

    def _keep(self) -> np.ndarray:
        def dropped(name: str) -> bool:
            base = name[4:] if name.startswith("log.") else name
            return name in self.drop or base.split(".", 1)[-1] in self.drop and base.startswith("config.")
        return np.array([not dropped(n) for n in self.encoder_.feature_names_])

    def _fit_model(self, Z, z, X, groups) -> None:
        self.keep_ = self._keep()
        names = np.array(self.encoder_.feature_names_)[self.keep_]
        cats = [i for i, n in enumerate(names) if n in self.encoder_.categorical_features_]
        self.model_.fit(self._features(X), z, categorical_feature=cats or "auto")

    def _features(self, X) -> np.ndarray:
        return self.encoder_.matrix(X)[:, self.keep_]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--variants", default="memory,hybrid,dense,shape", help=f"of {sorted(VARIANTS)}")
    ap.add_argument("--seeds", type=int, default=5)
    args = ap.parse_args()
    ds = load_dataset("published-llm").ok()
    X, y = ds.X.reset_index(drop=True), np.asarray(ds.y, dtype=float)
    files = ds.frame["annotations.file"].astype(str).to_numpy()
    rows = []
    for variant in args.variants.split(","):
        memory, drop = VARIANTS[variant]
        for seed in range(args.seeds):
            for source in np.unique(files):
                test = files == source
                model = Interval(Without(memory, drop, random_state=seed)).fit(X[~test], y[~test], groups=files[~test])
                pred = model.predict(X[test])
                low, high = model.predict_interval(X[test])
                ok = np.isfinite(pred) & np.isfinite(y[test])  # 4 torchtitan rows publish no model to price
                rows.append(dict(variant=variant, seed=seed, source=source.split("_")[0] + "_" + source.split("_")[1],
                                 mape=100 * np.mean(np.abs(pred[ok] / y[test][ok] - 1)),
                                 kendall=kendalltau(pred[ok], y[test][ok]).statistic,
                                 coverage=100 * np.mean((low[ok] <= y[test][ok]) & (y[test][ok] <= high[ok]))))
    r = pd.DataFrame(rows)
    per = r.groupby(["variant", "source"])[["mape", "kendall", "coverage"]].agg(["mean", "std"]).round(3)
    print(per.to_string())
    print(r.groupby(["variant", "seed"])[["mape", "kendall"]].mean().groupby("variant").agg(["mean", "std"]).round(3))


if __name__ == "__main__":
    main()
