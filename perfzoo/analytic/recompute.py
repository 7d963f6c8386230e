"""Module-level recompute (``moe_recompute``): the modules Megatron-Core's selective recompute
re-runs in the backward (``recompute_modules``), what each frees and what it costs again.

``moe_recompute`` is a comma-separated list of Megatron-Core's module names (TransformerConfig
``recompute_modules``; ``none``: no module); each frees activations per local token of a layer (:mod:`.memory`'s fused
profile, ``q`` bytes per element of a low-precision GEMM input) and, where it holds matmuls, adds their
forward FLOPs to what the kernels execute (2 FLOPs per parameter and token):

* ``core_attn``: the attention core (what ``selective`` checkpointing already drops).
* ``moe_act``: the routed experts' activation function: its output, fc2's input, ``q*fe`` per routed copy.
* ``shared_experts``: the shared experts' MLP (fc1's output and fc2's input), forward ``2*g*d*fs``.
* ``layernorm``: the two norms of a layer: their outputs, ``q*d`` each.
* ``mla_up_proj``: MLA's up-projections and RoPE: the queries, keys and values they make
  ``2*(a*h_qk + a*h_qk + a*h_v)``, forward ``2*(ql*a*h_qk + kvl*a*(h_qk - rope + h_v))``.
* ``mlp``: a dense layer's MLP, forward ``2*mlp_params``; ``moe``: the whole MoE layer (router,
  permuted copies, experts and shared experts), forward ``2*active_params``.

The names apply where Megatron-Core's fused kernels run (a row of any other profile, or with full
checkpointing, frees nothing here). An unknown name is refused.

>>> import pandas as pd
>>> from perfzoo.analytic.llm import LLMCost
>>> row = {"n_layers": 2, "hidden_dim": 64, "n_heads": 4, "seq_len": 32, "n_experts": 4, "experts_per_token": 2,
...        "n_shared_experts": 1, "moe_recompute": "shared_experts,layernorm"}
>>> r = LLMCost(pd.DataFrame([row])).recompute
>>> float(r.forward_flops_per_token()[0])  # 2 MoE layers x 2 FLOPs x 2*64*256 shared-expert weights (plain MLP)
131072.0
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from perfzoo.analytic._frame import mapped
from perfzoo.console import InputError

MODULES = ("core_attn", "moe_act", "shared_experts", "layernorm", "mla_up_proj", "mlp", "moe")


def _names(value) -> frozenset:
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return frozenset()
    names = frozenset(n.strip().lower() for n in str(value).replace(";", ",").split(",") if n.strip()) - {"none"}
    unknown = sorted(names - set(MODULES))
    if unknown:
        raise InputError(f"moe_recompute names {unknown[0]!r}, not a module perfzoo prices: "
                         f"give a comma-separated list of {', '.join(MODULES)}")
    return names


class ModuleRecompute:
    """Each row's recomputed modules (``on[name]``: a bool array) and what they free and cost."""

    def __init__(self, cost, df: pd.DataFrame):
        self.c = cost
        self.on = {m: mapped(df, "moe_recompute", lambda v, m=m: m in _names(v), dtype=bool) for m in MODULES}

    def freed_bytes(self, q: np.ndarray, fused: np.ndarray) -> dict[str, np.ndarray]:
        """Bytes per local token each kind of layer (``attention``, ``mlp``, ``moe``) no longer keeps
        (before TP sharing), where the fused profile runs (``fused``)."""
        sh = self.c.shape
        moe, d, a = sh.moe, sh.d, sh.a
        g_up = np.where(sh.gated > 0, 4.0, 2.0)
        norm = np.where(self.on["layernorm"], q * d, 0.0)
        up = np.where(self.on["mla_up_proj"] & sh.mla, 2.0 * a * (2.0 * sh.h_qk + sh.h_v), 0.0)
        act = np.where(self.on["moe_act"], moe.K * moe.capacity * q * moe.fe, 0.0)
        shared = np.where(self.on["shared_experts"] & (moe.fs > 0), (g_up + q) * moe.fs, 0.0)
        whole_moe = moe.K * moe.capacity * ((2.0 + q) * d + (g_up + q) * moe.fe) + 8.0 * moe.E + (g_up + q) * moe.fs
        moe_freed = np.where(self.on["moe"], whole_moe, act + shared)
        mlp_freed = np.where(self.on["mlp"], (g_up + q) * sh.f, 0.0)
        return {k: np.where(fused, v, 0.0) for k, v in
                {"attention": norm + up, "mlp": norm + mlp_freed, "moe": norm + moe_freed}.items()}

    def forward_flops_per_token(self) -> np.ndarray:
        """The recomputed modules' matmul FLOPs per token, all layers (one forward of each)."""
        sh = self.c.shape
        moe = sh.moe
        moe_layers = moe.L_moe + np.where(moe.L_moe > 0, sh.mtp, 0.0)
        attention = sh.L_attn + sh.mtp
        rope = sh.rope
        mla_up = np.where(sh.mla, sh.ql * sh.a * sh.h_qk + sh.kvl * sh.a * (sh.h_qk - rope + sh.h_v), 0.0)
        shared = np.where(self.on["moe"], moe.active_params, np.where(self.on["shared_experts"], moe.shared_params, 0.0))
        dense = (sh.L_ffn - moe.L_moe) * sh.mlp_params
        return 2.0 * (moe_layers * shared + np.where(self.on["mla_up_proj"], attention * np.nan_to_num(mla_up), 0.0)
                      + np.where(self.on["mlp"], dense, 0.0))


__all__ = ["MODULES", "ModuleRecompute"]
