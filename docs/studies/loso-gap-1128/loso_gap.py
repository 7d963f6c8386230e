"""Where the error of leaving one published source out comes from: each source's bias against the
others, the scatter inside it, and, for Megatron-Bridge, which of its rows carry it.

    python docs/studies/loso-gap-1128/loso_gap.py

Prints three tables (about 10 s on a 2-core VM): per held-out source, the shipped ``hybrid`` and
``analytic`` fitted on the other sources as the leaderboard fits them (random state 0); the
Megatron-Bridge rows by kind; and the floor that equal configurations with different throughput
put under any predictor.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.stats import kendalltau

from perfzoo import zoo
from perfzoo.datasets import load_dataset
from perfzoo.records.columns import row_keys

MEMBERS = ("hybrid", "analytic")
BRIDGE = "nvidia_megatron_bridge_perf_summary.csv"


def short(source: str) -> str:
    return source.removesuffix(".csv")[:28]


def held_out_ratios(X: pd.DataFrame, y: np.ndarray, src: np.ndarray, member: str) -> np.ndarray:
    """Predicted / measured throughput of every row, predicted by ``member`` fitted on the other sources."""
    ratio = np.empty(len(y))
    for s in np.unique(src):
        te = src == s
        model = zoo.make(member).fit(X[~te], y[~te], groups=src[~te])
        ratio[te] = np.asarray(model.predict(X[te]), float) / y[te]
    return ratio


def mape(r: np.ndarray) -> float:
    return float(100 * np.mean(np.abs(r - 1)))


def bridge_kind(frame: pd.DataFrame, agrees: np.ndarray) -> pd.Series:
    """Each Megatron-Bridge row's kind, the first that applies: GPT-OSS 120B, a 25.09 token-drop
    row, a layout another container measured more than 20% apart, MoE on an 8-GPU HGX board
    (B200, B300), other MoE, dense."""
    name = frame["config.model_name"].astype(str)
    moe = frame["config.n_experts"].fillna(0).astype(float) > 1
    hgx = frame["hardware.accelerator"].astype(str).isin(["B200", "B300"])
    kinds = np.select(
        [name.str.contains("GPT OSS").to_numpy(), name.str.contains("tokendrop").to_numpy(), ~agrees,
         (moe & hgx).to_numpy(), moe.to_numpy()],
        ["GPT-OSS 120B", "token-drop (25.09)", "same layout, containers disagree", "MoE on HGX B200/B300", "other MoE"],
        "dense")
    return pd.Series(kinds, index=frame.index)


def main() -> None:
    ds = load_dataset("published-llm").labelled().ok()
    f, X, y = ds.frame, ds.X, np.asarray(ds.y, float)
    src = f["annotations.file"].astype(str).to_numpy()
    keys = row_keys(X)
    ratios = {m: held_out_ratios(X, y, src, m) for m in MEMBERS}

    print("1. Each source predicted from the others (MAPE %; bias-free: MAPE of ratio / the source's median ratio)\n")
    rows = []
    for s in np.unique(src):
        te = src == s
        row = {"source": short(s), "rows": int(te.sum())}
        for m, r in ratios.items():
            med = float(np.median(r[te]))
            row |= {f"{m} MAPE": mape(r[te]), f"{m} pred/meas": med, f"{m} bias-free": mape(r[te] / med),
                    f"{m} Kendall": kendalltau(r[te] * y[te], y[te])[0]}
        rows.append(row)
    print(pd.DataFrame(rows).round(3).to_string(index=False))

    te = src == BRIDGE
    yb, kb = y[te], keys[te]
    spread = pd.Series(yb).groupby(kb).transform(lambda v: v.max() / v.min()).to_numpy()
    kind = bridge_kind(f[te], agrees=spread <= 1.2)
    print(f"\n2. Megatron-Bridge's {te.sum()} rows by kind (left out: points = the kind's share of the source's MAPE)\n")
    table = []
    for k in kind.unique():
        sel = (kind == k).to_numpy()
        row = {"kind": k, "rows": int(sel.sum())}
        for m, r in ratios.items():
            rb = r[te]
            row |= {f"{m} pred/meas": float(np.median(rb[sel])), f"{m} MAPE": mape(rb[sel]),
                    f"{m} points": float(100 * np.abs(rb[sel] - 1).sum() / te.sum())}
        table.append(row)
    print(pd.DataFrame(table).sort_values("hybrid points", ascending=False).round(3).to_string(index=False))
    dense = (kind == "dense").to_numpy()
    for m, r in ratios.items():
        print(f"   {m}: MAPE {mape(r[te]):.1f}% on all, {mape(r[te][~(kind == 'GPT-OSS 120B').to_numpy()]):.1f}% "
              f"without GPT-OSS, {mape(r[te][dense]):.1f}% on the dense rows")

    print("\n3. The floor: each set of equal configurations predicted by its best single value (MAPE %)\n")
    floor = []
    for s in np.unique(src):
        sel = src == s
        err = sum(min(np.abs(c / v - 1).sum() for c in v)
                  for v in pd.Series(y[sel]).groupby(keys[sel]).apply(np.asarray))
        floor.append({"source": short(s), "rows": int(sel.sum()), "distinct configs": len(np.unique(keys[sel])),
                      "floor MAPE": 100 * err / sel.sum()})
    print(pd.DataFrame(floor).round(2).to_string(index=False))


if __name__ == "__main__":
    main()
