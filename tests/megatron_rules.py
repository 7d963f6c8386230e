"""Megatron-LM's argument validation, as it applies to the flags perfzoo writes: a checker for the tests.

Read from NVIDIA/Megatron-LM at commit d98e8a64ddf34856e74b24714e3bedb2f5a39553 (2026-08-22):
``megatron/training/arguments.py`` (``validate_args``, the flag definitions) and
``megatron/core/transformer/transformer_config.py`` (``TransformerConfig.__post_init__``, whose fields
``argument_utils`` turns into the MoE, recompute and MoE overlap flags), with the expert rank groups of
``megatron/core/parallel_state.py``. The rules are said here in our own words; Megatron-LM itself does
not install on a CPU-only machine (Transformer Engine needs CUDA).

>>> violations("export CUDA_DEVICE_MAX_CONNECTIONS=1\\ntorchrun --nnodes 1 --nproc-per-node 8 pretrain_gpt.py "
...            "--num-layers 4 --hidden-size 64 --num-attention-heads 8 --micro-batch-size 1 --global-batch-size 8 "
...            "--seq-length 16 --tensor-model-parallel-size 2 --use-megatron-fsdp", arch=9)
['Megatron-FSDP saves only the fsdp_dtensor checkpoint format (--ckpt-format fsdp_dtensor)', 'Megatron-FSDP needs CUDA_DEVICE_MAX_CONNECTIONS above 1 or unset']
"""

from __future__ import annotations

import argparse
import re
import shlex
from typing import Optional

# the flags perfzoo writes that Megatron-LM defines at the commit above, and the type of their value (None: a switch)
VALUE_FLAGS = {
    "--num-layers": int, "--hidden-size": int, "--ffn-hidden-size": int, "--num-attention-heads": int,
    "--num-query-groups": int, "--kv-channels": int, "--kv-lora-rank": int, "--q-lora-rank": int,
    "--qk-head-dim": int, "--qk-pos-emb-head-dim": int, "--v-head-dim": int, "--num-experts": int,
    "--moe-router-topk": int, "--moe-ffn-hidden-size": int, "--moe-shared-expert-intermediate-size": int,
    "--moe-layer-freq": str, "--mtp-num-layers": int, "--window-size": str, "--window-attn-skip-freq": str,
    "--normalization": str, "--position-embedding-type": str, "--vocab-size": int,
    "--tensor-model-parallel-size": int, "--pipeline-model-parallel-size": int, "--context-parallel-size": int,
    "--expert-model-parallel-size": int, "--expert-tensor-parallel-size": int, "--micro-batch-size": int,
    "--global-batch-size": int, "--seq-length": int, "--max-position-embeddings": int,
    "--num-layers-per-virtual-pipeline-stage": int, "--pipeline-model-parallel-layout": str,
    "--decoder-first-pipeline-num-layers": int, "--decoder-last-pipeline-num-layers": int,
    "--moe-token-dispatcher-type": str, "--moe-flex-dispatcher-backend": str, "--moe-expert-capacity-factor": float,
    "--recompute-granularity": str, "--recompute-method": str, "--recompute-num-layers": int,
    "--recompute-modules": "+", "--data-parallel-sharding-strategy": str, "--ckpt-format": str,
    "--fp8-format": str, "--fp8-recipe": str, "--train-iters": int, "--lr": float, "--log-interval": int,
    "--eval-iters": int, "--tokenizer-type": str, "--experimental-attention-variant": str,
    "--linear-attention-freq": str, "--linear-conv-kernel-dim": int, "--linear-key-head-dim": int,
    "--linear-value-head-dim": int, "--linear-num-key-heads": int, "--linear-num-value-heads": int}
SWITCHES = ("--group-query-attention", "--multi-latent-attention", "--moe-grouped-gemm", "--moe-permute-fusion",
            "--swiglu", "--untie-embeddings-and-output-weights", "--disable-bias-linear", "--sequence-parallel",
            "--account-for-embedding-in-pipeline-split", "--account-for-loss-in-pipeline-split",
            "--use-distributed-optimizer", "--use-megatron-fsdp", "--overlap-grad-reduce", "--overlap-param-gather",
            "--bf16", "--mock-data", "--tp-comm-overlap", "--overlap-moe-expert-parallel-comm",
            "--moe-shared-expert-overlap")
CHOICES = {"--moe-token-dispatcher-type": {"allgather", "alltoall", "flex"},
           "--moe-flex-dispatcher-backend": {"deepep", "hybridep", "ncclep"},
           "--recompute-granularity": {"full", "selective"}, "--recompute-method": {"uniform", "block"},
           "--data-parallel-sharding-strategy": {"no_shard", "optim", "optim_grads", "optim_grads_params"},
           "--ckpt-format": {"torch", "torch_dist", "torch_dcp", "fsdp_dtensor"},
           "--fp8-format": {"e4m3", "hybrid"}, "--fp8-recipe": {"tensorwise", "delayed", "mxfp8", "blockwise", "custom"},
           "--experimental-attention-variant": {"gdn", "gdn2", "dsa", "gated_delta_net"},
           "--normalization": {"LayerNorm", "RMSNorm"}, "--position-embedding-type": {"learned_absolute", "rope",
                                                                                       "mrope", "relative", "none"}}
RECOMPUTE_MODULES = {"core_attn", "moe_act", "layernorm", "mla_up_proj", "mlp", "moe", "shared_experts"}


def parse(text: str) -> tuple[dict, argparse.Namespace, int]:
    """A perfzoo script's ``export`` lines, its Megatron-LM arguments (after ``pretrain_gpt.py``; an unknown
    flag is an error, as in Megatron-LM's parser) and its world size (``--nnodes`` x ``--nproc-per-node``)."""
    env = dict(re.findall(r"^export (\w+)=(\S+)$", text, re.M))
    words = shlex.split(text.replace("\\\n", " "), comments=True)
    words = [w for w in words if w != "export" and not re.fullmatch(r"\w+=\S*", w)]
    at = next(i for i, w in enumerate(words) if w.endswith("pretrain_gpt.py"))
    launcher = argparse.ArgumentParser(add_help=False)
    launcher.add_argument("--nnodes", type=int, default=1)
    launcher.add_argument("--nproc-per-node", type=int, default=1)
    nodes = launcher.parse_known_args(words[:at])[0]
    p = argparse.ArgumentParser(add_help=False, allow_abbrev=False, exit_on_error=False)
    for flag, kind in VALUE_FLAGS.items():
        p.add_argument(flag, nargs="+") if kind == "+" else p.add_argument(flag, type=kind)
    for flag in SWITCHES:
        p.add_argument(flag, action="store_true")
    args, unknown = p.parse_known_args(words[at + 1:])
    if unknown:
        raise ValueError(f"flags Megatron-LM does not define: {unknown}")
    for flag, allowed in CHOICES.items():
        value = getattr(args, flag[2:].replace("-", "_"))
        if value is not None and value not in allowed:
            raise ValueError(f"{flag} {value}: not one of {sorted(allowed)}")
    return env, args, nodes.nnodes * nodes.nproc_per_node


def _pipeline(a: argparse.Namespace) -> list[str]:
    """How the layers split over the pipeline (validate_args' split checks)."""
    pp, L = a.pipeline_model_parallel_size or 1, a.num_layers
    counted = L + a.account_for_embedding_in_pipeline_split + a.account_for_loss_in_pipeline_split
    out = []
    if a.pipeline_model_parallel_layout is not None:
        if len(a.pipeline_model_parallel_layout.split("|")) % pp:
            out.append("a pipeline layout's stages are a multiple of pp")
        return out
    first, last = a.decoder_first_pipeline_num_layers, a.decoder_last_pipeline_num_layers
    if a.num_layers_per_virtual_pipeline_stage is not None:
        if first is not None or last is not None:
            out.append("layers per virtual stage exclude uneven first/last stages")
        elif counted % pp or (counted // pp) % a.num_layers_per_virtual_pipeline_stage:
            out.append("layers per virtual stage divide the layers of a pipeline rank, which divide evenly")
    elif first is None and last is None:
        if pp > 1 and counted % pp:
            out.append("without an uneven split the layers divide evenly over pp")
    else:  # the stages not given split the rest evenly
        rest, stages = L - (first or 0) - (last or 0), pp - (first is not None) - (last is not None)
        if rest < 0 or (stages and rest % stages) or (not stages and rest):
            out.append("the layers left after the first/last stages split evenly over the other stages")
    return out


def violations(text: str, arch: int) -> list[str]:
    """The rules the script breaks (empty: Megatron-LM takes it), on a GPU of compute capability ``arch``
    (9 Hopper, 10 Blackwell): one phrase each."""
    env, a, world = parse(text)
    tp, pp, cp = (a.tensor_model_parallel_size or 1, a.pipeline_model_parallel_size or 1,
                  a.context_parallel_size or 1)
    ep, etp = a.expert_model_parallel_size or 1, a.expert_tensor_parallel_size or tp
    out: list[str] = []
    if world % (tp * pp * cp):
        out.append("tp x pp x cp divides the world size")
    dp = world // (tp * pp * cp)
    if a.micro_batch_size is None or a.seq_length is None:
        out.append("a micro batch size and a sequence length are given")
    elif a.global_batch_size % (a.micro_batch_size * dp):
        out.append("the global batch is a whole number of micro batch x dp")
    groups = a.num_query_groups or a.num_attention_heads
    if a.num_attention_heads % tp or (groups % tp and tp % groups):
        out.append("tp divides the attention heads, and the query groups are a multiple or divisor of tp")
    if a.experimental_attention_variant in ("gdn", "gdn2", "gated_delta_net"):  # TransformerConfig.__post_init__
        keys, values = a.linear_num_key_heads or 16, a.linear_num_value_heads or 32  # its defaults
        if a.experimental_attention_variant != "gdn2" and a.linear_attention_freq is None:
            out.append("a gated delta-net model gives its linear-attention pattern")
        if values % keys:
            out.append("the gated delta-net's value heads are a multiple of its key heads")
        if keys % (tp * cp) or values % (tp * cp):
            out.append("tp x cp divides the gated delta-net's key and value heads")
    out += _pipeline(a)
    interleaved = a.num_layers_per_virtual_pipeline_stage is not None or (
        a.pipeline_model_parallel_layout is not None and len(a.pipeline_model_parallel_layout.split("|")) > pp)
    if interleaved and (a.global_batch_size // (a.micro_batch_size * dp)) % pp:
        out.append("the interleaved schedule runs a multiple of pp micro-batches")
    if a.overlap_param_gather and not (a.use_distributed_optimizer or a.use_megatron_fsdp):
        out.append("overlapping the parameter gather needs the distributed optimizer or Megatron-FSDP")
    if a.overlap_param_gather and not a.overlap_grad_reduce:
        out.append("overlapping the parameter gather needs the gradient reduce overlapped")
    if a.recompute_granularity == "selective" and (a.recompute_method or a.recompute_num_layers):
        out.append("selective recompute takes no recompute method or layer count")
    if a.recompute_granularity == "full" and not a.recompute_method:
        out.append("full recompute names its method")
    modules = set(a.recompute_modules or ())
    if modules - RECOMPUTE_MODULES:
        out.append(f"recompute modules are Megatron's: not {sorted(modules - RECOMPUTE_MODULES)}")
    if modules and a.recompute_granularity != "selective":
        out.append("recompute modules are read only under selective recompute")
    if "moe_act" in modules and not a.moe_grouped_gemm:
        out.append("recomputing moe_act needs grouped GEMMs")
    if "mla_up_proj" in modules and not a.multi_latent_attention:
        out.append("recomputing mla_up_proj needs multi-latent attention")
    fp8_delayed = a.fp8_format is not None and (a.fp8_recipe or "delayed") == "delayed"
    if fp8_delayed and modules & {"moe_act", "layernorm"}:
        out.append("delayed FP8 scaling refuses moe_act and layernorm recompute")
    if a.tp_comm_overlap and not (a.sequence_parallel and tp > 1):
        out.append("TP communication overlap needs sequence parallelism")
    moe = a.num_experts is not None and a.num_experts > 0
    if ep > 1 and (not moe or a.num_experts % ep):
        out.append("the experts are a multiple of the EP degree")
    if (world // pp) % (ep * etp):
        out.append("ep x etp divides the ranks of a pipeline stage (tp x dp x cp)")
    if a.moe_ffn_hidden_size is not None and not moe:
        out.append("an expert FFN width needs experts")
    if a.moe_shared_expert_intermediate_size is not None and a.moe_shared_expert_intermediate_size <= 0:
        out.append("the shared experts' width is positive")
    if a.moe_flex_dispatcher_backend is not None and a.moe_token_dispatcher_type != "flex":
        out.append("a flex dispatcher backend needs --moe-token-dispatcher-type flex")
    dispatcher = a.moe_token_dispatcher_type or "allgather"  # Megatron-Core's default
    if a.overlap_moe_expert_parallel_comm:  # TransformerConfig.__post_init__
        if pp > 1 and not interleaved:
            out.append("the A2A overlap under a pipeline needs virtual stages")
        if ep == 1:
            out.append("the A2A overlap needs expert parallelism")
        if dispatcher not in ("alltoall", "flex"):
            out.append("the A2A overlap needs the alltoall or flex dispatcher")
        if a.recompute_granularity == "full" or a.recompute_method or a.recompute_num_layers or "moe" in modules:
            out.append("the A2A overlap refuses full recompute, a recompute method or layer count, and moe recomputed")
        if not a.bf16:
            out.append("the A2A overlap needs a bf16 or fp16 model")
        if a.moe_shared_expert_overlap:
            out.append("the A2A overlap and the shared-expert overlap exclude each other")
        if (a.mtp_num_layers or 0) > 1:
            out.append("the A2A overlap takes at most one MTP layer")
    if a.moe_shared_expert_overlap and a.moe_shared_expert_intermediate_size and dispatcher not in ("alltoall", "flex"):
        out.append("the shared-expert overlap needs the alltoall or flex dispatcher")
    if a.mtp_num_layers and a.position_embedding_type not in ("rope", "none"):
        out.append("MTP layers need rope or no position embedding")
    if a.use_megatron_fsdp:
        if a.ckpt_format != "fsdp_dtensor":
            out.append("Megatron-FSDP saves only the fsdp_dtensor checkpoint format (--ckpt-format fsdp_dtensor)")
        if env.get("CUDA_DEVICE_MAX_CONNECTIONS") == "1":
            out.append("Megatron-FSDP needs CUDA_DEVICE_MAX_CONNECTIONS above 1 or unset")
    elif a.ckpt_format == "fsdp_dtensor":
        out.append("the fsdp_dtensor checkpoint format is Megatron-FSDP's")
    elif (tp > 1 or cp > 1) and arch < 10 and env.get("CUDA_DEVICE_MAX_CONNECTIONS") != "1" and not (
            a.overlap_moe_expert_parallel_comm):  # with the A2A overlap Megatron-LM only warns
        out.append("tensor or context parallelism before Blackwell needs CUDA_DEVICE_MAX_CONNECTIONS=1")
    return out


def accelerator_arch(name: str) -> Optional[int]:
    """The compute capability's major version of an accelerator perfzoo names (None: not NVIDIA)."""
    for prefix, arch in (("H100", 9), ("H200", 9), ("GH200", 9), ("A100", 8), ("B200", 10), ("B300", 10),
                         ("GB200", 10), ("GB300", 10)):
        if name.upper().startswith(prefix):
            return arch
    return None
