"""Measured kernel time per class against what the analytic model prices for it, on both cards.

    python docs/studies/eager-step-1128/per_class.py

Reads ``profile-h100.jsonl`` and ``profile-h200.jsonl`` (``kernel_profile.py`` on a lent
H100 and H200, 2026-11-28: the configs of ``gpu-profile-configs.jsonl``) and prints, per
config and card, milliseconds per step of each kernel class measured and as the analytic model
prices it at the datasheet's peaks and bandwidth and eager kernels at ``eager_tb_s`` (no efficiency
fitted): GEMMs (compute + operand bytes), elementwise and reduction kernels (casts included), the
loss, the optimizer, attention (core + softmax). The records' FP8 recipe is the harness's
(``low_precision_backward`` false, as the store reads them).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from perfzoo.analytic.llm import LLMCost
from perfzoo.analytic.memory import EAGER
from perfzoo.workloads.llm import harness_recipe

HERE = Path(__file__).parent
CARDS = {"H100-80GB": "profile-h100.jsonl", "H200": "profile-h200.jsonl"}


def priced(config: dict, accelerator: str) -> dict[str, float]:
    """Milliseconds per step of each class as the model prices them (one row, one device)."""
    c = LLMCost(pd.DataFrame([{**config, **harness_recipe(config), "accelerator": accelerator}]))
    hw, tr = c.hw, c.traffic
    parts = c.flops_parts(causal=True, recompute=True, executed=True)
    tokens = c.tokens_per_step() / c.n_gpus
    q = c.linear_bf16_share()  # perfzoo's FP8 recipe: the backward GEMMs in BF16
    eager_bw = np.where(tr.profile == EAGER, hw.eager_bw, hw.hbm_bw)
    ms = {
        "gemm": parts["linear"] * tokens * ((1 - q) / hw.peak + q / hw.peak_bf16) + parts["head"] * tokens / hw.peak_bf16
        + c.m * tr.gemm_bytes() / hw.hbm_bw,
        "elementwise": c.m * tr.elementwise_bytes() / eager_bw,
        "loss": c.m * tr.loss_bytes() / hw.hbm_bw,
        "optimizer": tr.optimizer_bytes() / hw.hbm_bw,
        "attention": parts["attention"] * tokens * c.attention_x / hw.peak_bf16 + tr.seconds()["softmax_time_s"],
    }
    return {k: 1e3 * float(np.asarray(v).ravel()[0]) for k, v in ms.items()}


def main() -> None:
    rows = []
    for accelerator, name in CARDS.items():
        for line in (HERE / name).read_text().splitlines():
            run = json.loads(line)
            if "class_ms" not in run or run.get("error"):
                continue
            cfg, got = run["config"], run["class_ms"]
            model = priced(cfg, accelerator)
            measured = {**got, "elementwise": got.get("elementwise", 0.0) + got.get("reduce", 0.0)}
            label = (f"{cfg['n_layers']}x{cfg['hidden_dim']} s{cfg['seq_len']} b{cfg['micro_batch_size']} "
                     f"{cfg['precision']} {cfg['activation_checkpointing']}")
            rows.append({"card": accelerator, "config": label, "step ms": round(1e3 * run["step_s"]),
                         **{f"{k} meas/model": f"{measured.get(k, 0.0):.0f}/{v:.0f}" for k, v in model.items()}})
    pd.set_option("display.width", 250)
    print(pd.DataFrame(rows).to_string(index=False))


if __name__ == "__main__":
    main()
