"""Mixture-of-experts layers: their parameters, the tokens each expert rank computes, and the
tokens expert parallelism moves.

An MoE layer (``n_experts`` ``E`` > 1) replaces the dense MLP of all but ``n_dense_layers`` FFN
layers (DeepSeek-V3's first 3, Kimi-K2's first; every other one in Llama 4 Maverick: the cost
counts them, wherever they sit) with ``E`` routed experts of width
``moe_ffn_dim`` ``fe`` (default the dense ``ffn_dim``: Mixtral's convention), of which each token
visits ``K = experts_per_token``, plus always-on shared experts of total width
``shared_ffn_dim`` (default ``n_shared_experts * fe``) and a router, a ``d x E`` matrix
(DeepSeekMoE, Dai et al. 2024; Megatron-Core ``MoELayer``). Parameters per MoE layer:
``E*g*d*fe + g*d*fs + d*E`` (``g`` = 3 matrices when gated, else 2); the ones a token's matmuls
touch: ``K*g*d*fe + g*d*fs`` (the router is counted with the LM head: it stays in BF16).

Expert load (``moe_capacity_factor``, default 1): the busiest expert rank computes that many times
the balanced ``K`` tokens' worth. With token dropping (``moe_token_drop``, "tokendrop" in a
published name) it is the capacity factor, each expert padded to ``CF * K * tokens / E`` tokens
(Megatron-Core's ``moe_expert_capacity_factor`` with ``moe_pad_expert_input_to_capacity``;
Megatron-Bridge's token-drop recipes use 1.0); dropless, it is the imbalance max/mean of the
expert ranks' loads. The default 1.0 is a balanced router, which is what the published
Megatron-Bridge MoE benchmarks force ("we force-balance the token distribution among experts and
all benchmarks are token-dropless"; their 25.09 token-drop rows pad to capacity 1.0). The factor
stretches the routed experts' compute (hardware FLOPs, not model FLOPs) and the tokens dispatched.

Token dispatch and combine (:meth:`MoE.routed_tokens`): every routed copy of a token goes to the
rank holding its expert and back, forward and backward: 4 all-to-alls per MoE layer and
micro-batch of ``K * CF`` copies of each local token, ``(ep-1)/ep`` of them leaving the device
(Megatron-Core's all-to-all dispatcher; DeepEP / HybridEP move the same bytes).

>>> moe = MoE(pd.DataFrame([{"n_experts": 8, "experts_per_token": 2}]), np.array(64.0), np.array(256.0),
...           np.array(3.0), np.array(4.0))
>>> float(moe.layer_params[0])  # 8 experts x 3*64*256 + router 64*8
393728.0
"""

from __future__ import annotations

from functools import cached_property

import numpy as np
import pandas as pd

from perfzoo.analytic._frame import num


class MoE:
    """The MoE layers of each row (zeros where a row is dense)."""

    def __init__(self, df: pd.DataFrame, d: np.ndarray, f: np.ndarray, g: np.ndarray, L_ffn: np.ndarray):
        E = num(df, "n_experts")
        self.E = np.where(np.isnan(E) | (E < 1), 1.0, E)
        self.is_moe = self.E > 1
        K = num(df, "experts_per_token")
        self.K = np.where(self.is_moe, np.where(np.isnan(K), 1.0, np.minimum(K, self.E)), 0.0)
        fe = num(df, "moe_ffn_dim")
        self.fe = np.where(np.isnan(fe), f, fe)
        shared = num(df, "shared_ffn_dim")
        self.fs = np.where(self.is_moe, np.where(np.isnan(shared), num(df, "n_shared_experts", 0.0) * self.fe,
                                                 shared), 0.0)
        dense = num(df, "n_dense_layers", 0.0)
        self.L_moe = np.where(self.is_moe, np.maximum(L_ffn - dense, 0.0), 0.0)
        cf = num(df, "moe_capacity_factor", 1.0)
        self.capacity = np.where(self.is_moe, np.maximum(cf, 0.0), 1.0)
        self.d, self.g = d, g

    @cached_property
    def routed_params(self) -> np.ndarray:
        """Parameters of one layer's routed experts (all ``E``)."""
        return np.where(self.is_moe, self.E * self.g * self.d * self.fe, 0.0)

    @cached_property
    def router_params(self) -> np.ndarray:
        return np.where(self.is_moe, self.d * self.E, 0.0)

    @cached_property
    def shared_params(self) -> np.ndarray:
        return self.g * self.d * self.fs

    @cached_property
    def layer_params(self) -> np.ndarray:
        """Parameters of one MoE layer's FFN: experts, shared experts, router."""
        return self.routed_params + self.shared_params + self.router_params

    @cached_property
    def routed_active_params(self) -> np.ndarray:
        """Routed-expert parameters one token's matmuls touch (``K`` experts)."""
        return self.K * self.g * self.d * self.fe

    @cached_property
    def active_params(self) -> np.ndarray:
        """Expert parameters one token's matmuls touch: ``K`` routed experts and the shared ones."""
        return self.routed_active_params + self.shared_params

    @cached_property
    def padding_params(self) -> np.ndarray:
        """Extra routed-expert parameters per token the busiest rank computes (capacity factor - 1)."""
        return (self.capacity - 1.0) * self.routed_active_params

    def routed_tokens(self, tokens: np.ndarray) -> np.ndarray:
        """Copies of ``tokens`` local tokens that dispatch sends to experts (``K * CF`` each)."""
        return self.K * self.capacity * tokens
