"""The kernel rates measured on a lent H100 (``rates-h100.jsonl``, ``kernel_rates.py``) beside
the rates the analytic model prices the same kernels at, on the accelerator table's figures.

    python docs/studies/kernel-rates-1128/compare.py [rates.jsonl] [--accelerator H100-80GB]

Model rates: a GEMM ``m x k x n`` at the roofline of :mod:`perfzoo.analytic.traffic` (its FLOPs at
the peak plus ``2 (mk + kn + mn)`` bytes per group at the HBM bandwidth); an attention core per
score ``4d`` FLOPs forward and ``10d`` backward (FlashAttention's recomputed scores included) at
the BF16 peak, plus one exponential forward and one backward at ``exp_tera_s`` and
:data:`perfzoo.analytic.traffic.SOFTMAX_OPS` fp32 operations at half the fp32 peak; a
FlashAttention-2 kernel (PyTorch's ``flash`` backend) ``fa2_slowdown`` times that.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pandas as pd

from perfzoo.analytic.traffic import SOFTMAX_OPS
from perfzoo.hardware.accelerators import spec


def gemm_model_tflops(hw, m: float, k: float, n: float, groups: float, width: float, peak: float) -> float:
    flops = 2 * groups * m * k * n
    moved = groups * width * (m * k + k * n) + groups * 2 * m * n
    return flops / (flops / peak + moved / hw.hbm_bw) / 1e12


def attention_model_tflops(hw, head_dim: float, backward: bool, fa2: bool) -> float:
    flops = 4 * head_dim * (3.5 if backward else 1.0)
    exps, ops = (2.0, sum(SOFTMAX_OPS)) if backward else (1.0, SOFTMAX_OPS[0])
    seconds = flops / hw.peak_flops["bf16"] + exps / hw.exp_rate + ops / (hw.peak_flops["fp32"] / 2)
    return flops / (seconds * (hw.fa2_slowdown if fa2 else 1.0)) / 1e12


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("rates", nargs="?", default=str(Path(__file__).with_name("rates-h100.jsonl")))
    ap.add_argument("--accelerator", default="H100-80GB")
    args = ap.parse_args()
    hw = spec(args.accelerator)
    lines = [json.loads(line) for line in open(args.rates)]
    print("environment:", lines[0])
    df = pd.DataFrame(lines[1:])
    pd.set_option("display.width", 200)

    g = df[df.kernel == "gemm"].copy()
    g["priced"] = [gemm_model_tflops(hw, r.m, r.k, r.n, 1, 1 if r.dtype == "fp8" else 2, hw.peak_flops[r.dtype])
                  for r in g.itertuples()]
    g["of peak"] = g.tflops * 1e12 / [hw.peak_flops[d] for d in g.dtype]
    g["measured/model"] = g.tflops / g.priced
    print("\n1. Dense GEMMs (TFLOP/s)\n")
    print(g[["dtype", "m", "k", "n", "tflops", "of peak", "priced", "measured/model"]].round(3).to_string(index=False))
    gemm_ratio = float(g[g.dtype == "bf16"]["measured/model"].median())

    a = df[(df.kernel == "attention") & df.tflops.notna()].copy()
    a["priced"] = [attention_model_tflops(hw, d, p == "forward+backward", b == "flash")
                  for d, p, b in zip(a.head_dim, a["pass"], a.backend)]
    a["vs GEMM"] = a.tflops / a.priced / gemm_ratio
    print(f"\n2. Attention cores, causal (measured / model, over the BF16 GEMMs' measured / model {gemm_ratio:.3f}: "
          "1 = the model prices attention against GEMMs as the card runs them)\n")
    causal = a[a.causal & (a.backend != "efficient")]
    table = causal.pivot_table(index=["head_dim", "seq"], columns=["backend", "pass"], values=["tflops", "vs GEMM"])
    print(table.round(2).to_string())
    ring = a[~a.causal & (a.backend == "cudnn")]
    print("\n   non-causal blocks (a context-parallel ring's steps), cudnn:")
    print(ring.pivot_table(index=["head_dim", "seq"], columns="pass", values=["tflops", "vs GEMM"]).round(2).to_string())

    e = df[df.kernel == "grouped_gemm"].copy()
    e["priced"] = [gemm_model_tflops(hw, r.tokens_per_expert, r.k, r.n, r.experts, 2, hw.peak_flops["bf16"])
                  for r in e.itertuples()]
    e["vs GEMM"] = e.tflops / e.priced / gemm_ratio
    print("\n3. Grouped expert GEMMs, BF16 (measured TFLOP/s, then measured / model over the dense GEMMs' ratio)\n")
    print(e.pivot_table(index=["model", "experts"], columns="tokens_per_expert", values="tflops").round(0).to_string())
    print()
    print(e.pivot_table(index=["model", "experts"], columns="tokens_per_expert", values="vs GEMM").round(2).to_string())

    scaled = Path(args.rates).with_name("rates-h100-gemms.jsonl")  # a second call: FP8 with per-row scales
    if scaled.exists():
        r = pd.DataFrame([json.loads(line) for line in open(scaled)][1:])
        r["scaling"] = r["scaling"].fillna("tensorwise")
        r["recipe"] = r.dtype + " " + r.scaling
        table = r.pivot_table(index=["m", "k", "n"], columns="recipe", values="tflops")
        table["rowwise / tensorwise"] = table["fp8 rowwise"] / table["fp8 tensorwise"]
        print(f"\n4. FP8 GEMMs with per-row scales ({scaled.name}, TFLOP/s)\n")
        print(table.round(2).to_string())

    recipes = Path(args.rates).with_name("rates-h200-recipes.jsonl")  # a third call, on an H200
    if recipes.exists():
        r = pd.DataFrame([json.loads(line) for line in open(recipes)][1:])
        r = r[r["linear"].notna() & r["tflops"].notna()]
        fp8 = r[r.dtype == "fp8"].pivot_table(index=["linear", "gemm", "m", "k", "n"], columns="scaling",
                                              values="seconds").reset_index()
        fp8["layers"] = fp8.linear.str.split(".").str[0]
        fp8["tokens"] = np.where(fp8.gemm == "wgrad", fp8.k, fp8.m)
        whole = fp8.groupby(["layers", "tokens"])[["tensorwise", "rowwise"]].sum()
        whole["rowwise / tensorwise"] = whole.tensorwise / whole.rowwise
        print(f"\n5. Each linear's three FP8 GEMMs (forward, data and weight gradient) per scaling, summed over "
              f"the model's linears ({recipes.name}; rate of rowwise over tensorwise)\n")
        print(whole["rowwise / tensorwise"].unstack().round(3).to_string())
        each = fp8.tensorwise / fp8.rowwise
        print(f"   per GEMM: median {each.median():.2f}, range {each.min():.2f}-{each.max():.2f} over {len(each)}; "
              f"blockwise: {r.scaling.eq('blockwise').sum()} timed "
              f"({sum('blockwise' in line for line in open(recipes))} tried)")


if __name__ == "__main__":
    main()
