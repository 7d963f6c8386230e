"""One measured run, then numbers you can act on: leave-one-source-out and the DGX Cloud recipes'
releases, as they come (0 shots) and anchored by 1 and 3 runs of each held-out model.

    python docs/studies/anchored-1128/anchored.py [--members analytic,hybrid_roofline] [--draws 5]

For each member: fitted (with its interval, folds by source, spread by source and release) on
published-llm less one source, then on the held-out source's rows: MAPE, median predicted/measured
and 80% coverage with no run of it; then K = 1, 3 runs of each held-out group (model shape, GPU,
precision, task, framework, release: perfzoo.zoo.anchor) anchor it and the group's other rows are
scored (perfzoo.evaluation.anchored.shots_within). Last, the temporal split of published-dgxc: its
releases up to a cut predict the later ones (the rest of published-llm in training too).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from perfzoo import zoo
from perfzoo.datasets import load_dataset
from perfzoo.evaluation import metrics as M
from perfzoo.evaluation.anchored import shots_within
from perfzoo.zoo.calibrate import release_labels, source_labels
from perfzoo.zoo.interval import Interval

DGXC = "nvidia_dgxc_benchmarking_perf_tables.csv"
CUT = "2025-04-30"  # DGXC releases from this date on are predicted from the earlier ones


def scores(member: str, X, y, src, rel, train, test, draws: int) -> dict:
    model = Interval(zoo.make(member)).fit(X[train], y[train], groups=src[train], releases=rel[train])
    out = shots_within(model, X[test], y[test], shots=(0, 1, 3), draws=draws, releases=rel[test])
    pred = model.predict(X[test])
    row = {"rows": int(test.sum()), "pred/meas": round(float(np.median(pred / y[test])), 3)}
    for k, v in out.items():
        row |= {f"{k}-shot MAPE": round(v["mape"], 1), f"{k}-shot cover": round(v["coverage"], 2)}
        if k:
            row[f"{k}-shot scored"] = int(v["scored"])
    return row


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--members", default="analytic,hybrid_roofline")
    p.add_argument("--draws", type=int, default=5)
    args = p.parse_args()
    ds = load_dataset("published-llm").labelled().ok()
    f, X, y = ds.frame.reset_index(drop=True), ds.X.reset_index(drop=True), np.asarray(ds.y, float)
    src, rel = source_labels(f), release_labels(f)
    pd.set_option("display.width", 250)
    for member in args.members.split(","):
        t0 = time.perf_counter()
        rows = []
        for s in np.unique(src):
            rows.append({"held-out source": s.removesuffix(".csv")[:30], **scores(member, X, y, src, rel, src != s,
                                                                               src == s, args.draws)})
        table = pd.DataFrame(rows)
        print(f"\n{member}: leave one source out ({time.perf_counter() - t0:.0f} s)\n")
        print(table.to_string(index=False))
        later = (src == DGXC) & (pd.to_datetime(f["started_at"]).dt.strftime("%Y-%m-%d").to_numpy() >= CUT)
        temporal = scores(member, X, y, src, rel, ~later, later, args.draws)
        print(f"\n{member}: published-dgxc releases from {CUT} on, predicted from the earlier ones and the other sources\n")
        print(pd.DataFrame([temporal]).to_string(index=False))


if __name__ == "__main__":
    main()
