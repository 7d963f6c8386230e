"""Megatron-Bridge (0.3): a recipe of ``megatron.bridge.recipes`` and dotted overrides of its
``ConfigContainer``, as its generic launcher ``scripts/training/run_recipe.py`` takes them::

    torchrun --standalone --nproc-per-node 8 scripts/training/run_recipe.py --recipe llama3_8b_pretrain_config \\
      model.tensor_model_parallel_size=2 model.pipeline_model_parallel_size=1 ... train.global_batch_size=64

The overrides (fields of megatron-bridge 0.3.1's ``ConfigContainer`` and megatron-core 0.16's
``TransformerConfig`` / ``DistributedDataParallelConfig`` / ``OptimizerConfig``):

* ``model.{tensor,pipeline,virtual_pipeline,context,expert}_model_parallel_size`` (``null``
  virtual stages for one), ``model.sequence_parallel``;
* ``train.micro_batch_size``, ``train.global_batch_size``, ``model.seq_length`` and
  ``dataset.sequence_length`` (the field behind the recipes' ``dataset.seq_length``; the bridge checks they agree);
* ``model.recompute_granularity`` / ``recompute_method`` / ``recompute_num_layers``;
* ``ddp.use_distributed_optimizer`` and ``optimizer.use_distributed_optimizer`` (both: the
  bridge turns both on when either is), ``ddp.use_megatron_fsdp`` and
  ``ddp.data_parallel_sharding_strategy``;
* ``mixed_precision``: ``bf16_mixed`` or ``bf16_with_fp8_current_scaling_mixed``;
* what the cost model assumes of the framework, as it priced the layout (:func:`priced`):
  ``model.tp_comm_overlap`` (Transformer Engine's userbuffers overlap of the TP communication; a
  recipe's own ``comm_overlap`` block, which the recipes that have one turn on, sets it again) and
  ``ddp.grad_reduce_in_fp32`` (``megatron-bridge``: false, as its performance recipes run;
  ``nemo``: true, NeMo 2.0's default).

The model comes from the recipe (:data:`RECIPES`), a Hugging Face ``config.json``'s too where it
gives a catalog model's shape (:func:`~perfzoo.frameworks._base.catalog_model`); a plan of a model
without one is refused at the start (``--framework megatron-lm`` writes any shape). NeMo 2.0 runs the same
Megatron-Core and is priced as ``nemo``; its launch lines are this package's (NeMo's LLM
training moved to Megatron-Bridge), so ``--framework nemo --export`` writes these, with the
overrides above as ``nemo`` is priced.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import pandas as pd

from perfzoo.analytic.llm import LLMCost
from perfzoo.analytic.memory import FP32_BYTES
from perfzoo.frameworks._base import ExportError, Framework, catalog_model

# catalog model -> megatron-bridge 0.3.1 recipe (megatron.bridge.recipes)
RECIPES = {
    "llama2-7b": "llama2_7b_pretrain_config", "llama3-8b": "llama3_8b_pretrain_config",
    "llama3-70b": "llama3_70b_pretrain_config", "llama3.1-405b": "llama31_405b_pretrain_config",
    "llama3.2-1b": "llama32_1b_pretrain_config", "llama3.2-3b": "llama32_3b_pretrain_config",
    "qwen3-4b": "qwen3_4b_pretrain_config", "qwen3-8b": "qwen3_8b_pretrain_config",
    "qwen3-14b": "qwen3_14b_pretrain_config", "qwen3-32b": "qwen3_32b_pretrain_config",
    "qwen3-30b-a3b": "qwen3_30b_a3b_pretrain_config", "qwen3-235b-a22b": "qwen3_235b_a22b_pretrain_config",
    "qwen2.5-7b": "qwen25_7b_pretrain_config", "qwen2.5-14b": "qwen25_14b_pretrain_config",
    "qwen2.5-32b": "qwen25_32b_pretrain_config", "qwen2.5-72b": "qwen25_72b_pretrain_config",
    "deepseek-v2-lite": "deepseek_v2_lite_pretrain_config", "deepseek-v2": "deepseek_v2_pretrain_config",
    "deepseek-v3": "deepseek_v3_pretrain_config", "kimi-k2": "kimi_k2_pretrain_config",
    "glm4.5": "glm45_355b_pretrain_config", "glm4.5-air": "glm45_air_106b_pretrain_config",
    "gpt-oss-20b": "gpt_oss_20b_pretrain_config", "gpt-oss-120b": "gpt_oss_120b_pretrain_config",
    "gemma2-2b": "gemma2_2b_pretrain_config", "gemma2-9b": "gemma2_9b_pretrain_config",
    "gemma2-27b": "gemma2_27b_pretrain_config", "olmoe-1b-7b": "olmoe_7b_pretrain_config",
    "nemotron-h-8b": "nemotronh_8b_pretrain_config", "nemotron-h-47b": "nemotronh_47b_pretrain_config",
    "nemotron-h-56b": "nemotronh_56b_pretrain_config", "nemotron-3-nano": "nemotron_3_nano_pretrain_config",
}
MIXED_PRECISION = {"bf16": "bf16_mixed", "fp8": "bf16_with_fp8_current_scaling_mixed"}
RECOMPUTE = {"none": ("null", "null", "null"), "selective": ("selective", "null", "null"),
             "full": ("full", "uniform", "1")}
FSDP_STRATEGY = {"full_shard": "optim_grads_params", "shard_grad_op": "optim_grads"}


def _flag(value: bool) -> str:
    return "true" if value else "false"


def priced(c: Mapping[str, Any]) -> dict[str, bool]:
    """What the cost model assumed of layout ``c``'s framework (its ``framework`` key) where pricing it:
    ``tp_comm_overlap`` and ``grad_reduce_in_fp32`` (gradients of 4 bytes, not 2)."""
    cost = LLMCost(pd.DataFrame([dict(c)]))
    return {"tp_comm_overlap": bool(cost.tp_overlap[0]),
            "grad_reduce_in_fp32": bool(cost.memory.bytes_per_param()[1][0] == FP32_BYTES[1])}


class MegatronBridge(Framework):
    name = "megatron-bridge"
    entry = ("scripts/training/run_recipe.py",)
    version = "0.3.1"

    def check_export(self, model: Mapping[str, Any], precisions: Sequence[str]) -> None:
        super().check_export(model, precisions)
        name, unlike = catalog_model(model, RECIPES)
        if name is None:
            raise ExportError(f"--export for {self.name}: Megatron-Bridge takes the model from a recipe, and perfzoo "
                              f"knows none for {model.get('model_name')}{unlike} (those it knows: "
                              f"{', '.join(RECIPES)}); --framework megatron-lm writes any shape")

    def overrides(self, c: Mapping[str, Any]) -> dict[str, str]:
        """The layout as ``ConfigContainer`` overrides, key -> value as the launcher takes them."""
        tp, pp, vp, cp, ep, dp = (int(c[k]) for k in ("tp", "pp", "vp", "cp", "ep", "dp"))
        granularity, method, layers = RECOMPUTE[str(c["activation_checkpointing"])]
        fsdp = str(c["fsdp"])
        distributed = fsdp in ("zero1", *FSDP_STRATEGY) or (fsdp == "none" and dp * cp > 1)
        seq = str(int(c["seq_len"]))
        assumed = priced(c)
        return {
            "model.tensor_model_parallel_size": str(tp), "model.pipeline_model_parallel_size": str(pp),
            "model.virtual_pipeline_model_parallel_size": str(vp) if vp > 1 else "null",
            "model.context_parallel_size": str(cp), "model.expert_model_parallel_size": str(ep),
            "model.sequence_parallel": _flag(tp > 1), "model.seq_length": seq, "dataset.sequence_length": seq,
            "train.micro_batch_size": str(int(c["micro_batch_size"])),
            "train.global_batch_size": str(int(c["global_batch_size"])),
            "model.recompute_granularity": granularity, "model.recompute_method": method,
            "model.recompute_num_layers": layers,
            "ddp.use_distributed_optimizer": _flag(distributed),
            "optimizer.use_distributed_optimizer": _flag(distributed),
            "ddp.use_megatron_fsdp": _flag(fsdp in FSDP_STRATEGY),
            "ddp.data_parallel_sharding_strategy": FSDP_STRATEGY.get(fsdp, "no_shard"),
            "mixed_precision": MIXED_PRECISION[str(c["precision"])],
            "model.tp_comm_overlap": _flag(assumed["tp_comm_overlap"]),
            "ddp.grad_reduce_in_fp32": _flag(assumed["grad_reduce_in_fp32"]),
        }

    def arguments(self, c: Mapping[str, Any]) -> list[str]:
        return ["--recipe", RECIPES[catalog_model(c, RECIPES)[0]], *(f"{k}={v}" for k, v in self.overrides(c).items())]


FRAMEWORK = MegatronBridge()

__all__ = ["FRAMEWORK", "MIXED_PRECISION", "MegatronBridge", "RECIPES", "priced"]
