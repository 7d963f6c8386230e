"""Where the analytic model misses: measured / analytic-ideal throughput, median per group.

The ideal is :func:`perfzoo.analytic.estimate`'s throughput (no fitted factor), so the ratio is the
fraction of the roofline a job reached. A physics gap shows as a group whose median stands apart
from the rest (the published sources sit at 0.58-0.68): a kind of model, precision or layout the
estimate prices too fast (low ratio) or too slow (high ratio). Nothing is fitted here.

    python scripts/efficiency_table.py                                   # per source
    python scripts/efficiency_table.py --by precision,is_moe --source nvidia_megatron_bridge
    python scripts/efficiency_table.py --by seq_len,cp --source torchtitan
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from perfzoo.datasets import load_dataset  # noqa: E402
from perfzoo.zoo.targets import analytic_log_throughput  # noqa: E402


def ratios(dataset: str = "published-llm") -> pd.DataFrame:
    """One row per labelled job: its source file (the dataset's name for a measured one), its config
    columns (``config.``/``hardware.`` dropped), ``is_moe`` and ``ratio`` = measured / ideal (NaN
    where the estimate is unknown)."""
    ds = load_dataset(dataset).labelled().ok()
    with np.errstate(divide="ignore", invalid="ignore"):
        log_ratio = np.log(np.asarray(ds.y, dtype=float)) - analytic_log_throughput(ds.X, ds.target.endswith("_per_device"))
    frame = ds.frame
    out = pd.DataFrame({c.split(".", 1)[1]: frame[c].to_numpy() for c in frame.columns
                        if c.startswith(("config.", "hardware."))})
    files = frame.get("annotations.file")  # a published table's file; a measured dataset is its own source
    out["source"] = dataset if files is None else files.astype(str).str.removesuffix(".csv").to_numpy()
    experts = out["n_experts"] if "n_experts" in out else pd.Series(1.0, index=out.index)
    out["is_moe"] = pd.to_numeric(experts, errors="coerce").fillna(1).to_numpy() > 1
    out["ratio"] = np.exp(log_ratio)
    return out


def table(rows: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """Jobs and the median, p10 and p90 of the ratio per group of ``by``."""
    missing = [c for c in by if c not in rows.columns]
    if missing:
        raise SystemExit(f"efficiency_table: no column {missing[0]!r}; choose from {', '.join(sorted(rows.columns))}")
    grouped = rows.dropna(subset=["ratio"]).groupby(by, dropna=False)["ratio"]
    return pd.DataFrame({"jobs": grouped.size(), "median": grouped.median(), "p10": grouped.quantile(0.1),
                         "p90": grouped.quantile(0.9)}).round(3)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dataset", default="published-llm")
    p.add_argument("--by", default="source", help="comma-separated config columns (default: source)")
    p.add_argument("--source", help="only the jobs of sources whose file name starts with this")
    args = p.parse_args(argv)
    warnings.filterwarnings("ignore")
    rows = ratios(args.dataset)
    if args.source:
        rows = rows[rows["source"].str.startswith(args.source)]
    print(table(rows, [c.strip() for c in args.by.split(",") if c.strip()]).to_string())
    return 0


if __name__ == "__main__":
    sys.exit(main())
