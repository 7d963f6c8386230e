"""Pure FSDP across node counts: the per-GPU throughput trend each shared table measured, and the
one the analytic model predicts: its ideal step (``ideal``, before calibration) and the ``analytic``
member fitted on every published row as the leaderboard fits it (``fitted``: its efficiencies
stretch the compute, under which more of the communication hides).

    python docs/studies/fsdp-scale-1207/fsdp_scale.py

A sweep is the published-llm rows that differ only in their GPU count (same source, model,
accelerator, precision, sequence, micro-batch, recompute, framework; no TP, PP or CP; sharded data
parallelism), at two GPU counts or more. Its trend: tokens/s per GPU at the largest count over the
smallest, minus 1, in points. Prints each sweep and the mean absolute gap between the trends.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from perfzoo import zoo
from perfzoo.analytic import estimate
from perfzoo.datasets import load_dataset

KEYS = ["annotations.file", "config.model_name", "hardware.accelerator", "config.precision", "config.seq_len",
        "config.micro_batch_size", "config.activation_checkpointing", "config.framework", "annotations.variant"]


def sweeps() -> pd.DataFrame:
    """The FSDP rows of published-llm that belong to a sweep over GPU counts, with the analytic prediction."""
    ds = load_dataset("published-llm").labelled().ok()
    f = ds.frame.copy()
    f["ideal"] = estimate(ds.X)["throughput_per_device"].to_numpy()
    src = f["annotations.file"].astype(str).to_numpy()
    model = zoo.make("analytic").fit(ds.X, np.asarray(ds.y, float), groups=src)
    f["fitted"] = np.asarray(model.predict(ds.X), float)  # tokens/s per GPU, as the target
    sharded = f["config.fsdp"].isin(["full_shard", "hybrid_shard"])
    plain = (f[["config.tp", "config.pp", "config.cp"]].fillna(1) == 1).all(axis=1)
    f = f[sharded & plain]
    keys = f[KEYS].map(str).agg("|".join, axis=1)
    f = f.assign(sweep=keys).groupby(["sweep", "config.n_gpus"], as_index=False).agg(
        measured=("metrics.throughput_per_device", "median"), ideal=("ideal", "median"),
        fitted=("fitted", "median"))
    counts = f.groupby("sweep")["config.n_gpus"].transform("nunique")
    return f[counts > 1]


def trends(f: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for sweep, g in f.groupby("sweep"):
        g = g.sort_values("config.n_gpus")
        lo, hi = g.iloc[0], g.iloc[-1]
        rows.append({"sweep": sweep.replace("nan", "-")[:90], "gpus": f"{int(lo['config.n_gpus'])}->{int(hi['config.n_gpus'])}",
                     **{f"{k} %": 100 * (hi[k] / lo[k] - 1) for k in ("measured", "ideal", "fitted")}})
    out = pd.DataFrame(rows)
    for k in ("ideal", "fitted"):
        out[f"{k} gap"] = out[f"{k} %"] - out["measured %"]
    return out


def main() -> None:
    t = trends(sweeps())
    pd.set_option("display.width", 250)
    print(t.round(1).to_string(index=False))
    big = t["gpus"].str.split("->").str[1].astype(int) >= 128
    print(f"\n{len(t)} sweeps, {int(big.sum())} of them to 128 GPUs or more; trend in points, mean (and mean |gap|):")
    for name, part in (("all sweeps", t), ("to 128+ GPUs", t[big])):
        cells = [f"measured {part['measured %'].mean():+.1f}"] + [
            f"{k} {part[f'{k} %'].mean():+.1f} ({part[f'{k} gap'].abs().mean():.1f}; within 5 points "
            f"{int((part[f'{k} gap'].abs() <= 5).sum())} of {len(part)})" for k in ("ideal", "fitted")]
        print(f"  {name}: " + ", ".join(cells))


if __name__ == "__main__":
    main()
