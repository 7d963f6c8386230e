"""MosaicML's rows left out, priced with FlashAttention-2's A100 rate or without it: the held-out
``analytic`` ratio (predicted / measured) by sequence length, and every source's MAPE left out.

    python docs/studies/fa2-ampere-1128/fa2_ampere.py --slowdown 1.0,1.27

The A100 rows of the accelerator table get ``fa2_slowdown`` and ``flash_slowdown`` = each value in
turn (the table is read once per process, so each value runs in its own child process): every flash
kernel on an A100 takes it, as the model prices it since the change landed (1.27; 1.0 is the model
before it). About 20 s a value on a 2-core VM.
"""

from __future__ import annotations

import argparse
import dataclasses
import subprocess
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "loso-gap-1128"))
SHORT = {"megatron_lm_readme_scaling.csv": "Megatron-LM", "mosaicml_llmfoundry_benchmarks.csv": "MosaicML",
         "nvidia_megatron_bridge_perf_summary.csv": "Megatron-Bridge", "nvidia_nemo_perf_summary_2024.csv": "NeMo",
         "torchtitan_benchmarks.csv": "torchtitan"}


def one(slowdown: float) -> None:
    from perfzoo.hardware import accelerators

    def a100(s):
        if not s.name.startswith("A100"):
            return s
        return dataclasses.replace(s, fa2_slowdown=slowdown, flash_slowdown=slowdown)

    patched = tuple((m, a100(s)) for m, s in accelerators.table())
    accelerators.table = lambda: patched  # spec() looks the table up by this name

    from loso_gap import held_out_ratios, mape
    from perfzoo.datasets import load_dataset

    ds = load_dataset("published-llm").labelled().ok()
    f, X, y = ds.frame, ds.X, np.asarray(ds.y, float)
    src = f["annotations.file"].astype(str).to_numpy()
    print(f"A100 fa2_slowdown and flash_slowdown {slowdown:g}")
    for member in ("analytic", "hybrid"):
        r = held_out_ratios(X, y, src, member)
        print(f"  {member:8s} MAPE left out: " + ", ".join(f"{SHORT.get(s, s)} {mape(r[src == s]):.1f}"
                                                         for s in np.unique(src)))
        if member == "analytic":
            m = np.array(["mosaicml" in s for s in src])
            by = f[m].assign(r=r[m]).groupby("config.seq_len")["r"].median()
            print("  MosaicML, analytic pred/meas by seq_len: " + ", ".join(f"{int(k)} {v:.2f}" for k, v in by.items()))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--slowdown", default="1.0,1.27", help="A100 slowdowns, comma-separated")
    ap.add_argument("--one", type=float, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one is not None:
        one(args.one)
        return
    for value in args.slowdown.split(","):
        subprocess.run([sys.executable, __file__, "--one", value], check=True)


if __name__ == "__main__":
    main()
