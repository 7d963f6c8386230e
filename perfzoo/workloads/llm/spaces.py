"""The ``llm`` workload's search spaces.

``llm-small``
    A Llama-style decoder small enough that one training job takes seconds on 2 CPU cores:
    model shape, micro batch, sequence, precision, activation checkpointing, compile, FSDP
    reshard policy and 1 or 2 ranks.
``llm-gpu``
    The same decoder at GPU scale, one GPU: 8-28 blocks of width 1,024-3,072 (0.1-3B
    parameters, head dim 128, 4 KV heads, vocabulary 32,768), sequences of 1k-8k tokens, micro
    batch 1-16 (at most 32k tokens a step), bf16 or fp8, activation checkpointing, compile.
``megatron-a100``
    Megatron-style tensor / pipeline / data parallel degrees, micro batch and gradient
    accumulation with the ``vtrain-a100`` records' knobs (:func:`megatron_space`): a space for
    search only, the harness has no tensor or pipeline parallelism.
"""

from __future__ import annotations

from typing import Optional

from harness.workloads.llm_shapes import param_counts  # pure arithmetic, no torch
from perfzoo.records.vocabulary import normalize_precision
from perfzoo.spaces import Categorical, Constraint, Integer, Space, SpaceError

def _tokens_at_most(name: str, limit: int, per: str, why: str) -> Constraint:
    """At most ``limit`` tokens (micro batch x sequence) per ``per``."""
    def tokens(c):
        t = c["micro_batch_size"] * c["seq_len"]
        if t > limit:
            return (f"micro_batch_size x seq_len = {c['micro_batch_size']} x {c['seq_len']} = {t} tokens "
                    f"per {per} exceeds {limit:,} ({why})")
        return None

    return Constraint(name, tokens)


def _llm_constraints() -> list[Constraint]:
    def heads(c):
        if c["hidden_dim"] % c["n_heads"]:
            return f"hidden_dim = {c['hidden_dim']} is not divisible by n_heads = {c['n_heads']}"
        if (c["hidden_dim"] // c["n_heads"]) % 2:
            return f"head dim hidden_dim / n_heads = {c['hidden_dim'] // c['n_heads']} must be even (rotary)"
        return None

    def gqa(c):
        if c["n_kv_heads"] > c["n_heads"] or c["n_heads"] % c["n_kv_heads"]:
            return f"n_heads = {c['n_heads']} is not divisible by n_kv_heads = {c['n_kv_heads']}"
        return None

    return [Constraint("heads_divide_hidden", heads), Constraint("gqa_groups", gqa),
            _tokens_at_most("tokens_per_rank", 512, "rank", "keeps a CPU job to seconds")]


def llm_derived(c: dict) -> dict:
    """Keys of the LLM vocabulary that follow from the knobs: dp, grad_accum, global batch, ..."""
    dp = int(c["n_gpus"])
    micro = int(c["micro_batch_size"])
    gbs = c.get("global_batch_size")
    if gbs is None:
        accum = int(c.get("grad_accum") or 1)
        gbs = micro * dp * accum
    else:
        if int(gbs) % (micro * dp):
            raise SpaceError(f"global_batch_size = {gbs} is not divisible by micro_batch_size x dp = "
                             f"{micro} x {dp} = {micro * dp}")
        accum = int(gbs) // (micro * dp)
    return {"global_batch_size": int(gbs), "grad_accum": accum, "dp": dp, "tp": 1, "pp": 1, "cp": 1,
            "n_params": param_counts(c)[0]}


LLM_SMALL = Space(
    name="llm-small",
    workload="llm",
    dimensions=[
        Categorical("n_layers", "decoder blocks", choices=(2, 4)),
        Categorical("hidden_dim", "model dimension", choices=(128, 256)),
        Categorical("n_heads", "attention heads", choices=(2, 4, 8)),
        Categorical("n_kv_heads", "key/value heads (grouped-query attention)", choices=(1, 2, 4, 8)),
        Integer("ffn_dim", "SwiGLU hidden size", low=256, high=1024, step=256),
        Categorical("vocab_size", "vocabulary", choices=(2048, 8192)),
        Categorical("seq_len", "tokens per sequence", choices=(64, 128, 256)),
        Categorical("micro_batch_size", "sequences per rank per micro-step", choices=(1, 2, 4)),
        Categorical("precision", "fp32, or bf16 mixed precision", choices=("fp32", "bf16")),
        Categorical("activation_checkpointing", "recompute activations", choices=("none", "selective", "full")),
        Categorical("compile", "torch.compile each block", choices=(False, True)),
        Categorical("fsdp", "FSDP2 reshard policy", choices=("full_shard", "shard_grad_op", "no_shard")),
        Categorical("n_gpus", "ranks (CPU processes or GPUs)", choices=(1, 2)),
    ],
    constants={},
    derived=llm_derived,
    constraints=_llm_constraints(),
    world_size_key="n_gpus",
    description="Llama-style decoder small enough for seconds per job on 2 CPU cores",
)


GPU_HEAD_DIM = 128


def harness_recipe(c: dict) -> dict:
    """What the harness's llm build implies for a config: its FP8 linears quantize the forward GEMM
    only and run both backward GEMMs in BF16 (``harness.workloads.llm._Fp8Matmul``), so a
    low-precision config has ``low_precision_backward`` false; nothing for the others.

    >>> harness_recipe({"precision": "fp8"}), harness_recipe({"precision": "bf16"})
    ({'low_precision_backward': False}, {})
    """
    low = c.get("precision") is not None and normalize_precision(c["precision"]) in ("fp8", "fp4")
    return {"low_precision_backward": False} if low else {}


def llm_gpu_derived(c: dict) -> dict:
    """The Llama-style shape that follows from depth and width (head dim 128, SwiGLU width
    ``8/3 d`` rounded up to 256, as Llama's), then :func:`llm_derived` and :func:`harness_recipe`."""
    d = int(c["hidden_dim"])
    shape = {"n_heads": d // GPU_HEAD_DIM, "ffn_dim": -(-(8 * d // 3) // 256) * 256}
    return {**shape, **llm_derived({**c, **shape}), **harness_recipe(c)}


LLM_GPU = Space(
    name="llm-gpu",
    workload="llm",
    dimensions=[
        Categorical("n_layers", "decoder blocks", choices=(8, 12, 16, 20, 24, 28)),
        Categorical("hidden_dim", "model dimension (heads of 128)", choices=(1024, 1536, 2048, 2560, 3072)),
        Categorical("seq_len", "tokens per sequence", choices=(1024, 2048, 4096, 8192)),
        Categorical("micro_batch_size", "sequences per GPU per micro-step", choices=(1, 2, 4, 8, 16)),
        Categorical("precision", "bf16 mixed precision, or fp8 forward matmuls", choices=("bf16", "fp8")),
        Categorical("activation_checkpointing", "recompute activations", choices=("none", "selective", "full")),
        Categorical("compile", "torch.compile each block", choices=(False, True)),
    ],
    constants={"n_kv_heads": 4, "vocab_size": 32768, "fsdp": "full_shard", "n_gpus": 1},
    derived=llm_gpu_derived,
    constraints=[_tokens_at_most("tokens_per_step", 32768, "step",
                                 "keeps one measured step of a 3B model near a second")],
    world_size_key="n_gpus",
    description="Llama-style decoder of 0.1-3B parameters on one GPU: depth, width, sequence, "
                "micro batch, bf16/fp8, activation checkpointing, compile",
)


def megatron_space(n_layers: int = 24, hidden_dim: int = 1024, ffn_dim: int = 4096, n_heads: int = 16,
                   seq_len: int = 1024, n_gpus: int = 8, name: Optional[str] = None) -> Space:
    """Tensor / pipeline / data parallel degrees, micro batch and gradient accumulation for one
    GPT model on ``n_gpus`` GPUs, with the knob values of the ``vtrain-a100`` records
    (tp 1-8, pp 1-4, micro batch 1-8, 2-16 micro-batches per step). Constraints: tp x pp
    divides the GPU count (dp = n_gpus / (tp x pp)), tp divides the heads, pp the layers;
    derived: dp and the global batch (micro x dp x accumulation)."""
    def degrees(c):
        if n_gpus % (c["tp"] * c["pp"]):
            return f"tp x pp = {c['tp']} x {c['pp']} does not divide n_gpus = {n_gpus}"
        return None

    def heads(c):
        return None if c["n_heads"] % c["tp"] == 0 else f"n_heads = {c['n_heads']} is not divisible by tp = {c['tp']}"

    def layers(c):
        return None if c["n_layers"] % c["pp"] == 0 else f"n_layers = {c['n_layers']} is not divisible by pp = {c['pp']}"

    def derived(c):
        dp = n_gpus // (int(c["tp"]) * int(c["pp"]))
        return {"dp": dp, "cp": 1, "global_batch_size": int(c["micro_batch_size"]) * dp * int(c["grad_accum"])}

    return Space(
        name=name or f"megatron-gpt-{n_layers}L-{hidden_dim}h-{n_gpus}gpu",
        workload="llm",
        dimensions=[Categorical("tp", "tensor parallel degree", choices=(1, 2, 4, 8)),
                    Categorical("pp", "pipeline parallel degree", choices=(1, 2, 4)),
                    Categorical("micro_batch_size", "sequences per micro-batch", choices=(1, 2, 4, 8)),
                    Categorical("grad_accum", "micro-batches per step", choices=(2, 4, 8, 16))],
        constants={"model_name": f"gpt-{n_layers}L-{hidden_dim}h", "n_layers": n_layers, "hidden_dim": hidden_dim,
                   "ffn_dim": ffn_dim, "n_heads": n_heads, "n_kv_heads": n_heads, "seq_len": seq_len,
                   "n_gpus": n_gpus, "fsdp": "none"},
        derived=derived,
        constraints=[Constraint("degrees_divide_gpus", degrees), Constraint("tp_divides_heads", heads),
                     Constraint("pp_divides_layers", layers)],
        world_size_key="n_gpus",
        description=f"Megatron-style tp x pp x dp and micro batch for gpt-{n_layers}L-{hidden_dim}h on {n_gpus} GPUs "
                    "(the vtrain-a100 knobs)",
        runnable=False,  # the llm workload has no tensor or pipeline parallelism
    )


MEGATRON_A100 = megatron_space(name="megatron-a100")
