"""Expert-parallel rows against dense rows, each source left out, and the MoE layout pairs.

    python docs/studies/moe-1207/moe.py [--json OUT]

Fits ``analytic`` and ``hybrid`` on all sources of ``published-llm`` but one and predicts that
source (``docs/studies/loso-gap-1128/loso_gap.py``, random state 0), then prints per held-out
source the MAPE of its rows with ``ep > 1`` and of its dense rows (``n_experts <= 1``), their
ratio, and the "pairs" check of issue 67: pairs of Megatron-Bridge MoE rows of one setting (model,
GPUs, accelerator, sequence, global batch, precision) under different layouts, how many the
member orders as measured and how many predicted gaps lie within half of the measured gap
(``|pred_ratio / meas_ratio - 1| <= 0.5 * |meas_ratio - 1|``, ratios of throughputs).
"""

from __future__ import annotations

import argparse
import importlib.util
import itertools
import json
from pathlib import Path

import numpy as np
import pandas as pd

from perfzoo.datasets import load_dataset

_LOSO = Path(__file__).parent.parent / "loso-gap-1128" / "loso_gap.py"
_spec = importlib.util.spec_from_file_location("loso_gap", _LOSO)
loso_gap = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(loso_gap)

MEMBERS = ("analytic", "hybrid")
SETTING = ["config.model_name", "config.n_gpus", "hardware.accelerator", "config.seq_len",
           "config.global_batch_size", "config.precision"]
LAYOUT = ["config.tp", "config.pp", "config.cp", "config.ep", "config.etp", "config.vp", "config.micro_batch_size",
          "config.activation_checkpointing", "config.fsdp"]


def mape(r: np.ndarray) -> float:
    return float(100 * np.mean(np.abs(r - 1))) if len(r) else float("nan")


def pairs(f: pd.DataFrame, y: np.ndarray, ratios: dict[str, np.ndarray], rows: np.ndarray) -> list[dict]:
    """Every pair of ``rows`` of one setting under different layouts, with each member's predicted gap."""
    out = []
    layout = f[LAYOUT].copy()
    layout[["config.vp", "config.etp", "config.cp"]] = layout[["config.vp", "config.etp", "config.cp"]].fillna(1)
    layout = layout.astype(object).where(layout.notna(), "-").astype(str)  # NaN == NaN as a layout
    sub = f[rows].astype(str)
    for _, idx in sub.groupby(SETTING).groups.items():
        for i, j in itertools.combinations([f.index.get_loc(k) for k in idx], 2):
            if (layout.iloc[i] == layout.iloc[j]).all():
                continue  # the same layout measured twice (containers): not a layout pair
            meas = y[i] / y[j]
            row = {"model": f.iloc[i]["config.model_name"], "gpus": f.iloc[i]["config.n_gpus"],
                   "acc": f.iloc[i]["hardware.accelerator"], "meas": meas}
            for m, r in ratios.items():
                pred = meas * r[i] / r[j]
                row[f"{m} pred"] = pred
                row[f"{m} ordered"] = bool(np.sign(np.log(pred)) == np.sign(np.log(meas)))
                row[f"{m} within half"] = bool(abs(np.log(pred / meas)) <= 0.5 * abs(np.log(meas)))
            out.append(row)
    return out


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="write the tables as JSON here")
    args = parser.parse_args(argv)
    ds = load_dataset("published-llm").labelled().ok()
    f, X, y = ds.frame.reset_index(drop=True), ds.X, np.asarray(ds.y, float)
    src = f["annotations.file"].astype(str).to_numpy()
    moe = (f["config.n_experts"].fillna(0).astype(float) > 1).to_numpy()
    ep = (f["config.ep"].fillna(1).astype(float) > 1).to_numpy() & moe
    ratios = {m: loso_gap.held_out_ratios(X, y, src, m) for m in MEMBERS}
    per_source = []
    for s in np.unique(src):
        te = src == s
        row = {"source": loso_gap.short(s)[:24], "EP rows": int((te & ep).sum()), "dense rows": int((te & ~moe).sum())}
        for m, r in ratios.items():
            row[f"{m} EP MAPE"] = mape(r[te & ep])
            row[f"{m} dense MAPE"] = mape(r[te & ~moe])
            row[f"{m} EP/dense"] = row[f"{m} EP MAPE"] / row[f"{m} dense MAPE"]
            row[f"{m} EP pred/meas"] = float(np.median(r[te & ep])) if (te & ep).any() else float("nan")
        per_source.append(row)
    bridge = np.array(["megatron_bridge" in s for s in src])
    pair_rows = pairs(f, y, ratios, bridge & moe)
    names = f["config.model_name"].astype(str).str.replace(r" \(proxy, \d+ layers\)", " (proxies)", regex=True)
    per_model = []
    for (s, name), idx in pd.Series(np.arange(len(f)))[ep].groupby([src[ep], names[ep].to_numpy()]):
        i = idx.to_numpy()
        per_model.append({"source": loso_gap.short(s)[:16], "model": name, "rows": len(i)}
                         | {f"{m} pred/meas": float(np.median(r[i])) for m, r in ratios.items()}
                         | {f"{m} MAPE": mape(r[i]) for m, r in ratios.items()})
    pd.set_option("display.width", 250)
    pd.set_option("display.max_columns", 30)
    print("1. Each source left out: MAPE (%) of rows with ep > 1 and of dense rows\n")
    print(pd.DataFrame(per_source).round(3).to_string(index=False))
    print("\n2. Per model, rows with ep > 1\n")
    print(pd.DataFrame(per_model).round(3).to_string(index=False))
    print("\n3. Megatron-Bridge MoE pairs (one setting, two layouts): measured and predicted throughput ratio\n")
    pt = pd.DataFrame(pair_rows)
    print(pt.round(3).to_string(index=False))
    for m in MEMBERS:
        print(f"   {m}: {int(pt[f'{m} ordered'].sum())}/{len(pt)} ordered right, "
              f"{int(pt[f'{m} within half'].sum())}/{len(pt)} gaps within half")
    tables = {"per_source": per_source, "per_model": per_model, "pairs": pair_rows}
    if args.json:
        Path(args.json).write_text(json.dumps(tables, indent=1, default=str))
    return tables


if __name__ == "__main__":
    main()
