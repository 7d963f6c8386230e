"""Megatron-LM (``pretrain_gpt.py``, core 0.16 era): the model and the layout as its argument list::

    torchrun --standalone --nproc-per-node 8 pretrain_gpt.py --num-layers 32 --hidden-size 4096 ... \\
      --tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 --context-parallel-size 1 \\
      --micro-batch-size 1 --global-batch-size 64 --seq-length 8192 --use-distributed-optimizer --bf16

The layout (flags of Megatron-LM's ``megatron/training/arguments.py``):

* degrees: ``--tensor-model-parallel-size`` (with ``--sequence-parallel`` past 1),
  ``--pipeline-model-parallel-size``, ``--num-layers-per-virtual-pipeline-stage`` (``layers /
  (pp x vp)`` with ``vp > 1``), an uneven split as Megatron takes it (:func:`pipeline_arguments`;
  virtual stages of unequal layers as a ``--pipeline-model-parallel-layout``, :func:`layer_layout`),
  ``--context-parallel-size``, ``--expert-model-parallel-size``;
  data parallelism is the rest of the GPUs;
* batch: ``--micro-batch-size``, ``--global-batch-size`` (Megatron accumulates the rest), ``--seq-length``;
* recompute: ``--recompute-granularity full --recompute-method uniform --recompute-num-layers 1``
  or ``--recompute-granularity selective``;
* sharding: ``zero1`` is ``--use-distributed-optimizer``; ``no_shard`` plain DDP; ``full_shard``
  / ``shard_grad_op`` Megatron-FSDP (``--use-megatron-fsdp --data-parallel-sharding-strategy
  optim_grads_params`` / ``optim_grads``); with more than one data-parallel rank
  ``--overlap-grad-reduce --overlap-param-gather`` (the cost model hides that traffic under the kernels);
* MoE (:func:`moe_arguments`): ``--expert-tensor-parallel-size`` as priced (1 unless the layout says;
  Megatron's default is the TP degree), the dispatcher (``--moe-token-dispatcher-type``, flex with its
  ``--moe-flex-dispatcher-backend``), ``--moe-grouped-gemm --moe-permute-fusion``, the MoE modules a
  selective recompute adds (``--recompute-modules``), ``--mtp-num-layers`` where the model has MTP blocks
  (DeepSeek-V3: 1); sliding windows as ``--window-size`` and ``--window-attn-skip-freq`` (GPT-OSS);
* Megatron-FSDP saves ``--ckpt-format fsdp_dtensor``; :func:`environment` sets the
  ``CUDA_DEVICE_MAX_CONNECTIONS`` Megatron-LM asserts for the layout (written as an ``export`` line);
* precision: ``--bf16``, with ``--fp8-format hybrid --fp8-recipe tensorwise`` for FP8.

The written line trains on ``--mock-data`` with the ``NullTokenizer`` of the model's vocabulary,
so it runs as it is; put your data and tokenizer flags in their place. Reading a user's list
back (``plan --baseline-from``) takes Megatron's own defaults for what it leaves out (degree 1,
no distributed optimizer, no recompute), as Megatron does.
"""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass
from typing import Any, Mapping, Optional, Sequence

from perfzoo.frameworks._base import (DISPATCHERS, Baseline, _on, ExportError, Framework, Physics, Runs, check_expanded,
                                      equal_stages, stage_split)

RECOMPUTE = {"full": ["--recompute-granularity", "full", "--recompute-method", "uniform",
                      "--recompute-num-layers", "1"],
             "selective": ["--recompute-granularity", "selective"], "none": []}
FSDP_STRATEGY = {"full_shard": "optim_grads_params", "shard_grad_op": "optim_grads"}
# a config's moe_dispatcher as Megatron-Core's flags: its flex dispatcher runs DeepEP's kernels (deepep) or HybridEP's
DISPATCHER_FLAGS = {"alltoall": ["--moe-token-dispatcher-type", "alltoall"],
                    "allgather": ["--moe-token-dispatcher-type", "allgather"],
                    "flex": ["--moe-token-dispatcher-type", "flex", "--moe-flex-dispatcher-backend", "hybridep"],
                    "deepep": ["--moe-token-dispatcher-type", "flex", "--moe-flex-dispatcher-backend", "deepep"]}
TRAINING = ["--train-iters", "50", "--lr", "1e-4", "--log-interval", "1", "--eval-iters", "0", "--mock-data",
            "--tokenizer-type", "NullTokenizer"]


def shape_arguments(m: Mapping[str, Any]) -> list[str]:
    """A model's shape as Megatron-LM's flags (dense, MoE and MLA transformers, and gated delta-net hybrids)."""
    if m.get("n_mamba_layers"):
        raise ExportError(f"--export for Megatron-LM: {m.get('model_name')} has Mamba layers, which pretrain_gpt.py "
                          "does not run and perfzoo does not write as a hybrid layer pattern: --framework "
                          "megatron-bridge writes its recipe, or give them in your own script")
    layers, hidden, heads = int(m["n_layers"]), int(m["hidden_dim"]), int(m["n_heads"])
    args = ["--num-layers", str(layers), "--hidden-size", str(hidden),
            "--ffn-hidden-size", str(int(m.get("ffn_dim") or 4 * hidden)), "--num-attention-heads", str(heads)]
    kv = int(m.get("n_kv_heads") or heads)
    if kv != heads:
        args += ["--group-query-attention", "--num-query-groups", str(kv)]
    if m.get("head_dim") and int(m["head_dim"]) * heads != hidden:
        args += ["--kv-channels", str(int(m["head_dim"]))]
    if m.get("kv_lora_rank"):
        args += ["--multi-latent-attention", "--kv-lora-rank", str(int(m["kv_lora_rank"]))]
        for key, flag in (("q_lora_rank", "--q-lora-rank"), ("qk_nope_head_dim", "--qk-head-dim"),
                          ("qk_rope_head_dim", "--qk-pos-emb-head-dim"), ("v_head_dim", "--v-head-dim")):
            if m.get(key):
                args += [flag, str(int(m[key]))]
    if (m.get("n_experts") or 1) > 1:
        args += ["--num-experts", str(int(m["n_experts"])), "--moe-router-topk", str(int(m.get("experts_per_token") or 1))]
        if m.get("moe_ffn_dim"):
            args += ["--moe-ffn-hidden-size", str(int(m["moe_ffn_dim"]))]
        if m.get("n_shared_experts"):
            width = int(m.get("shared_ffn_dim") or m.get("moe_ffn_dim") or 0) * int(m["n_shared_experts"])
            args += ["--moe-shared-expert-intermediate-size", str(width)]
        if m.get("n_dense_layers"):
            k = int(m["n_dense_layers"])
            args += ["--moe-layer-freq", f"([0]*{k}+[1]*{layers - k})"]
    if m.get("mtp_layers"):  # multi-token prediction blocks, which the cost model prices
        args += ["--mtp-num-layers", str(int(m["mtp_layers"]))]
    if m.get("sliding_window"):  # Megatron's window counts the tokens before the query: GPT-OSS's 128 is 127,0
        args += ["--window-size", f"{int(m['sliding_window']) - 1},0"]
        full = layers - int(m.get("n_sliding_layers") or layers)
        if full:  # one full-attention layer every `every` (GPT-OSS: 2), else the pattern (1: sliding)
            every = layers // full
            args += ["--window-attn-skip-freq", str(every) if every * full == layers else  # evenly spread
                     "[" + ",".join("0" if (i + 1) * full // layers > i * full // layers else "1"
                                    for i in range(layers)) + "]"]
    args += linear_attention_arguments(m)
    if m.get("gated_mlp", True):
        args.append("--swiglu")
    if not m.get("tie_embeddings", False):
        args.append("--untie-embeddings-and-output-weights")
    args += ["--normalization", "RMSNorm", "--position-embedding-type", "rope", "--disable-bias-linear",
             "--vocab-size", str(int(m["vocab_size"]))]
    return args


def linear_attention_arguments(m: Mapping[str, Any]) -> list[str]:
    """A hybrid's gated delta-net layers (Qwen3-Next) as Megatron-Core's ``gdn`` attention variant: one
    full-attention layer every ``--linear-attention-freq`` layers (Megatron's integer pattern: the Nth,
    2Nth, ... layer), the rest linear; the heads, head widths and conv kernel as the model gives them.

    >>> linear_attention_arguments({"n_layers": 8, "n_linear_layers": 6, "linear_key_heads": 4, "linear_value_heads": 8,
    ...                             "linear_key_head_dim": 64, "linear_value_head_dim": 64})[:4]
    ['--experimental-attention-variant', 'gdn', '--linear-attention-freq', '4']
    """
    linear = int(m.get("n_linear_layers") or 0)
    if not linear:
        return []
    layers = int(m["n_layers"])
    full = layers - linear
    if full <= 0 or layers % full:
        raise ExportError(f"--export for Megatron-LM: {m.get('model_name')} has {linear} linear-attention layers of "
                          f"{layers}, not one full-attention layer every k (Megatron's --linear-attention-freq); give "
                          "the pattern in your own script")
    args = ["--experimental-attention-variant", "gdn", "--linear-attention-freq", str(layers // full),
            "--linear-key-head-dim", str(int(m["linear_key_head_dim"])),  # values: the keys' where not given
            "--linear-value-head-dim", str(int(m.get("linear_value_head_dim") or m["linear_key_head_dim"])),
            "--linear-num-key-heads", str(int(m["linear_key_heads"])),
            "--linear-num-value-heads", str(int(m.get("linear_value_heads") or m["linear_key_heads"]))]
    if m.get("linear_conv_kernel"):  # else Megatron's 4, the width perfzoo prices
        args += ["--linear-conv-kernel-dim", str(int(m["linear_conv_kernel"]))]
    return args


def layout_arguments(c: Mapping[str, Any], precision_flags: bool = True) -> list[str]:
    """The layout's flags (the module docstring), shared by every Megatron launcher."""
    tp, pp, vp, cp, ep, dp = (int(c[k]) for k in ("tp", "pp", "vp", "cp", "ep", "dp"))
    args = ["--tensor-model-parallel-size", str(tp), "--pipeline-model-parallel-size", str(pp),
            "--context-parallel-size", str(cp), "--expert-model-parallel-size", str(ep),
            "--micro-batch-size", str(int(c["micro_batch_size"])), "--global-batch-size",
            str(int(c["global_batch_size"])), "--seq-length", str(int(c["seq_len"])),
            "--max-position-embeddings", str(int(c["seq_len"]))]
    if tp > 1:
        args.append("--sequence-parallel")
    args += pipeline_arguments(int(c["n_layers"]), pp, vp, int(c.get("mtp_layers") or 0))
    args += moe_arguments(c)
    args += RECOMPUTE[str(c["activation_checkpointing"])]
    modules = _given(c.get("moe_recompute"))
    if c["activation_checkpointing"] == "selective" and modules not in (None, "none"):
        args += ["--recompute-modules", "core_attn", *modules.split(",")]  # core_attn: Megatron's selective default
    fsdp = str(c["fsdp"])
    if fsdp in FSDP_STRATEGY:  # Megatron-FSDP (v1, with the distributed optimizer) saves fsdp_dtensor checkpoints only
        args += ["--use-megatron-fsdp", "--data-parallel-sharding-strategy", FSDP_STRATEGY[fsdp],
                 "--use-distributed-optimizer", "--ckpt-format", "fsdp_dtensor"]
    elif fsdp == "zero1" or (fsdp == "none" and dp * cp > 1):  # the plan's 'none' past one rank is zero1
        args.append("--use-distributed-optimizer")
    if dp * cp > 1:  # the cost model hides the gradient reduce and the parameter gather under the kernels
        args += ["--overlap-grad-reduce", "--overlap-param-gather"]
    args.append("--bf16")
    if c["precision"] == "fp8":  # current (tensorwise) scaling, the Bridge's FP8 recipe; delayed scaling refuses
        args += ["--fp8-format", "hybrid", "--fp8-recipe", "tensorwise"]  # MoE activation and layernorm recompute
    return args


def _given(value: Any) -> Optional[str]:
    """A layout's text value, None where absent or NaN."""
    return value if isinstance(value, str) and value else None


# a config's MoE dispatch overlaps as Megatron-Core's switches (TransformerConfig's fields; off by default)
OVERLAP_FLAGS = {"moe_a2a_overlap": "--overlap-moe-expert-parallel-comm",
                 "moe_shared_expert_overlap": "--moe-shared-expert-overlap"}


def moe_arguments(c: Mapping[str, Any]) -> list[str]:
    """An MoE layout's flags (none for a dense model): ``--expert-tensor-parallel-size`` as priced (1 unless the
    layout says; Megatron's default is the TP degree), the dispatcher (:data:`DISPATCHER_FLAGS`), grouped GEMMs
    and fused permutation (what the cost model prices), token dropping's capacity where the layout drops, and
    the dispatch overlaps it turns on (:data:`OVERLAP_FLAGS`).

    >>> moe_arguments({"n_experts": 8, "etp": 2, "moe_dispatcher": "deepep"})  # doctest: +NORMALIZE_WHITESPACE
    ['--expert-tensor-parallel-size', '2', '--moe-token-dispatcher-type', 'flex', '--moe-flex-dispatcher-backend',
     'deepep', '--moe-grouped-gemm', '--moe-permute-fusion']
    """
    if (c.get("n_experts") or 1) <= 1:
        return []
    etp = c.get("etp")
    etp = 1 if etp is None or etp != etp else int(etp)
    args = ["--expert-tensor-parallel-size", str(etp),
            *DISPATCHER_FLAGS[_given(c.get("moe_dispatcher")) or "alltoall"], "--moe-grouped-gemm",
            "--moe-permute-fusion"]
    if str(c.get("moe_token_drop")).lower() in ("true", "1", "yes"):
        factor = c.get("moe_capacity_factor")
        args += ["--moe-expert-capacity-factor", f"{float(factor) if factor == factor and factor else 1.0:g}"]
    return args + [flag for key, flag in OVERLAP_FLAGS.items() if _on(c.get(key))]


def environment(c: Mapping[str, Any]) -> dict[str, str]:
    """What Megatron-Core asserts of ``CUDA_DEVICE_MAX_CONNECTIONS`` for layout ``c``
    (``megatron/training/arguments.py``): Megatron-FSDP needs more than one connection (32 here);
    tensor or context parallelism without it one on Hopper and before (set on any GPU: Blackwell allows
    it); else none is asked for.

    >>> environment({"tp": 2, "cp": 1, "fsdp": "zero1"}), environment({"tp": 2, "cp": 1, "fsdp": "full_shard"})
    ({'CUDA_DEVICE_MAX_CONNECTIONS': '1'}, {'CUDA_DEVICE_MAX_CONNECTIONS': '32'})
    """
    if str(c.get("fsdp")) in FSDP_STRATEGY:
        return {"CUDA_DEVICE_MAX_CONNECTIONS": "32"}
    if int(c.get("tp") or 1) > 1 or int(c.get("cp") or 1) > 1:
        return {"CUDA_DEVICE_MAX_CONNECTIONS": "1"}
    return {}


def layer_layout(n_layers: int, pp: int, vp: int, mtp: int = 0) -> str:
    """Megatron-Core's ``pipeline_model_parallel_layout`` (core 0.13 on) of ``n_layers`` decoder layers
    over ``pp x vp`` stages in model order (stage ``i`` on pipeline rank ``i % pp``): as even as the
    layers go, the embedding (``E``) and the loss (``L``) counted as a layer each, the extra layers on
    the middle stages first, the ``mtp`` blocks (``m``) with the loss. DeepSeek-V3's 61 layers over
    4 x 4 stages, which neither equal form splits:

    >>> layer_layout(61, 4, 4, 1)
    'Ettt|tttt|tttt|tttt|tttt|tttt|tttt|tttt|tttt|tttt|tttt|tttt|tttt|tttt|tttt|ttmL'
    """
    stages = pp * vp
    items = ["E", *"t" * n_layers, "L"]
    base, extra = divmod(len(items), stages)
    sizes = [base] * stages
    for i in [*range(1, stages - 1), 0, stages - 1][:extra]:
        sizes[i] += 1
    parts = ["".join(items[sum(sizes[:i]):sum(sizes[:i + 1])]) for i in range(stages)]
    parts[-1] = parts[-1][:-1] + "m" * mtp + "L"
    return "|".join(parts)


def pipeline_arguments(n_layers: int, pp: int, vp: int, mtp: int = 0) -> list[str]:
    """How the layers split over the stages, as Megatron checks it (``arguments.py``): evenly; with the
    embedding and the loss counted as a layer each (Llama 3.1 405B's 126 layers over 16 x 8 stages);
    without virtual stages, ``ceil(L/pp)`` layers a stage and fewer on the first and last, which hold
    the embedding and the LM head (DeepSeek-V3's 61 on 8: 7, 8 x 6, 6), as the cost model prices it
    (:mod:`perfzoo.analytic.llm`); virtual stages of unequal layers as a layout (:func:`layer_layout`).

    >>> pipeline_arguments(126, 16, 8)
    ['--account-for-embedding-in-pipeline-split', '--account-for-loss-in-pipeline-split', '--num-layers-per-virtual-pipeline-stage', '1']
    >>> pipeline_arguments(61, 8, 1)
    ['--decoder-first-pipeline-num-layers', '7', '--decoder-last-pipeline-num-layers', '6']
    >>> pipeline_arguments(61, 2, 4, 1)
    ['--pipeline-model-parallel-layout', 'Ettttttt|tttttttt|tttttttt|tttttttt|tttttttt|tttttttt|tttttttt|ttttttmL']
    """
    if pp == 1:
        return []
    if vp > 1 and equal_stages(n_layers, pp, vp) is None:
        return ["--pipeline-model-parallel-layout", layer_layout(n_layers, pp, vp, mtp)]
    if vp == 1 and n_layers % pp and (n_layers + 2) % pp:
        per = -(-n_layers // pp)
        short = pp * per - n_layers
        last = ["--decoder-last-pipeline-num-layers", str(per - (short + 1) // 2)]
        return last if pp == 2 else ["--decoder-first-pipeline-num-layers", str(per - short // 2), *last]
    per, embedding_and_loss = stage_split(n_layers, pp, vp)
    args = ["--account-for-embedding-in-pipeline-split", "--account-for-loss-in-pipeline-split"] if embedding_and_loss \
        else []
    return args + (["--num-layers-per-virtual-pipeline-stage", str(per)] if vp > 1 else [])


# What Megatron-Core runs, as Megatron-LM, NeMo and Megatron-Bridge run it: every sharding (its data parallelism
# is the distributed optimizer, zero1; Megatron-FSDP shards more), Transformer Engine's precisions, 1F1B and the
# interleaved schedule (a multiple of pp micro-batches), the alltoall, allgather and flex (DeepEP) dispatchers
RUNS = Runs(writes=("bf16", "fp8"), schedules=("1F1B", "interleaved 1F1B"), interleave_rounds=True,
            dispatchers=DISPATCHERS)
# Transformer Engine's fused attention (cuDNN; FlashAttention-3 class), its fused kernels; the recipes capture
# CUDA graphs and overlap the launches, so the host does not pace dense and token-dropping MoE layers
PHYSICS = Physics(graphs_hide_host=True)


@dataclass(frozen=True)
class MegatronCore(Framework):
    """Megatron-Core's layer split (Megatron-LM, NeMo and Megatron-Bridge run it): without virtual stages
    Framework's; with them stages of equal layers, or any split whose stages each hold a layer, the
    embedding or the loss, as a ``pipeline_model_parallel_layout`` (:func:`layer_layout`; NVIDIA's
    DeepSeek-V3 runs put its 61 layers on 4 x 4 and 8 x 4 stages so)."""

    def split(self, n_layers: int, pp: int, vp: int) -> Optional[str]:
        if vp > 1 and pp > 1 and pp <= n_layers and pp * vp > n_layers + 2:
            return (f"pp {pp} x vp {vp} = {pp * vp} stages are more than the {n_layers} layers, the embedding and "
                    f"the loss ({n_layers + 2}): every stage holds one; choose a smaller pp or vp")
        return None if vp > 1 and pp > 1 and pp <= n_layers else super().split(n_layers, pp, vp)

    def environment(self, layout: Mapping[str, Any]) -> dict[str, str]:
        return environment(layout)

    def overlaps(self, config: Mapping[str, Any]) -> Optional[str]:
        """Megatron-Core's rules of its MoE dispatch overlaps (``TransformerConfig.__post_init__``), on what
        ``config`` gives: not both; a dispatcher of the all-to-all kind (alltoall, flex; not allgather); the A2A
        overlap with virtual stages under a pipeline, no full recompute nor the whole MoE layer recomputed,
        16-bit weights (not fp32) and at most one MTP layer.

        >>> FRAMEWORK.overlaps({"moe_a2a_overlap": True, "pp": 2, "vp": 1})
        'moe_a2a_overlap=true under framework=megatron-lm: Megatron-Core overlaps the all-to-alls under a pipeline only with virtual stages; give vp > 1 or moe_a2a_overlap=false'
        """
        a2a, shared = _on(config.get("moe_a2a_overlap")), _on(config.get("moe_shared_expert_overlap"))
        if not (a2a or shared):  # read nothing else: the plan's rule tables depend on the knobs a check reads
            return None
        pp, vp = int(config.get("pp") or 1), int(config.get("vp") or 1)
        recompute = str(config.get("moe_recompute") or "").split(",")
        rules = [(shared and a2a, "moe_a2a_overlap", "it runs one MoE overlap at a time",
                  "moe_shared_expert_overlap=false"),
                 (config.get("moe_dispatcher") == "allgather", "moe_a2a_overlap" if a2a else "moe_shared_expert_overlap",
                  "the allgather dispatcher overlaps nothing", "moe_dispatcher=alltoall"),
                 (pp > 1 and vp == 1, "moe_a2a_overlap", "Megatron-Core overlaps the all-to-alls under a pipeline only "
                  "with virtual stages", "vp > 1"),
                 (config.get("activation_checkpointing") == "full" or "moe" in recompute, "moe_a2a_overlap",
                  "the overlap refuses full recompute and a recomputed MoE layer", "activation_checkpointing=selective"),
                 (config.get("precision") == "fp32", "moe_a2a_overlap", "the overlap runs 16-bit models only",
                  "precision=bf16"),
                 (int(config.get("mtp_layers") or 0) > 1, "moe_a2a_overlap", "the overlap takes at most one MTP layer",
                  "mtp_layers=1")]
        for broken, key, why, fix in rules:
            if broken and (a2a if key == "moe_a2a_overlap" else shared):
                return f"{key}=true under framework={self.name}: {why}; give {fix} or {key}=false"
        return super().overlaps(config)


@dataclass(frozen=True)
class MegatronLM(MegatronCore):
    """Megatron-LM's ``pretrain_gpt.py`` argument list (the module docstring)."""

    def check_export(self, model: Mapping[str, Any], precisions: Sequence[str], catalog_name: Optional[str],
                     unlike: str = "") -> None:
        super().check_export(model, precisions, catalog_name, unlike)
        shape_arguments(model)

    def arguments(self, c: Mapping[str, Any], model: Optional[str] = None) -> list[str]:
        return [*shape_arguments(c), *layout_arguments(c), *TRAINING]

    def read(self, args: Sequence[str], source: str) -> Baseline:
        return read_arguments(args, source)


# the Megatron-LM flags a baseline is read from that take a value, and its type
VALUE_FLAGS = {"--tensor-model-parallel-size": int, "--pipeline-model-parallel-size": int,
               "--num-layers-per-virtual-pipeline-stage": int, "--virtual-pipeline-model-parallel-size": int,
               "--context-parallel-size": int, "--expert-model-parallel-size": int, "--micro-batch-size": int,
               "--global-batch-size": int, "--seq-length": int, "--recompute-granularity": str,
               "--data-parallel-sharding-strategy": str, "--fp8-format": str, "--num-layers": int,
               "--hidden-size": int, "--ffn-hidden-size": int, "--num-attention-heads": int,
               "--num-query-groups": int, "--kv-channels": int, "--num-experts": int, "--moe-router-topk": int,
               "--moe-ffn-hidden-size": int, "--vocab-size": int, "--pipeline-model-parallel-layout": str,
               "--expert-tensor-parallel-size": int, "--moe-token-dispatcher-type": str,
               "--moe-flex-dispatcher-backend": str}


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(add_help=False, allow_abbrev=False, exit_on_error=False)
    for flag, kind in VALUE_FLAGS.items():
        p.add_argument(flag, type=kind)
    for flag in ("--use-distributed-optimizer", "--use-megatron-fsdp", "--use-torch-fsdp2", "--recompute-activations",
                 "--bf16", "--fp16", "--group-query-attention", "--swiglu", "--untie-embeddings-and-output-weights",
                 "--account-for-embedding-in-pipeline-split", "--account-for-loss-in-pipeline-split",
                 "--tp-comm-overlap", *OVERLAP_FLAGS.values()):
        p.add_argument(flag, action="store_true")
    return p


def read_arguments(args: Sequence[str], source: str, framework: str = "megatron-lm") -> Baseline:
    """A Megatron-LM argument list (a ``torchrun ... pretrain_gpt.py`` line or the flags alone) as a
    :class:`~perfzoo.frameworks.Baseline`: the layout, the sequence and batch, the shape it gives, and
    the GPUs where ``torchrun``'s ``--nnodes`` and ``--nproc-per-node`` are on the line."""
    check_expanded(args, VALUE_FLAGS, source)
    try:
        a, _ = _parser().parse_known_args(list(args))
    except argparse.ArgumentError as exc:
        raise ExportError(f"{source}: not a Megatron-LM argument list ({exc})") from None
    if a.micro_batch_size is None or a.seq_length is None:
        raise ExportError(f"{source}: a Megatron-LM line needs --micro-batch-size and --seq-length (Megatron "
                          "refuses one without them)")
    tp, pp = a.tensor_model_parallel_size or 1, a.pipeline_model_parallel_size or 1
    layout = {"tp": tp, "pp": pp, "cp": a.context_parallel_size or 1, "ep": a.expert_model_parallel_size or 1,
              "micro_batch_size": a.micro_batch_size, "vp": 1}
    if (a.num_experts or 0) > 1:  # Megatron's defaults: expert TP the TP degree, the all-gather dispatcher
        layout["etp"] = a.expert_tensor_parallel_size or tp
        flex = {"hybridep": "flex", "deepep": "deepep", None: "deepep"}.get(a.moe_flex_dispatcher_backend, "flex")
        layout["moe_dispatcher"] = flex if a.moe_token_dispatcher_type == "flex" else (
            a.moe_token_dispatcher_type or "allgather")
        layout.update({key: getattr(a, flag[2:].replace("-", "_")) for key, flag in OVERLAP_FLAGS.items()})
    if a.pipeline_model_parallel_layout:  # its stages in model order, pp of them a virtual stage
        layout["vp"] = max(1, len(_unrolled(a.pipeline_model_parallel_layout).split("|")) // pp)
    elif a.virtual_pipeline_model_parallel_size:
        layout["vp"] = a.virtual_pipeline_model_parallel_size
    elif a.num_layers_per_virtual_pipeline_stage:
        if not a.num_layers:
            raise ExportError(f"{source}: --num-layers-per-virtual-pipeline-stage needs --num-layers to count stages")
        counted = a.num_layers + a.account_for_embedding_in_pipeline_split + a.account_for_loss_in_pipeline_split
        layout["vp"] = counted // (pp * a.num_layers_per_virtual_pipeline_stage)
    granularity = a.recompute_granularity or ("selective" if a.recompute_activations else "none")
    layout["activation_checkpointing"] = granularity
    if a.use_megatron_fsdp:
        strategy = a.data_parallel_sharding_strategy or "no_shard"
        layout["fsdp"] = {"optim_grads_params": "full_shard", "optim_grads": "shard_grad_op", "optim": "zero1"}.get(
            strategy, "no_shard")
    elif a.use_torch_fsdp2:
        layout["fsdp"] = "full_shard"
    else:
        layout["fsdp"] = "zero1" if a.use_distributed_optimizer else "no_shard"
    layout["precision"] = "fp8" if a.fp8_format else "bf16"
    workload = {"seq_len": a.seq_length}
    if a.global_batch_size:
        workload["global_batch_size"] = a.global_batch_size
    shape: dict[str, Any] = {}
    for key, value in (("n_layers", a.num_layers), ("hidden_dim", a.hidden_size), ("ffn_dim", a.ffn_hidden_size),
                       ("n_heads", a.num_attention_heads), ("head_dim", a.kv_channels), ("n_experts", a.num_experts),
                       ("experts_per_token", a.moe_router_topk), ("moe_ffn_dim", a.moe_ffn_hidden_size),
                       ("vocab_size", a.vocab_size)):
        if value is not None:
            shape[key] = value
    if a.group_query_attention and a.num_query_groups:
        shape["n_kv_heads"] = a.num_query_groups
    if shape:
        shape["gated_mlp"] = a.swiglu
        shape["tie_embeddings"] = not a.untie_embeddings_and_output_weights
    settings = {"tp_comm_overlap": True} if a.tp_comm_overlap else {}  # Transformer Engine's userbuffers overlap
    return Baseline(framework, layout, workload, shape=shape, gpus=read_gpus(args), settings=settings)


def _unrolled(layout: str) -> str:
    """A ``--pipeline-model-parallel-layout`` with its repetitions written out, as Megatron-Core reads it
    (``(tt|)*2`` is ``tt|tt|``, ``t*3`` is ``ttt``; commas are cosmetic).

    >>> _unrolled("Et*3|(tt|)*2,m|L")
    'Ettt|tt|tt|m|L'
    """
    text = layout.replace(",", "")
    for pattern in (r"\(([^)]+)\)\*(\d+)", r"(.)\*(\d+)"):
        text = re.sub(pattern, lambda found: found.group(1) * int(found.group(2)), text)
    return text


def read_gpus(words: Sequence[str]) -> Optional[int]:
    """The GPUs of a ``torchrun`` line: ``--nnodes`` (1 unless given; ``N`` or ``N:N``) x
    ``--nproc-per-node`` (None where the line does not say).

    >>> read_gpus(["torchrun", "--nnodes=2", "--nproc_per_node", "8", "x.py"])
    16
    """
    p = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    p.add_argument("--nnodes", default="1")
    p.add_argument("--nproc-per-node", "--nproc_per_node", dest="per_node")
    a, _ = p.parse_known_args(list(words))
    try:
        nodes = int(str(a.nnodes).split(":")[-1])
        return nodes * int(a.per_node) if a.per_node is not None else None
    except ValueError:
        return None


# written in PyTorch: a cell naming both is Megatron-LM's
FRAMEWORK = MegatronLM(name="megatron-lm", phrases=("megatron lm", "megatron core", "megatron", "korthikanti"),
                       read_before=("pytorch",), runs=RUNS, physics=PHYSICS, entry=("pretrain_gpt.py",),
                       version="core 0.16")

__all__ = ["DISPATCHER_FLAGS", "FRAMEWORK", "MegatronCore", "MegatronLM", "OVERLAP_FLAGS", "PHYSICS", "RUNS",
           "environment", "layer_layout", "layout_arguments", "moe_arguments",
           "pipeline_arguments", "read_arguments", "read_gpus", "shape_arguments"]
