"""``llm``: a Llama-style decoder trained with FSDP2, torchtitan-style, as one bundle.

=============== ===========================================================================
harness         :mod:`harness.workloads.llm` (the model and :func:`~harness.workloads.llm.parallelize`)
spaces          :mod:`.spaces`: ``llm-small`` (the default), ``llm-gpu``, ``megatron-a100``
cost model      the shared transformer model :class:`perfzoo.analytic.llm.LLMCost`, which also
                prices the vTrain and published-table records (same vocabulary)
vocabulary      the LLM keys of ``docs/architecture.md``
=============== ===========================================================================
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from perfzoo.analytic._frame import num
from perfzoo.analytic.llm import LLMCost
from perfzoo.workloads._base import WorkloadSpec
from perfzoo.workloads.llm.spaces import (GPU_HEAD_DIM, LLM_GPU, LLM_SMALL, MEGATRON_A100, llm_derived, llm_gpu_derived,
                                          megatron_space)


def claims(df: pd.DataFrame) -> np.ndarray:
    """The rows the LLM model prices: those with a ``hidden_dim``, an ``n_params`` or a size in the model name."""
    return ~np.isnan(num(df, "hidden_dim")) | ~np.isnan(LLMCost.size_hint(df))


def cost(df: pd.DataFrame) -> dict[str, np.ndarray]:
    """Every estimate of :class:`~perfzoo.analytic.llm.LLMCost`."""
    return LLMCost(df).columns()


SPEC = WorkloadSpec(
    name="llm",
    harness="harness.workloads.llm",
    throughput_unit="tokens/s",
    default_space="llm-small",
    spaces=(LLM_SMALL, LLM_GPU, MEGATRON_A100),
    cost=cost,
    claims=claims,
    size_keys=frozenset({
        "n_layers", "hidden_dim", "ffn_dim", "n_heads", "n_kv_heads", "vocab_size", "n_params", "n_experts",
        "experts_per_token", "seq_len", "global_batch_size", "micro_batch_size", "grad_accum", "n_gpus", "tp", "pp",
        "cp", "dp", "ep", "vp",
    }),
    optional_keys=frozenset({
        "model_name", "ffn_dim", "n_kv_heads", "vocab_size", "n_params", "n_experts", "experts_per_token",
        "grad_accum", "dp", "cp", "ep", "vp", "fsdp", "precision", "activation_checkpointing", "compile",
        "gated_mlp", "tie_embeddings", "sequence_parallel", "flash_attention", "zero_stage",
    }),
)

__all__ = ["GPU_HEAD_DIM", "LLM_GPU", "LLM_SMALL", "MEGATRON_A100", "SPEC", "claims", "cost", "llm_derived",
           "llm_gpu_derived", "megatron_space"]
