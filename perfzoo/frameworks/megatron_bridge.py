"""Megatron-Bridge (0.3): a recipe of ``megatron.bridge.recipes`` and dotted overrides of its
``ConfigContainer``, as its generic launcher ``scripts/training/run_recipe.py`` takes them::

    torchrun --standalone --nproc-per-node 8 scripts/training/run_recipe.py --recipe llama3_8b_pretrain_config \\
      model.tensor_model_parallel_size=2 model.pipeline_model_parallel_size=1 ... train.global_batch_size=64

The overrides (fields of megatron-bridge 0.3.1's ``ConfigContainer`` and megatron-core 0.16's
``TransformerConfig`` / ``DistributedDataParallelConfig`` / ``OptimizerConfig``):

* ``model.{tensor,pipeline,virtual_pipeline,context,expert}_model_parallel_size`` (``null``
  virtual stages for one), ``model.sequence_parallel``; ``model.pipeline_model_parallel_layout``
  where the stages do not divide the layers (:func:`perfzoo.frameworks.megatron_lm.layer_layout`,
  ``null`` where they do: a recipe's own layout, DeepSeek-V3's, is for its own degrees);
* ``train.micro_batch_size``, ``train.global_batch_size``, ``model.seq_length`` and
  ``dataset.sequence_length`` (the field behind the recipes' ``dataset.seq_length``; the bridge checks they agree);
* ``model.recompute_granularity`` / ``recompute_method`` / ``recompute_num_layers``;
* ``ddp.use_distributed_optimizer`` and ``optimizer.use_distributed_optimizer`` (both: the
  bridge turns both on when either is), ``ddp.use_megatron_fsdp`` and
  ``ddp.data_parallel_sharding_strategy``;
* ``mixed_precision``: ``bf16_mixed`` or ``bf16_with_fp8_current_scaling_mixed``;
* what the cost model assumes of the framework, as it priced the layout (:func:`priced`, from the
  bundle's declarations and the layout's own keys, as :mod:`perfzoo.analytic` reads them):
  ``model.tp_comm_overlap`` (Transformer Engine's userbuffers overlap of the TP communication;
  ``comm_overlap.tp_comm_overlap`` where the recipe has a ``comm_overlap`` block of its own,
  :data:`COMM_OVERLAP_RECIPES`, whose value its setup writes over the model's) and
  ``ddp.grad_reduce_in_fp32`` (``megatron-bridge``: false, as its performance recipes run;
  ``nemo``: true, NeMo 2.0's default);
* an MoE layout's MoE fields (:func:`moe_overrides`), its dispatch overlaps written either way as priced (the
  layout's keys, else the bundle's traits: off): ``model.moe_shared_expert_overlap`` (the DeepSeek, Kimi and GLM
  providers turn it on, and the recipes off only under the flex dispatcher) and the A2A overlap,
  ``model.overlap_moe_expert_parallel_comm``, or ``comm_overlap.overlap_moe_expert_parallel_comm`` where the
  recipe has a ``comm_overlap`` block (:data:`COMM_OVERLAP_RECIPES`), which sets the model's field again.

The model comes from the recipe (:data:`RECIPES`), a Hugging Face ``config.json``'s too where it
gives a catalog model's shape (:func:`perfzoo.plan.export.catalog_model`); a plan of a model
without one is refused at the start (``--framework megatron-lm`` writes any shape). NeMo 2.0 runs the same
Megatron-Core and is priced as ``nemo``; its launch lines are this package's (NeMo's LLM
training moved to Megatron-Bridge), so ``--framework nemo --export`` writes these, with the
overrides above as ``nemo`` is priced.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Mapping, Optional, Sequence

from perfzoo.frameworks import megatron_lm
from perfzoo.frameworks._base import ExportError
from perfzoo.frameworks.megatron_lm import MegatronCore, layer_layout

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


# the shardings Megatron's own data parallelism runs (bf16 parameters, a main-gradient buffer the bundle's
# grad_reduce_dtype holds); under torch FSDP and DDP's no_shard gradients are fp32 whatever the recipe says
MEGATRON_DP = ("none", "zero1")


# the MoE recipes (0.3.1) with a comm_overlap block of their own, CommOverlapConfig(tp_comm_overlap=False), whose
# tp_comm_overlap and overlap_moe_expert_parallel_comm (unset: off) its setup writes over the model's
COMM_OVERLAP_RECIPES = ("deepseek_v2_lite_pretrain_config", "deepseek_v2_pretrain_config", "deepseek_v3_pretrain_config",
                        "kimi_k2_pretrain_config", "olmoe_7b_pretrain_config")
A2A_FIELD = "overlap_moe_expert_parallel_comm"


def _on(value: Any) -> Optional[bool]:
    """A config's yes/no value (None: not given)."""
    if value is None or (isinstance(value, float) and value != value):
        return None
    return str(value).strip().lower() in ("true", "1", "yes", "on")


def priced(framework: MegatronCore, c: Mapping[str, Any]) -> dict[str, bool]:
    """What the cost model assumes of layout ``c`` under ``framework``: ``tp_comm_overlap`` (the layout's
    key, else the framework's default, with ``tp > 1`` and sequence parallelism) and ``grad_reduce_in_fp32``
    (gradients of 4 bytes, not 2: all but a bf16-reducing framework's own data parallelism in 16-bit training).

    >>> priced(FRAMEWORK, {"tp": 2, "fsdp": "zero1", "precision": "bf16"})
    {'tp_comm_overlap': True, 'grad_reduce_in_fp32': False}
    """
    tp = int(c.get("tp") or 1)
    overlap = _on(c.get("tp_comm_overlap"))
    parallel = _on(c.get("sequence_parallel"))
    overlap = framework.physics.tp_comm_overlap if overlap is None else overlap
    bf16 = (framework.physics.grad_reduce_dtype == "bf16" and str(c.get("fsdp") or "none") in MEGATRON_DP
            and c.get("precision") != "fp32")
    return {"tp_comm_overlap": bool(overlap and tp > 1 and (tp > 1 if parallel is None else parallel)),
            "grad_reduce_in_fp32": not bf16}


def moe_overrides(c: Mapping[str, Any]) -> dict[str, str]:
    """An MoE layout's ``TransformerConfig`` fields, as :func:`perfzoo.frameworks.megatron_lm.moe_arguments` writes
    them as flags (the recipe gives the experts, top-k and widths), and the MoE modules a selective recompute adds.

    >>> moe_overrides({"n_experts": 8, "moe_dispatcher": "deepep", "activation_checkpointing": "selective",
    ...                "moe_recompute": "moe_act"})["model.recompute_modules"]
    '[core_attn,moe_act]'
    """
    words = megatron_lm.moe_arguments(c)
    out = {}
    for i, word in enumerate(words):
        if word.startswith("--"):
            value = words[i + 1] if i + 1 < len(words) and not words[i + 1].startswith("--") else "true"
            out["model." + word[2:].replace("-", "_")] = value
    if "model.moe_expert_capacity_factor" not in out and out:
        out["model.moe_expert_capacity_factor"] = "null"  # dropless, whatever the recipe says
    modules = c.get("moe_recompute")
    if c.get("activation_checkpointing") == "selective" and isinstance(modules, str) and modules not in ("", "none"):
        out["model.recompute_modules"] = f"[core_attn,{modules}]"
    return out


@dataclass(frozen=True)
class MegatronBridge(MegatronCore):
    """Megatron-Bridge's recipe and overrides (the module docstring)."""

    def check_export(self, model: Mapping[str, Any], precisions: Sequence[str], catalog_name: Optional[str],
                     unlike: str = "") -> None:
        super().check_export(model, precisions, catalog_name, unlike)
        if catalog_name is None:
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
        assumed = priced(self, c)
        return {
            "model.tensor_model_parallel_size": str(tp), "model.pipeline_model_parallel_size": str(pp),
            "model.virtual_pipeline_model_parallel_size": str(vp) if vp > 1 else "null",
            "model.pipeline_model_parallel_layout": "null" if int(c["n_layers"]) % (pp * vp) == 0 else layer_layout(
                int(c["n_layers"]), pp, vp, int(c.get("mtp_layers") or 0)),
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
            **({"checkpoint.ckpt_format": "fsdp_dtensor"} if fsdp in FSDP_STRATEGY else {}),
            **self.moe_overrides(c),
        }

    def moe_overrides(self, c: Mapping[str, Any]) -> dict[str, str]:
        """:func:`moe_overrides`, with the dispatch overlaps a layout leaves out at the bundle's traits, written.

        >>> FRAMEWORK.moe_overrides({"n_experts": 8, "moe_a2a_overlap": True})["model.moe_shared_expert_overlap"]
        'false'
        """
        out = moe_overrides(c)
        if out:
            for key, flag in megatron_lm.OVERLAP_FLAGS.items():
                out.setdefault("model." + flag[2:].replace("-", "_"),
                               _flag(getattr(self.physics, key) and int(c.get("ep") or 1) > 1))
        return out

    def arguments(self, c: Mapping[str, Any], model: Optional[str] = None) -> list[str]:
        if model not in RECIPES:
            raise ExportError(f"Megatron-Bridge has no recipe of {model} in perfzoo's list")
        over = self.overrides(c)
        if RECIPES[model] in COMM_OVERLAP_RECIPES:  # the block's fields win over the model's: set them there
            for field in ("tp_comm_overlap", A2A_FIELD):
                if f"model.{field}" in over:
                    over[f"comm_overlap.{field}"] = over.pop(f"model.{field}")
        return ["--recipe", RECIPES[model], *(f"{k}={v}" for k, v in over.items())]


# Megatron-Core, its performance recipes: TP communication overlapped (tp_comm_overlap=True), gradients reduced in
# bf16 (grad_reduce_in_fp32=False, scripts/performance of NVIDIA-NeMo/Megatron-Bridge); dropless MoE dispatched by
# the flex dispatcher (its presets' moe_flex_dispatcher_backend: DeepEP on H100, HybridEP on GB200 / GB300; the
# DeepSeek-V3 configs turn DeepEP off only for token dropping, which Megatron-Core's flex dispatcher cannot pad)
FRAMEWORK = MegatronBridge(name="megatron-bridge", phrases=("megatron bridge",), read_before=("nemo", "megatron-lm"),
                           runs=megatron_lm.RUNS,
                           physics=replace(megatron_lm.PHYSICS, tp_comm_overlap=True, grad_reduce_dtype="bf16",
                                           moe_dispatcher="flex"),
                           entry=("scripts/training/run_recipe.py",), version="0.3.1", models=tuple(RECIPES))

__all__ = ["COMM_OVERLAP_RECIPES", "FRAMEWORK", "MIXED_PRECISION", "MegatronBridge", "RECIPES", "moe_overrides",
           "priced"]
