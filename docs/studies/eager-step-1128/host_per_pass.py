"""What the host takes per layer pass in perfzoo's eager llm jobs, by precision and checkpointing.

    python docs/studies/eager-step-1128/host_per_pass.py

For the jobs of ``llm-h100`` and ``llm-h200`` that ran without ``compile`` and whose GPU work the
analytic model prices at under 2 ms per layer pass (forward and backward of one layer on one
micro-batch), the step is the host's: measured step time / layer passes, median per group; and the
ATen operators per layer pass that ``kernel_profile.py`` counted on a CPU
(``host-ops-cpu.jsonl``: the same bf16 blocks at 8 and 16 layers; the difference over 8 layers).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from perfzoo import analytic
from perfzoo.datasets import load_dataset

HERE = Path(__file__).parent


def host_ms_per_pass(name: str) -> pd.DataFrame:
    ds = load_dataset(name).labelled().ok()
    est = analytic.estimate(ds.X)
    passes = np.asarray(est["layer_passes"])
    gpu = np.asarray(est["step_time_s"]) - np.asarray(est["host_time_s"])
    f = ds.frame
    jobs = pd.DataFrame({"precision": f["config.precision"].to_numpy(),
                         "checkpointing": f["config.activation_checkpointing"].to_numpy(),
                         "eager": ~f["config.compile"].astype(bool).to_numpy(),
                         "ms": 1e3 * f["metrics.step_time_p50_s"].astype(float).to_numpy() / passes,
                         "gpu_ms": 1e3 * gpu / passes})
    bound = jobs[jobs["eager"] & (jobs["gpu_ms"] < 2.0)]
    return bound.groupby(["precision", "checkpointing"])["ms"].agg(["size", "median"]).rename(
        columns={"size": f"{name} jobs", "median": f"{name} ms/pass"})


def ops_per_pass() -> pd.Series:
    runs = [json.loads(line) for line in (HERE / "host-ops-cpu.jsonl").read_text().splitlines()]
    ops = {(r["config"]["activation_checkpointing"], r["config"]["n_layers"]): r["aten_ops"] for r in runs}
    return pd.Series({ac: (ops[(ac, 16)] - ops[(ac, 8)]) / 8 for ac in ("none", "full", "selective")},
                     name="ATen ops per layer pass (bf16, CPU count)")


def main() -> None:
    print(pd.concat([host_ms_per_pass("llm-h100"), host_ms_per_pass("llm-h200")], axis=1).round(2).to_string())
    print()
    print(ops_per_pass().to_string())


if __name__ == "__main__":
    main()
