"""Peak memory per device of an LLM training step: model state under every sharding, the
activations every checkpointing mode keeps, the buffers of the step's phases, and the framework's
fixed overheads. Checked against measured peaks: ``python scripts/memory_benchmark.py``.

Model state, bytes per parameter (mixed precision; fp32 training holds 4 + 4 + 8):

* torch FSDP (``fsdp`` = ``full_shard``, ``shard_grad_op``, ``hybrid_shard``, ``no_shard``: FSDP2
  ``MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32)`` as torchtitan and perfzoo's harness
  run it, llm-foundry's FSDP the same): fp32 sharded parameters 4, fp32 gradients 4, Adam's m and v
  8. The forward and backward compute on bf16 copies all-gathered per block: ``full_shard`` frees
  them after each block (two blocks in flight with prefetching, plus the root module's embedding and
  LM head, which FSDP2 keeps gathered), ``shard_grad_op`` keeps every block's from forward to
  backward (``2 B x`` the local parameters). Gradients are set to None before each step's forward
  (``zero_grad(set_to_none=True)``): they exist during the forward only while micro-batches
  accumulate (``m > 1``).
* Megatron / DeepSpeed data parallelism (``none``, ``zero1``): bf16 parameters 2, an fp32 main-
  gradient buffer 4 (Megatron accumulates and reduces bf16 gradients in fp32; a framework whose
  ``grad_reduce_dtype`` is bf16: 2, as Megatron-Bridge's performance recipes set
  ``grad_reduce_in_fp32 = False``, ``scripts/performance`` of NVIDIA-NeMo/Megatron-Bridge), fp32 master weights,
  m and v 12 (Rajbhandari et al. 2020, ZeRO). The gradient buffer is allocated once and lives
  through the step. ``none`` (no FSDP: Megatron's data parallelism, which NeMo, Megatron-Bridge and
  Megatron-LM's recipes run with the distributed optimizer) shards the optimizer state like
  ``zero1``; ``no_shard`` (DDP, FSDP's NO_SHARD) shards nothing.
* Sharding divides over the data-parallel group ``D = dp*cp`` (``hybrid_shard``: within its
  ``shard_group``, by default a node):
  ``none`` and ``zero1`` the optimizer, ``shard_grad_op`` also gradients and the fp32 parameters,
  ``full_shard`` everything. TP and PP split the blocks; the first and last pipeline stages also hold the
  embedding and the LM head (``V*d/tp`` each); expert parallelism splits the routed experts over
  ``ep*etp`` ranks, whose state shards over the expert-data-parallel group ``dp*cp*tp/(ep*etp)``
  (Megatron-Core's MoE parallel folding). Adapter tuning (LoRA) holds the parameters only.

Activations, bytes per token per layer (16-bit), as three kinds of implementation save them; the
kind is read from ``compile``: ``False`` eager PyTorch, ``True`` ``torch.compile``d blocks, unknown
fused kernels (Megatron-Core with Transformer Engine, llm-foundry), since published frameworks say
nothing about it. ``h`` head width, ``a`` heads, ``kv`` KV heads:

* a norm: eager 8d (its fp32 copy 4d, the normalized 2d, the affine output the next matmul saves
  2d); compiled and fused 4d (input and output). Attention: query, keys, values and output,
  ``2*(a*h_qk + kv*h_qk + kv*h_v + a*h_v)`` (eager expands grouped-query keys and values to all ``a``
  heads before ``scaled_dot_product_attention``), flash attention assumed (``flash_attention =
  False`` adds the ``5*a*s`` of the materialized scores, Korthikanti et al. 2022); MLA also keeps its
  latents ``4*(q_lora_rank + kv_lora_rank) + 2*rope``. A gated MLP: eager and compiled 8f (gate,
  its activation, up, and their product), fused 6f (Transformer Engine's fused SwiGLU keeps the
  fc1 output 4f and the fc2 input 2f); a plain MLP 4f. Fused kernels in a low-precision recipe
  (Transformer Engine's FP8, MXFP8, NVFP4) keep the quantized copy of each linear layer's input
  for its weight gradient, ``q`` = 1 byte (1/2 in NVFP4) per element instead of 2: the norm's
  output, fc2's input and each routed copy's expert input, and the output projection's input
  ``q*a*h_v`` beside the 16-bit attention output the attention backward keeps; PyTorch's float8
  (torchao; ``compile`` stated) keeps the 16-bit tensors. An MoE layer: the router's fp32 logits and
  probabilities ``8E``, and per routed copy (``K x`` capacity factor) the permuted input 2d, the
  expert MLP and its output 2d; plus the shared experts' MLP. A Mamba-2 layer: the in-projection
  output ``2*(2di + 2GN + heads)``, the convolution output ``2*(di + 2GN)`` and the scan output and
  gated norm ``6*di``.
* checkpointing ``full`` keeps each layer's input (2d; one block, attention with its MLP or MoE
  layer, is recomputed at a time, on every pipeline stage, while the loss buffers are already freed); ``selective`` in PyTorch (eager or compiled: torchtitan's and
  perfzoo's op-level policy, which saves the matmul and attention outputs and recomputes the rest)
  keeps the block input, the q/k/v/o and MLP matmul outputs; ``selective`` in Megatron (fused)
  recomputes only the attention core, i.e. drops the ``5*a*s`` term (Korthikanti et al. 2022), and
  the modules ``moe_recompute`` names free what :mod:`.recompute` says they keep.
* tensor parallelism divides everything by ``tp`` with sequence parallelism (assumed on with
  ``tp > 1``, as Megatron and torchtitan run it, unless ``sequence_parallel`` is false), else all but
  the norms; context parallelism holds ``s/cp`` tokens.
* pipelines: each rank holds :func:`in_flight` micro-batches' worth of its stage's layers at its
  peak (the schedule's warm-up forwards plus the one before the first backward): 1F1B rank ``r``
  (0 first) ``min(pp - r, m)``, so the first stage ``min(pp, m)``; Megatron's interleaved schedule with
  ``vp`` virtual stages ``min(m*vp, 2(pp-1-r) + (vp-1)pp + 1)`` chunks of ``1/vp`` of the stage
  (Narayanan et al. 2021; Megatron-Core's ``get_pp_rank_microbatches``), the first stage ``pp*vp + pp
  - 1`` chunks, ``(1 + (pp-1)/(pp*vp)) x pp`` micro-batches; the last stage also holds the loss
  buffers, and each stage one micro-batch's gradient at its boundary (received on the first, sent
  on the last: ``2d``, ``/tp`` with sequence parallelism; :meth:`Memory.activation_bytes` works a
  1F1B stage of a BLOOM-176B-like model at micro-batch 1, 2 and 4). A stage holds ``stage_layers`` layers, the heaviest rank's of an uneven split
  (:mod:`.llm`: ``vp*ceil(L/(pp*vp))``, ``L/pp`` when ``pp*vp`` divides ``L``).
* loss: PyTorch computes the cross entropy on an fp32 copy of the bf16 logits; at the start of
  backward the logits 2V, the log-softmax 4V, its gradient 4V and the input gradient 4V are alive,
  14V per token (``/tp`` with a vocabulary-parallel loss; measured on ``llm-h100``); a fused loss
  kernel keeps the bf16 logits and writes their gradient in place, 2V (llm-foundry's flash-attn
  cross entropy, Megatron-Core's ``cross_entropy_loss_fusion`` that Megatron-Bridge's recipes turn on;
  ``fused_loss`` says which where it is known: torchtitan compiles its loss with the model since
  2025-04, which the published loader sets).

Peak allocated bytes = the larger of two phases: the start of backward (parameters, optimizer state,
gradients where alive, FSDP's gathered copies, activations and loss buffers) and the optimizer step
(parameters, gradients, optimizer state and, with PyTorch's foreach AdamW, a 4 B per parameter
temporary for ``sqrt(v)``).

torchtitan (its bundle's traits ``fused_norm``, ``selective_policy``, ``pipelined_fsdp`` and
``expandable_segments``, :class:`perfzoo.frameworks.Physics`): its RMSNorm is a fused kernel (``fused_rmsnorm`` in its presets, or
compiled) even in eager mode; its selective ``op`` policy saves the output of every other matmul
(q, v, w1, w2 of q, k, v, o, w1, w3, w2) and the attention core's, recomputing the rest; under a
pipeline its FSDP keeps each stage's parameters gathered (``reshard_after_forward=False``) and
``torch.distributed.pipelining`` defers the gradient reduce-scatter to the last micro-batch (the
stage's unsharded fp32 gradients stay); its launcher sets ``expandable_segments:True``, so the
allocator's fragmentation term below is 0.

Overheads (not in torch's allocated count; ``overhead_bytes``): the CUDA context and library
workspaces, 1.3 GiB (the "non-PyTorch memory" of every OOM message in the ``llm-h100`` dataset,
H100, torch 2.11, CUDA 13.0); allocator fragmentation, :data:`FRAGMENTATION` times the largest
single allocation, a micro-batch's logits (``4*V*tokens/tp`` in fp32; 2 bytes fused): a request
that large fails when the free memory is in smaller pieces; calibrated on ``llm-h100``'s OOM
boundary (the multiples that separate its OOM jobs from its ok jobs, see the dataset card); NCCL
buffers, :data:`NCCL_BUFFERS` per parallel group of more than one rank (not calibrated: no
measurement in the data sees them); DeepEP's NVLink and RDMA buffers, once per process where an MoE
dispatcher runs its kernels (:mod:`.moe_memory`). ``peak_allocated_bytes`` is what ``torch.cuda.max_memory_allocated``
reports; ``memory_bytes`` = peak allocated + overheads, what ``nvidia-smi`` shows the process using
(the caching allocator's reserve, the CUDA context, NCCL's buffers);
``memory_fraction`` = that over the device's memory.

Whether a layout fits (:class:`MemoryRule`, the one rule ``predict`` and ``plan`` apply): the
predicted peak allocated times :data:`PEAK_ERROR` (the memory model's error at :data:`PEAK_RISK`:
the 95th percentile of measured over predicted peaks, :func:`peak_error`, on perfzoo's own jobs)
plus the overheads, within the device's memory; or, with a ``margin`` given (``--memory-margin``),
``memory_bytes`` within the device's memory less that fraction of it.

>>> rule = MemoryRule()
>>> rule.fits(np.array([70.0, 76.0]) * GIB, np.array([72.0, 78.0]) * GIB, np.array([79.2, 79.2]) * GIB).tolist()
[True, False]
>>> MemoryRule(margin=0.1).fits(np.array([70.0]) * GIB, np.array([72.0]) * GIB, np.array([79.2]) * GIB).tolist()
[False]
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Optional

import numpy as np

from perfzoo.console import InputError
from perfzoo.analytic._frame import GIB, is_code, trait
from perfzoo.analytic.moe_memory import dispatcher_buffer_bytes
from perfzoo.frameworks import ALTERNATE_MATMULS
from perfzoo.records.vocabulary import CHECKPOINTING, PRECISIONS, SHARDINGS

FP32_BYTES = (4.0, 4.0, 8.0, 4.0)  # params, grads, optimizer, activations
MIXED_BYTES = (2.0, 2.0, 12.0, 2.0)  # ZeRO's accounting (the fsdp workload's cost model uses it)
FSDP_MIXED = (4.0, 4.0, 8.0)  # torch FSDP mixed precision: fp32 sharded params, fp32 grads, Adam
MEGATRON_MIXED = (2.0, 4.0, 12.0)  # bf16 params, fp32 main grads, fp32 master + Adam
BF16_GRAD_BYTES = 2.0  # Megatron-Bridge's performance recipes: grad_reduce_in_fp32 = False
FOREACH_ADAM_TEMP = 4.0  # bytes per local fp32 parameter: torch's foreach AdamW's sqrt(v) list
CONTEXT_BYTES = 1.3 * GIB  # CUDA context + workspaces, measured on llm-h100 (non-PyTorch memory)
FRAGMENTATION = 1.9  # x the largest allocation: inside (1.81, 1.93], the multiples that separate llm-h100 OOMs
NCCL_BUFFERS = 0.5 * GIB  # per communicator in use; an order of magnitude from NCCL_BUFFSIZE x channels
PREFETCHED_BLOCKS = 2.0  # FSDP's gathered blocks in flight (current + prefetched)
# measured / predicted peak allocated at its 95th percentile on perfzoo's own measured peaks (llm-h100 and
# llm-h200: 467 jobs that ran; python scripts/memory_benchmark.py --section rule prints it, tests/test_memory.py
# recomputes it): a layout the rule passes runs out of memory in about 1 of 20 cases where the model errs the most
PEAK_RISK = 0.05
PEAK_ERROR = 1.042

EAGER, COMPILED, FUSED = 0, 1, 2


def in_flight(pp, vp, m, rank):
    """Micro-batches' worth of its stage's activations pipeline rank ``rank`` (0 the first) holds
    at its peak, with ``m`` micro-batches per step: its warm-up forwards plus the one it runs before
    its first backward, as many as there are at most. 1F1B (``vp`` 1): ``pp - rank - 1`` warm-up
    forwards; Megatron's interleaved schedule: ``2(pp - rank - 1) + (vp - 1)pp`` chunk forwards,
    each ``1/vp`` of the stage.

    >>> in_flight(4, 1, 8, np.arange(4))  # 1F1B: stage i of p holds p - i
    array([4., 3., 2., 1.])
    >>> in_flight(4, 2, 8, np.array([0, 3]))  # interleaved: (2*3 + 4 + 1) / 2, (4 + 1) / 2
    array([5.5, 2.5])
    """
    pp, vp, m, rank = (np.asarray(x, dtype=float) for x in (pp, vp, m, rank))
    warm = np.where(vp > 1, 2.0 * (pp - rank - 1.0) + (vp - 1.0) * pp, pp - rank - 1.0)
    return np.minimum(warm + 1.0, m * vp) / vp


def _norm(profile: np.ndarray, d: np.ndarray, q: np.ndarray) -> np.ndarray:
    """A norm's input and output (the next matmul's input, kept ``q`` bytes wide)."""
    return np.where(profile == EAGER, 8.0, 2.0 + q) * d


def _mlp(profile: np.ndarray, f: np.ndarray, gated: np.ndarray, q: np.ndarray) -> np.ndarray:
    """An MLP's kept activations: fc1's output and fc2's input (``q`` bytes wide)."""
    fused = np.where(gated > 0, 4.0, 2.0) + q
    return np.where(profile == FUSED, fused, np.where(gated > 0, 8.0, 4.0)) * f


class Memory:
    """The memory model of an :class:`~perfzoo.analytic.llm.LLMCost` (its shape, layout,
    precision and device figures), as per-row arrays."""

    def __init__(self, cost):
        self.c = cost
        self.shape = cost.shape
        compile_ = cost.compile_flag
        self.profile = np.where(np.isnan(compile_), FUSED, np.where(compile_ > 0, COMPILED, EAGER))
        self.torch_fsdp = is_code(cost.sharding, SHARDINGS, "full_shard", "shard_grad_op", "hybrid_shard", "no_shard")
        self.fp32 = is_code(cost.precision, PRECISIONS, "fp32")
        # bytes per element of the matmul inputs backward keeps: Transformer Engine's low-precision
        # recipes keep the quantized copy (fused kernels), PyTorch's float8 the 16-bit tensor
        width = cost.width
        self.kept = np.where((self.profile == FUSED) & (width < 2.0), width, 2.0)
        self.bf16_grads = trait(cost.framework, "grad_reduce_dtype") == "bf16"
        # each stage's parameters gathered through the step, the gradient reduce-scatter after the last
        # micro-batch (torchtitan's FSDP under a pipeline; module docstring)
        self.pipelined_fsdp = trait(cost.framework, "pipelined_fsdp") & (cost.pp > 1) & self.torch_fsdp
        # a fused RMSNorm kernel (torchtitan's fused_rmsnorm / compiled) even in eager mode
        self.norm_profile = np.where(trait(cost.framework, "fused_norm") & (self.profile == EAGER), COMPILED,
                                     self.profile)
        self.alternate = trait(cost.framework, "selective_policy") == ALTERNATE_MATMULS  # torchtitan's "op" policy
        self.expandable = trait(cost.framework, "expandable_segments")
        # the cross entropy as fused kernels (no fp32 copy of the logits): stated, else the fused profile
        self.fused_loss = np.where(np.isnan(cost.fused_loss_flag), self.profile == FUSED, cost.fused_loss_flag > 0)

    # model state -----------------------------------------------------------------------
    @cached_property
    def local_blocks(self) -> np.ndarray:
        """The blocks' dense parameters a device holds of one pipeline stage (no embedding, LM head
        or routed experts), before data-parallel sharding."""
        sh = self.shape
        return (sh.block_params - sh.expert_params) * self.c.stage_share / self.c.tp

    @cached_property
    def local_params(self) -> tuple[np.ndarray, np.ndarray]:
        """(dense, expert) parameters on the heaviest pipeline stage, before data-parallel sharding."""
        c, sh = self.c, self.shape
        ends = np.where(c.pp > 1, sh.V * sh.d, sh.embedding_params)  # embedding / LM head stage
        dense = self.local_blocks + ends / c.tp
        return dense, sh.expert_params * c.stage_share / np.maximum(c.ep * c.etp, 1.0)

    def bytes_per_param(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        p, g, o = (np.where(self.fp32, x32, np.where(self.torch_fsdp, xf, xm))
                   for x32, xf, xm in zip(FP32_BYTES, FSDP_MIXED, MEGATRON_MIXED))
        g = np.where(self.bf16_grads & ~self.fp32 & ~self.torch_fsdp, BF16_GRAD_BYTES, g)
        trains = 1.0 - self.c.adapters  # adapter tuning: no weight gradients, no optimizer state
        return p, g * trains, o * trains

    def shard_groups(self) -> tuple[np.ndarray, np.ndarray]:
        """(dense, expert) data-parallel groups the state shards over."""
        c = self.c
        D = c.dp * c.cp
        hybrid = is_code(c.sharding, SHARDINGS, "hybrid_shard")
        group = np.where(np.isnan(c.shard_group), c.hw.node_size, c.shard_group)
        dense = np.where(hybrid, np.minimum(D, group), D)
        expert = np.maximum(dense * c.tp / c.expert_dp_group()[1], 1.0)
        return np.maximum(dense, 1.0), expert

    def state_bytes(self) -> dict[str, np.ndarray]:
        s = self.c.sharding
        full = is_code(s, SHARDINGS, "full_shard", "hybrid_shard")
        grad_op = is_code(s, SHARDINGS, "shard_grad_op")
        zero1 = is_code(s, SHARDINGS, "zero1", "none")  # Megatron's distributed optimizer
        p_b, g_b, o_b = self.bytes_per_param()
        (dense, expert), (D, De) = self.local_params, self.shard_groups()

        def sharded(bytes_, on):
            return bytes_ * (dense / np.where(on, D, 1.0) + expert / np.where(on, De, 1.0))

        # torch FSDP's SHARD_GRAD_OP shards the fp32 parameters at rest too
        return {"param_bytes": sharded(p_b, full | (grad_op & self.torch_fsdp)),
                "grad_bytes": sharded(g_b, full | grad_op),
                "optimizer_bytes": sharded(o_b, full | grad_op | zero1)}

    def gathered_bytes(self) -> np.ndarray:
        """FSDP's bf16 working copies alive at the start of backward; under torchtitan's pipeline
        also the stage's unsharded fp32 gradients, accumulated until the last micro-batch."""
        c, sh = self.c, self.shape
        dense, expert = self.local_params
        local = dense + expert
        per_block = local / np.maximum(c.stage_layers, 1.0)
        root = np.where(c.pp > 1, sh.V * sh.d, sh.embedding_params) / c.tp
        keep_all = is_code(c.sharding, SHARDINGS, "shard_grad_op") | self.pipelined_fsdp
        working = np.where(keep_all, local, root + PREFETCHED_BLOCKS * per_block)
        unsynced = np.where(self.pipelined_fsdp & (c.m > 1), FSDP_MIXED[1] * local * (1.0 - c.adapters), 0.0)
        return np.where(self.torch_fsdp, 2.0 * working + unsynced, 0.0)

    # activations -----------------------------------------------------------------------
    def layer_bytes(self) -> dict[str, np.ndarray]:
        """Bytes per local token each kind of layer keeps without checkpointing, and what the
        block boundaries keep: ``attention``, ``mlp``, ``moe``, ``mamba``, ``linear`` (the gated
        delta-net: its projections' outputs, the convolved q, k, v, the core's and the gated norm's
        outputs; norms included)."""
        sh, pr = self.shape, self.profile
        d, a = sh.d, sh.a
        kv = np.where(pr == EAGER, a, sh.kv_heads)
        qkvo = 2.0 * (a * sh.h_qk + kv * sh.h_qk + kv * sh.h_v + a * sh.h_v)
        latents = np.where(sh.mla, 4.0 * (sh.ql + np.where(sh.mla, sh.kvl, 0.0)) + 2.0 * sh.rope, 0.0)
        scores = np.where(self.c.flash > 0, 0.0, 5.0 * a * sh.s / self.c.cp)
        q = self.kept
        norm = _norm(self.norm_profile, d, q)
        moe = sh.moe
        routed = moe.K * moe.capacity * ((2.0 + q) * d + _mlp(pr, moe.fe, sh.gated, q))
        mamba_in = 2.0 * (2.0 * sh.di + 2.0 * sh.mamba_G * sh.mamba_N + sh.mamba_heads)
        keys, values = sh.lin_nk * sh.lin_dk, sh.lin_nv * sh.lin_dv
        linear_in = 2.0 * (2.0 * keys + 2.0 * values + 2.0 * sh.lin_nv)
        return {
            "norm": norm,
            "attention": norm + qkvo + latents + scores + (q < 2.0) * q * a * sh.h_v,  # + the output proj's input
            "mlp": norm + _mlp(pr, sh.f, sh.gated, q),
            "moe": norm + 8.0 * moe.E + routed + _mlp(pr, moe.fs, sh.gated, q) * (moe.fs > 0),
            "mamba": norm + mamba_in + 2.0 * (sh.di + 2.0 * sh.mamba_G * sh.mamba_N) + 6.0 * sh.di,
            "linear": norm + linear_in + 2.0 * (2.0 * keys + values) + 4.0 * values,
        }

    def selective_layer_bytes(self) -> dict[str, np.ndarray]:
        """PyTorch's op-level selective checkpointing: each sublayer's matmul outputs (the block
        inputs are counted once per block, :meth:`model_bytes_per_token`)."""
        sh = self.shape
        d, a = sh.d, sh.a
        qkv_o = 2.0 * (a * sh.h_qk + sh.kv_heads * sh.h_qk + sh.kv_heads * sh.h_v + a * sh.h_v) + 2.0 * d
        up = np.where(sh.gated > 0, 4.0, 2.0)
        # torchtitan's "op" policy saves every other matmul's output (q, v, w1, w2 of q,k,v,o,w1,w3,w2)
        # and the attention core's output: 2(a*h_qk + kv*h_v + a*h_v); gated MLP 2f + 2d, plain 2f
        titan_attn = 2.0 * (a * sh.h_qk + sh.kv_heads * sh.h_v + a * sh.h_v)
        titan_mlp = 2.0 * sh.f + np.where(sh.gated > 0, 2.0 * d, 0.0)
        qkv_o = np.where(self.alternate, titan_attn, qkv_o)
        mlp = np.where(self.alternate, titan_mlp, up * sh.f + 2.0 * d)
        moe = sh.moe
        return {"attention": qkv_o, "mlp": mlp,
                "moe": moe.K * moe.capacity * (up * moe.fe + 2.0 * d) + up * moe.fs,
                "mamba": 2.0 * (2.0 * sh.di + 2.0 * sh.mamba_G * sh.mamba_N + sh.mamba_heads) + 2.0 * d,
                "linear": 2.0 * (2.0 * sh.lin_nk * sh.lin_dk + 2.0 * sh.lin_nv * sh.lin_dv + 2.0 * sh.lin_nv) + 2.0 * d}

    def model_bytes_per_token(self) -> tuple[np.ndarray, np.ndarray]:
        """(all layers' bytes per local token under the row's checkpointing, the largest single
        block's without it: attention and its MLP or MoE layer together where every block pairs
        them, else the largest layer): TP / SP sharing applied."""
        c, sh = self.c, self.shape
        full = self.layer_bytes()
        sel = self.selective_layer_bytes()
        counts = {"attention": sh.L_attn + sh.mtp, "mlp": sh.L_ffn - sh.moe.L_moe, "moe": sh.moe.L_moe,
                  "mamba": sh.L_mamba, "linear": sh.L_linear}
        counts["mlp"] = counts["mlp"] + np.where(sh.moe.L_moe > 0, 0.0, sh.mtp)
        counts["moe"] = counts["moe"] + np.where(sh.moe.L_moe > 0, sh.mtp, 0.0)
        t = c.tp
        sp = c.sp > 0
        torch_sel = self.profile != FUSED
        block_input = 2.0 * sh.d / np.where(sp, t, 1.0)  # what a checkpointed block keeps
        blocks = sh.L + sh.mtp
        selective_ac = is_code(c.ac, CHECKPOINTING, "selective")
        freed = c.recompute.freed_bytes(self.kept, ~torch_sel)  # moe_recompute's modules (:mod:`.recompute`)
        total = 0.0
        for kind, n in counts.items():
            if np.ndim(n) == 0 and n == 0:
                continue  # no such layers in any row (a column the frame lacks): nothing to add
            none = full[kind] - freed.get(kind, 0.0)
            shared = np.where(sp, none / t, full["norm"] + (none - full["norm"]) / t)
            fused_sel = shared - self._scores_share(t) if kind == "attention" else shared
            selective = np.where(torch_sel, sel[kind] / np.where(sp, t, 1.0), fused_sel)
            total = total + n * np.where(selective_ac, selective, shared)
        total = np.select([is_code(c.ac, CHECKPOINTING, "full"), is_code(c.ac, CHECKPOINTING, "selective") & torch_sel],
                          [blocks * block_input, total + blocks * block_input], total)
        present = {k: np.where(counts[k] > 0, full[k], 0.0) for k in counts
                   if not (np.ndim(counts[k]) == 0 and counts[k] == 0)}
        largest = np.maximum.reduce(list(present.values()))
        # a block that pairs attention with an MLP or MoE layer is checkpointed, and recomputed, as one
        ffn = np.maximum(present.get("mlp", 0.0), present.get("moe", 0.0))
        paired = (sh.L_attn > 0) & (sh.L_ffn >= sh.L_attn)
        largest = np.where(paired, np.maximum(largest, present.get("attention", 0.0) + ffn), largest)
        return total, largest / t

    def _scores_share(self, t: np.ndarray) -> np.ndarray:
        sh = self.shape
        return np.where(self.c.flash > 0, 0.0, 5.0 * sh.a * sh.s / self.c.cp) / t

    def loss_bytes_per_token(self) -> np.ndarray:
        sh = self.shape
        per_v = np.where(self.fused_loss, 2.0, 14.0)
        final_norm = _norm(self.norm_profile, sh.d, np.array(2.0)) + 2.0 * sh.d
        return (per_v * sh.V + final_norm) / self.c.tp

    def activation_bytes(self) -> np.ndarray:
        """Activations and loss buffers at the start of backward, on the heaviest pipeline stage: the
        larger of the first stage and the last. A 1F1B stage holds its in-flight micro-batches' saved
        activations (:func:`in_flight`; with full recompute each layer's input only), the one block a
        full recompute rebuilds (its whole activations, on every stage), the pipeline's receive or
        send buffer (a micro-batch's gradient at the stage boundary, ``2d`` per token, ``/tp`` with
        sequence parallelism), and on the last stage the loss buffers (the recomputed layer comes
        after them, so the larger of the two).

        A BLOOM-176B-like stage (70 layers, ``d`` 14336, 112 heads, vocabulary 250880, ``s`` 2048, no
        flash kernel, fused kernels, TP 4 without sequence parallelism, PP 12, full recompute) holds on
        its first stage, per micro-batch sequence (``b`` 1), ``12`` in flight x ``6`` layers x ``2d`` = 2,064,384 B
        of layer inputs per token, one recomputed block ``(attention + MLP)/tp`` = (1,318,912 + 286,720) / 4
        = 401,408 B (:meth:`layer_bytes`, fused kernels: attention's norm ``4d``, q, k, v, o ``8d`` and
        scores ``5as`` = 5 x 112 x 2048; the MLP's norm ``4d`` and ``4f``) and the received gradient
        ``2d`` = 28,672 B: 2,494,464 B x 2048 tokens = 4.76 GiB. Its last stage: ``1 x 6 x 2d`` = 172,032 +
        the larger of the loss buffers (fused: ``(2V + 6d)/tp`` = 146,944) and the recomputed block +
        ``2d``: 602,112 B x 2048 = 1.15 GiB. At ``b`` 2 and 4 twice and four times the first stage's:

        >>> import pandas as pd
        >>> from perfzoo.analytic.llm import LLMCost
        >>> rows = [{"n_layers": 70, "hidden_dim": 14336, "n_heads": 112, "vocab_size": 250880, "seq_len": 2048,
        ...          "tp": 4, "pp": 12, "dp": 8, "micro_batch_size": b, "global_batch_size": 2048,
        ...          "activation_checkpointing": "full", "flash_attention": False, "sequence_parallel": False,
        ...          "gated_mlp": False, "accelerator": "A100-80GB"} for b in (1, 2, 4)]
        >>> [round(float(x) / 2**30, 2) for x in LLMCost(pd.DataFrame(rows)).memory.activation_bytes()]
        [4.76, 9.52, 19.03]
        """
        c, sh = self.c, self.shape
        tokens = c.b * sh.s / c.cp
        per_layer_stack, largest = self.model_bytes_per_token()
        stack = per_layer_stack * c.stage_share  # one micro-batch of the heaviest stage's layers, per token
        full_ac = is_code(c.ac, CHECKPOINTING, "full")
        loss = self.loss_bytes_per_token()
        recompute = np.where(full_ac, largest, 0.0)
        # one micro-batch's gradient at the stage boundary: received (first stage) or sent (last)
        p2p = np.where(c.pp > 1, 2.0 * sh.d / np.where(c.sp > 0, c.tp, 1.0), 0.0)
        vp = np.where(c.pp > 1, np.maximum(c.vp, 1.0), 1.0)
        first = in_flight(c.pp, vp, c.m, 0.0) * stack + np.where(c.pp > 1, recompute + p2p, 0.0)
        last = in_flight(c.pp, vp, c.m, c.pp - 1.0) * stack + np.maximum(loss, recompute) + p2p
        scale = np.where(self.fp32, 2.0, 1.0)  # fp32 activations are twice as wide
        return tokens * np.maximum(first, last) * scale

    # peak and overheads ----------------------------------------------------------------
    def largest_allocation(self) -> np.ndarray:
        """The largest single tensor of the step: a micro-batch's logits (fp32 in PyTorch's loss, bf16 fused)."""
        c, sh = self.c, self.shape
        return np.where(self.fused_loss, 2.0, 4.0) * sh.V * c.b * sh.s / c.cp / c.tp

    def overhead_bytes(self) -> np.ndarray:
        c = self.c
        groups = sum((x > 1).astype(float) for x in (c.tp, c.cp, c.dp, c.pp, c.ep))
        fragmentation = np.where(self.expandable, 0.0, FRAGMENTATION)  # expandable segments
        dispatcher = dispatcher_buffer_bytes(c)  # DeepEP's buffers, outside torch's allocator
        return CONTEXT_BYTES + fragmentation * self.largest_allocation() + NCCL_BUFFERS * groups + dispatcher

    def columns(self) -> dict[str, np.ndarray]:
        """The memory estimate columns: the state, ``activation_bytes``, ``peak_allocated_bytes``,
        ``overhead_bytes``, ``memory_bytes`` and ``memory_fraction``."""
        state = self.state_bytes()
        act = self.activation_bytes()
        params, grads, opt = state["param_bytes"], state["grad_bytes"], state["optimizer_bytes"]
        grads_alive = np.where(self.torch_fsdp, np.where(self.c.m > 1, grads, 0.0), grads)
        backward = params + opt + grads_alive + self.gathered_bytes() + act
        temp = np.where(self.torch_fsdp, FOREACH_ADAM_TEMP * opt / FSDP_MIXED[2], 0.0)  # per local parameter
        step = params + grads + opt + temp
        peak = np.maximum(backward, step)
        overhead = self.overhead_bytes()
        total = peak + overhead
        return {**state, "activation_bytes": act, "peak_allocated_bytes": peak, "overhead_bytes": overhead,
                "memory_bytes": total, "memory_fraction": total / (self.c.hw.memory_gib * GIB)}


def peak_error(measured, predicted, risk: float = PEAK_RISK) -> float:
    """The memory model's error at ``risk``: the ``1 - risk`` quantile of measured over predicted peak
    allocated bytes (jobs that ran; NaNs left out).

    >>> peak_error([10.0, 10.2, 10.5, 11.0], [10.0, 10.0, 10.0, 10.0], risk=0.25)
    1.0625
    """
    ratio = np.asarray(measured, dtype=float) / np.asarray(predicted, dtype=float)
    return float(np.quantile(ratio[np.isfinite(ratio)], 1.0 - risk))


@dataclass(frozen=True)
class MemoryRule:
    """When a layout fits a device (module docstring): by default its peak allocated times
    :data:`PEAK_ERROR` plus the overheads within the device's memory; with ``margin`` (a fraction in
    [0, 1)), its whole estimate within the device's memory less that fraction."""

    margin: Optional[float] = None

    def __post_init__(self):
        if self.margin is not None and not 0 <= self.margin < 1:
            raise InputError(f"--memory-margin {self.margin}: give a fraction of device memory in [0, 1), e.g. 0.05, "
                             f"or leave it out for the rule derived from measured peaks")

    def needed(self, peak_allocated_bytes, memory_bytes) -> np.ndarray:
        """The bytes the rule counts against the device (without a margin: the peak at the stated risk)."""
        peak, memory = np.asarray(peak_allocated_bytes, dtype=float), np.asarray(memory_bytes, dtype=float)
        return memory if self.margin is not None else memory + (PEAK_ERROR - 1.0) * peak

    def fits(self, peak_allocated_bytes, memory_bytes, device_bytes) -> np.ndarray:
        """Whether each layout fits (NaN: no)."""
        need, device = self.needed(peak_allocated_bytes, memory_bytes), np.asarray(device_bytes, dtype=float)
        usable = device if self.margin is None else (1.0 - self.margin) * device
        with np.errstate(invalid="ignore"):
            return np.isfinite(need) & (need <= usable)

    def describe(self, device_gib: float) -> str:
        """The rule in a few words (``memory: ...`` on a command's first lines)."""
        if self.margin is not None:
            return (f"fits within {(1 - self.margin) * device_gib:,.1f} GiB usable (a {self.margin:.0%} margin of "
                    f"{device_gib:,.1f} GiB)")
        return (f"fits when the peak allocated x {PEAK_ERROR:g} (the memory model's error at {PEAK_RISK:.0%} risk, "
                f"from measured peaks) plus the overheads is within {device_gib:,.1f} GiB")
