"""``llm``: a Llama-style decoder trained with FSDP2, torchtitan-style, as one bundle.

=============== ===========================================================================
harness         :mod:`harness.workloads.llm` (the model and :func:`~harness.workloads.llm.parallelize`)
spaces          :mod:`.spaces`: ``llm-small`` (the default), ``llm-gpu``, ``megatron-a100``
cost model      the shared transformer model :class:`perfzoo.analytic.llm.LLMCost`, which also
                prices the vTrain and published-table records (same vocabulary)
vocabulary      the LLM keys below, shared by the harness's jobs, vTrain and the published tables
=============== ===========================================================================

The LLM config vocabulary (a config is a flat dict of scalars; ``None`` where unknown):

===========================  ======================================================================
``model_name``               the model's name as published, or a generated one (optional)
``n_layers``, ``hidden_dim``  the model's shape; also ``ffn_dim``, ``n_heads``, ``n_kv_heads``,
                             ``vocab_size``
``n_params``                 the parameter count where published (optional; estimated otherwise)
``n_experts``                mixture of experts: experts per layer, with ``experts_per_token``
                             (optional)
``seq_len``                  sequence length (tokens)
``global_batch_size``        sequences per optimizer step, all ranks together
``micro_batch_size``         sequences per forward/backward on one data-parallel rank
``grad_accum``               micro-batches per step
``n_gpus``                   devices in the job (GPUs, or CPU ranks); ``tp * pp * cp * dp = n_gpus``
``tp``, ``pp``, ``cp``       tensor / pipeline / context parallel degrees; also ``dp`` (data),
                             ``ep`` (expert) and ``vp`` (virtual pipeline stages)
``fsdp``                     ``full_shard``, ``shard_grad_op``, ``no_shard``, ``hybrid_shard`` or
                             ``none`` (no FSDP, e.g. Megatron's data parallelism)
``precision``                ``fp32``, ``fp16``, ``bf16``, ``fp8``, ``mxfp8``, ``nvfp4``
``activation_checkpointing``  ``none``, ``selective``, ``full``
``compile``                  ``torch.compile`` on (``True``), off (``False``), unknown (``None``)
===========================  ======================================================================

The record's ``hardware.accelerator`` is the device model (``cpu`` for CPU ranks; GPUs as
``A100-80GB``, ``H100-80GB``, ...), ``hardware.accelerator_count`` the devices in the job.
:data:`SPEC` says which keys are sizes (``size_keys``: features add their log2) and which a config
may leave out (``optional_keys``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from perfzoo.analytic._frame import num
from perfzoo.analytic.llm import LLMCost
from perfzoo.workloads._base import WorkloadSpec
from perfzoo.workloads.llm.spaces import (GPU_HEAD_DIM, LLM_GPU, LLM_SMALL, MEGATRON_A100, harness_recipe, llm_derived,
                                          llm_gpu_derived, megatron_space)


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
        "gated_mlp", "tie_embeddings", "sequence_parallel", "flash_attention", "tp_comm_overlap", "zero_stage",
        # the shape keys of MoE, MLA, MTP, sliding-window, hybrid Mamba and linear-attention models
        # (perfzoo.llmconfig.catalog.SHAPE_KEYS)
        "head_dim", "moe_ffn_dim", "n_shared_experts", "shared_ffn_dim", "n_dense_layers", "q_lora_rank",
        "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim", "mtp_layers", "sliding_window",
        "n_sliding_layers", "n_attention_layers", "n_mamba_layers", "mamba_heads", "mamba_head_dim",
        "mamba_state_dim", "mamba_groups", "n_linear_layers", "linear_key_heads", "linear_value_heads",
        "linear_key_head_dim", "linear_value_head_dim", "linear_conv_kernel", "moe_capacity_factor",
        "moe_token_drop", "etp", "moe_dispatcher", "moe_recompute", "moe_a2a_overlap", "moe_shared_expert_overlap",
        "framework", "bf16_layers",
        "fused_loss", "low_precision_backward",
    }),
    implied=harness_recipe,
)

__all__ = ["GPU_HEAD_DIM", "LLM_GPU", "LLM_SMALL", "MEGATRON_A100", "SPEC", "claims", "cost", "harness_recipe",
           "llm_derived", "llm_gpu_derived", "megatron_space"]
