"""How much of a step is memory-bound, read from the configs that ran on both an H100 and an H200.

    python docs/studies/eager-step-1128/memory_share.py

The two cards have the same dense peak FLOP/s (989 TFLOP/s BF16) and differ in HBM bandwidth
(3.35 and 4.8 TB/s), so the measured H200 / H100 throughput of one config tells how much of its
step waited on memory. Printed: the measured ratio, the analytic model's, and the share of the H100
step the model prices as memory-bound (HBM traffic and the optimizer step), medians. Only configs
with an H100 step of at least 0.4 s, where the hosts' pace does not show (docs/studies/host-pace-1127).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from perfzoo import analytic
from perfzoo.datasets import load_dataset
from perfzoo.evaluation.hardware import paired_jobs

MIN_STEP_S = 0.4


def main() -> None:
    h100_set = load_dataset("llm-h100")
    h100, h200 = paired_jobs(h100_set, load_dataset("llm-h200"))
    target = h100_set.target
    est100, est200 = analytic.estimate(h100), analytic.estimate(h200)
    step = np.asarray(est100["step_time_s"])
    pairs = pd.DataFrame({
        "compile": h100["config.compile"].astype(str).to_numpy(),
        "precision": h100["config.precision"].astype(str).to_numpy(),
        "measured": h200[target].astype(float).to_numpy() / h100[target].astype(float).to_numpy(),
        "analytic": step / np.asarray(est200["step_time_s"]),
        "memory_share": (np.asarray(est100["memory_time_s"]) + np.asarray(est100["optimizer_time_s"])) / step,
    })[h100["metrics.step_time_p50_s"].astype(float).to_numpy() >= MIN_STEP_S]
    columns = ["measured", "analytic", "memory_share"]
    rows = [{"jobs": "all", "configs": len(pairs), **pairs[columns].median()}]
    for (compile_, precision), g in pairs.groupby(["compile", "precision"]):
        rows.append({"jobs": f"compile {compile_}, {precision}", "configs": len(g), **g[columns].median()})
    print(f"configs run ok on both cards, H100 step >= {MIN_STEP_S} s; medians\n")
    print(pd.DataFrame(rows).round(3).to_string(index=False))


if __name__ == "__main__":
    main()
