"""Does a member order one model's layouts as they ran? Leave one source out, score inside slots.

    python docs/studies/layouts-apart-1129/slots.py [--members analytic hybrid_roofline]

The pool is plan's (``published-llm``, ``vtrain-a100``, ``llm-h100``; tokens/s per GPU). Each
source (a published table, or one of the two datasets) is predicted by the member fitted on the
others; inside each slot (:mod:`perfzoo.evaluation.slots`: one model, cluster, sequence, batch,
precision, task) with >= 3 measured layouts: mean Kendall, median predicted / measured spread,
median top-1 regret; and the source's MAPE over all its rows.
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd

from perfzoo import zoo
from perfzoo.datasets import load_dataset
from perfzoo.evaluation import slots as slotting
from perfzoo.plan.benchmark import per_device

POOL = ("published-llm", "vtrain-a100", "llm-h100")


def pool() -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    frames, ys, sources = [], [], []
    for name in POOL:
        ds = load_dataset(name).labelled().ok()
        frames.append(ds.frame)
        ys.append(per_device(ds))
        src = ds.frame["annotations.file"].astype(str) if name == "published-llm" else pd.Series(name, ds.frame.index)
        sources.append(src.str.removesuffix(".csv").to_numpy())
    frame = pd.concat(frames, ignore_index=True, sort=False)
    cols = sorted(c for c in frame.columns if c.startswith(("config.", "hardware.")))
    return frame[cols], np.concatenate(ys), np.concatenate(sources)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--members", nargs="+", default=["analytic", "hybrid_roofline"])
    args = ap.parse_args()
    X, y, src = pool()
    labels, layouts = slotting.slot_labels(X), slotting.layout_labels(X)
    rows = []
    for member in args.members:
        for s in pd.unique(src):
            te = src == s
            model = zoo.make(member).fit(X[~te], y[~te], groups=src[~te])
            pred = np.asarray(model.predict(X[te]), float)
            sc = slotting.summary(slotting.slot_scores(y[te], pred, labels[te], layouts[te]))
            ok = np.isfinite(pred)
            rows.append({"member": member, "source": s[:30], "rows": int(te.sum()),
                         "MAPE %": 100 * float(np.mean(np.abs(pred[ok] / y[te][ok] - 1))), **sc})
    out = pd.DataFrame(rows)
    print(out.round(3).to_string(index=False))
    scored = out[out["slots"] > 0]
    print("\nmean over sources with slots:")
    print(scored.groupby("member")[["MAPE %", "kendall", "spread", "regret"]].mean().round(3).to_string())


if __name__ == "__main__":
    main()
