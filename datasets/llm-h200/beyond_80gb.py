"""Configs of the ``llm-gpu`` space for an H200 run that an 80 GB H100 cannot hold.

    python datasets/llm-h200/beyond_80gb.py > datasets/llm-h200/beyond-80gb-configs.jsonl

Every config that ran out of memory in ``datasets/llm-h100``, then uncompiled configs the analytic
memory model prices over an H100's memory and within an H200's (spread over that range), then two
it prices just over an H200's: the memory model's feasibility call is checked on both sides of
the larger card's limit.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from perfzoo import analytic, spaces
from perfzoo.datasets import load_dataset

H100 = ("H100-80GB", 79.18)  # memory visible to torch on the H100 of datasets/llm-h100
H200 = ("H200-141GB", 139.8)  # likewise on the lent H200


def fractions(configs: list[dict], template: pd.Series, accelerator: tuple[str, float]) -> np.ndarray:
    """The memory model's ``memory_fraction`` of each config on one accelerator."""
    rows = [{**template, **{f"config.{k}": v for k, v in c.items()},
             "hardware.accelerator": accelerator[0], "hardware.accelerator_memory_gib": accelerator[1]}
            for c in configs]
    return analytic.estimate(pd.DataFrame(rows))["memory_fraction"].to_numpy()


def main() -> None:
    space = spaces.get("llm-gpu")
    dims = [d.name for d in space.dimensions]
    h100 = load_dataset("llm-h100").frame
    template = h100.iloc[0][[c for c in h100.columns if c.startswith("hardware.")]]
    ooms = [{d: h100.at[i, f"config.{d}"] for d in dims} for i in h100.index[h100["status"] == "oom"]]
    drawn = [c for c in space.sample(6000, seed=5) if not c["compile"]]
    on_h100, on_h200 = fractions(drawn, template, H100), fractions(drawn, template, H200)
    between = np.flatnonzero((on_h100 > 1.05) & (on_h200 < 0.95))
    between = between[np.argsort(on_h200[between])][np.linspace(0, len(between) - 1, 6).astype(int)]
    over = np.flatnonzero((on_h200 > 1.02) & (on_h200 < 1.2))[:2]
    picked = ooms + [{d: drawn[i][d] for d in dims} for i in [*between, *over]]
    for c in picked:
        print(json.dumps({k: (v.item() if hasattr(v, "item") else v) for k, v in c.items()}))


if __name__ == "__main__":
    main()
