"""The built-in search spaces (see :mod:`perfzoo.spaces` for what each one is)."""

from __future__ import annotations

from typing import Optional

from perfzoo.spaces._base import Categorical, Constraint, Dimension, Integer, Space, SpaceError, register

# built-in: fsdp-ads ----------------------------------------------------------------------

FSDP_N_LAYERS = 11
# memory above the rank's footprint, GiB, at which a job fits: 0.053-0.055 with FULL_SHARD
# everywhere at batch 8, 0.056-0.058 at batch 128, over 0.070 with NO_SHARD everywhere (bisected
# with real OOMs, which harness.protocol makes the same on every repeat)
FSDP_V2_HEADROOM = (0.055, 0.057, 0.059, 0.061, 0.063, 0.065, 0.067, 0.069, 0.071)
SHARDING = ("FULL_SHARD", "SHARD_GRAD_OP", "NO_SHARD")

def _fsdp_space(name: str, batches: tuple, memory: Dimension, constants: dict, description: str) -> Space:
    """A per-layer sharding x local batch x memory space of the ``fsdp`` workload on 2 ranks."""
    return Space(
        name=name,
        workload="fsdp",
        dimensions=[Categorical(f"shard_{i:02d}", f"sharding strategy of layer {i}", choices=SHARDING)
                    for i in range(FSDP_N_LAYERS)]
        + [Categorical("local_batch", "examples per rank per step", choices=batches), memory],
        constants={"n_layers": FSDP_N_LAYERS, **constants, "n_tables": 8, "rows_per_table": 4096,
                   "emb_dim": 32, "world_size": 2, "fsdp_api": "fsdp2", "precision": "fp32"},
        world_size_key="world_size",
        description=description,
    )


FSDP_ADS = register(_fsdp_space(
    "fsdp-ads", (16, 32, 64, 128, 256),
    Categorical("memory_budget_gib", "per-rank memory limit in GiB (None: unlimited)",
                choices=(0.36, 0.365, 0.37, 0.375, 0.38, 0.385, 0.39, 0.40, None)),
    {"width": 128}, "ads-model per-layer FSDP sharding x local batch x memory budget, 2 CPU ranks"))


# built-in: fsdp-ads-v2 -------------------------------------------------------------------

# output width of each layer of the v2 tower (input 64): layers of 15k to 530k parameters
FSDP_V2_WIDTHS = (128, 256, 256, 128, 64, 32, 64, 192, 192, 64, 32)

FSDP_ADS_V2 = register(_fsdp_space(
    "fsdp-ads-v2", (8, 16, 32, 64, 128),
    Categorical("memory_headroom_gib", "per-rank memory limit above the rank's own footprint after "
                "runtime and process-group start, GiB", choices=FSDP_V2_HEADROOM),
    {"width": 64, **{f"width_{i:02d}": w for i, w in enumerate(FSDP_V2_WIDTHS)}},
    "ads-model per-layer FSDP sharding x local batch x memory headroom, 11 layers of 15k-530k "
    "parameters, 2 CPU ranks"))


# built-in: llm-small ---------------------------------------------------------------------

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

    def tokens(c):
        t = c["micro_batch_size"] * c["seq_len"]
        if t > 512:
            return (f"micro_batch_size x seq_len = {c['micro_batch_size']} x {c['seq_len']} = {t} tokens "
                    "per rank exceeds 512 (keeps a CPU job to seconds)")
        return None

    return [Constraint("heads_divide_hidden", heads), Constraint("gqa_groups", gqa),
            Constraint("tokens_per_rank", tokens)]


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
    from harness.workloads.llm_shapes import param_counts  # pure arithmetic, no torch

    return {"global_batch_size": int(gbs), "grad_accum": accum, "dp": dp, "tp": 1, "pp": 1, "cp": 1,
            "n_params": param_counts(c)[0]}


LLM_SMALL = register(Space(
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
))


# built-in: llm-gpu ------------------------------------------------------------------------

GPU_HEAD_DIM = 128


def llm_gpu_derived(c: dict) -> dict:
    """The Llama-style shape that follows from depth and width (head dim 128, SwiGLU width
    ``8/3 d`` rounded up to 256, as Llama's), then :func:`llm_derived`."""
    d = int(c["hidden_dim"])
    shape = {"n_heads": d // GPU_HEAD_DIM, "ffn_dim": -(-(8 * d // 3) // 256) * 256}
    return {**shape, **llm_derived({**c, **shape})}


def _llm_gpu_constraints() -> list[Constraint]:
    def tokens(c):
        t = c["micro_batch_size"] * c["seq_len"]
        if t > 32768:
            return (f"micro_batch_size x seq_len = {c['micro_batch_size']} x {c['seq_len']} = {t} tokens "
                    "per step exceeds 32,768 (keeps one measured step of a 3B model near a second)")
        return None

    return [Constraint("tokens_per_step", tokens)]


LLM_GPU = register(Space(
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
    constraints=_llm_gpu_constraints(),
    world_size_key="n_gpus",
    description="Llama-style decoder of 0.1-3B parameters on one GPU: depth, width, sequence, "
                "micro batch, bf16/fp8, activation checkpointing, compile",
))


# built-in: megatron-a100 (Megatron-style 3D parallelism, the vTrain records' knobs) ------------

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


MEGATRON_A100 = register(megatron_space(name="megatron-a100"))
