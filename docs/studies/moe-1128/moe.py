"""How well mixture-of-experts rows are priced when their source is left out, next to the dense rows.

    python docs/studies/moe-1128/moe.py [--json OUT]

Fits the shipped ``hybrid`` and the ``analytic`` member (the physics times one efficiency fitted on
the other sources) on all but one source of ``published-llm`` and predicts that source, as
``docs/studies/loso-gap-1128/loso_gap.py`` does (random state 0), then prints, per held-out source,
the median predicted/measured ratio of its MoE rows (``n_experts > 1``) and the MAPE of its dense
rows, and per MoE model the median ratio and the measured / ideal efficiency (the analytic estimate
before any fit). About a minute on a 2-core VM.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
from pathlib import Path

import numpy as np
import pandas as pd

from perfzoo import analytic
from perfzoo.datasets import load_dataset

_LOSO = Path(__file__).parent.parent / "loso-gap-1128" / "loso_gap.py"
_spec = importlib.util.spec_from_file_location("loso_gap", _LOSO)
loso_gap = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(loso_gap)

MEMBERS = ("analytic", "hybrid")


def short(source: str) -> str:
    return source.removesuffix(".csv").replace("nvidia_", "").replace("_perf_summary", "")[:22]


def mape(r: np.ndarray) -> float:
    return float(100 * np.mean(np.abs(r - 1))) if len(r) else float("nan")


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="write the tables as JSON here")
    args = parser.parse_args(argv)
    ds = load_dataset("published-llm").labelled().ok()
    f, X, y = ds.frame, ds.X, np.asarray(ds.y, float)
    src = f["annotations.file"].astype(str).to_numpy()
    moe = (f["config.n_experts"].fillna(0).astype(float) > 1).to_numpy()
    ideal = analytic.estimate(f)["throughput_per_device"].to_numpy()
    efficiency = y / ideal
    ratios = {m: loso_gap.held_out_ratios(X, y, src, m) for m in MEMBERS}

    per_source = []
    for s in np.unique(src):
        te = src == s
        row = {"source": short(s), "MoE rows": int((te & moe).sum()), "dense rows": int((te & ~moe).sum())}
        for m, r in ratios.items():
            row[f"{m} MAPE"] = mape(r[te])
            row[f"{m} MoE pred/meas"] = float(np.median(r[te & moe])) if (te & moe).any() else float("nan")
            row[f"{m} MoE MAPE"] = mape(r[te & moe])
            row[f"{m} dense MAPE"] = mape(r[te & ~moe])
            row[f"{m} dense pred/meas"] = float(np.median(r[te & ~moe]))
        row["MoE eff"] = float(np.median(efficiency[te & moe])) if (te & moe).any() else float("nan")
        row["dense eff"] = float(np.median(efficiency[te & ~moe]))
        per_source.append(row)
    per_model = []
    names = f["config.model_name"].astype(str).str.replace(r" \(proxy, \d+ layers\)", " (proxies)", regex=True)
    for (s, name), idx in pd.Series(np.arange(len(f)))[moe].groupby([src[moe], names[moe].to_numpy()]):
        i = idx.to_numpy()
        row = {"source": short(s), "model": name, "rows": len(i), "eff": float(np.median(efficiency[i]))}
        row |= {f"{m} pred/meas": float(np.median(r[i])) for m, r in ratios.items()}
        per_model.append(row)
    tables = {"per_source": per_source, "per_model": per_model,
              "pooled_efficiency": float(np.nanmedian(efficiency))}
    pd.set_option("display.width", 200)
    print("1. Each source left out: MoE rows' median predicted/measured, MAPE; dense rows' MAPE (%);"
          " median measured/ideal efficiency\n")
    print(pd.DataFrame(per_source).round(3).to_string(index=False))
    print(f"\n   pooled measured/ideal efficiency (all rows): {tables['pooled_efficiency']:.3f}")
    print("\n2. Per MoE model (left out with its source)\n")
    print(pd.DataFrame(per_model).round(3).to_string(index=False))
    if args.json:
        Path(args.json).write_text(json.dumps(tables, indent=1))
    return tables


if __name__ == "__main__":
    main()
