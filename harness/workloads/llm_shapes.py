"""Sizes of the ``llm`` workload's model, from its config alone: pure arithmetic, no torch.

FLOPs per token are ``6 N + 12 L s d`` (N = non-embedding parameters; the attention term
counts the QK^T and AV matmuls, forward + backward, as in PaLM's appendix / torchtitan;
causal masking is not discounted). :mod:`perfzoo.workloads.llm.spaces` derives ``n_params`` from here
without importing torch.

>>> param_counts({"hidden_dim": 64, "n_layers": 2, "ffn_dim": 128, "n_heads": 4, "n_kv_heads": 2,
...               "vocab_size": 100})
(86848, 80448)
"""

from __future__ import annotations


def param_counts(config: dict) -> tuple[int, int]:
    """(all parameters, non-embedding parameters) of the model a config describes."""
    d, L, f = int(config["hidden_dim"]), int(config["n_layers"]), int(config["ffn_dim"])
    h, kv, v = int(config["n_heads"]), int(config["n_kv_heads"]), int(config["vocab_size"])
    hd = d // h
    block = d * h * hd + 2 * d * kv * hd + h * hd * d + 3 * d * f + 2 * d
    non_emb = L * block + d + d * v  # the output projection does matmul FLOPs: counted
    return non_emb + v * d, non_emb


def flops_per_token(config: dict) -> float:
    """Training FLOPs per token: 6 N (non-embedding) + 12 L s d (attention scores)."""
    _, non_emb = param_counts(config)
    return 6.0 * non_emb + 12.0 * int(config["n_layers"]) * int(config["seq_len"]) * int(config["hidden_dim"])
