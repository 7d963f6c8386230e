"""What a training step moves through device memory (HBM), and the seconds that costs: the
memory-bound part of a step, which peak FLOP/s cannot see (small models, low precision, the
optimizer), and the softmax, whose exponentials run on the special-function units.

Per device and micro-batch, with ``T = b*s/cp`` tokens (the rows of every block GEMM: sequence
parallelism gathers them), ``Ts = T/tp`` with sequence parallelism (the tokens a rank's norms,
residual adds and MoE routing touch; ``T`` without), the layers of one pipeline stage (each kind's
count ``/pp``), bytes of 16-bit activations (fp32 training: twice as many):

* **GEMM operands** (the roofline of a matrix multiply as an efficiency that saturates with its
  arithmetic intensity: its FLOPs at peak plus its bytes at the memory bandwidth, so a GEMM of
  intensity ``I`` FLOP/byte runs at ``I / (I + peak/bandwidth)`` of peak): a linear layer
  ``K -> N`` (TP shards one of the two) runs three GEMMs per micro-batch (forward, data gradient,
  weight gradient), each reading two operands and writing one: per token ``(K + N)`` elements three
  times, 6 bytes each way in 16-bit; in FP8 (and MXFP8) the inputs are 1 byte but outputs stay
  16-bit and every quantized input (the activation forward, the output gradient backward) is first
  cast, read in 16-bit and written in FP8 (Transformer Engine and torchao cast in separate or fused
  kernels; Hopper's FP8 GEMMs also need a transposed copy): ``2e + 2`` bytes in the GEMMs and
  ``2 + 2e`` in the casts, 8 per element at ``e = 1`` (FP8), so low precision moves as many bytes
  as 16-bit while its FLOPs run twice or four times as fast. NVFP4 (``e = 1/2``) scales in two
  levels, an FP8 scale per 16-element block under one FP32 scale per tensor, and the tensor's scale
  comes from its amax before any block can be quantized, so each cast reads its 16-bit input twice
  (an amax pass, then the quantizing pass; Transformer Engine's ``NVFP4BlockScaling``, NVIDIA 2025,
  "Pretraining large language models with NVFP4", section 2): ``2e + 2`` and ``4 + 2e``, 8 per
  element. MXFP8's block scales need no such pass; FP8's per-tensor scales are taken as delayed
  (the previous step's amax, one pass): the recipes' ``fp8`` rows do not say which. Layers a
  recipe keeps in BF16 (``bf16_layers``) move ``3 x 2`` and cast nothing. A recipe that quantizes
  the forward GEMM only (``low_precision_backward`` false: perfzoo's llm workload, whose FP8 linears
  run both backward GEMMs in BF16 on the saved 16-bit input) moves ``(e + 10) / 2`` in its GEMMs and
  casts the forward input (half of ``K + N``) and, each micro-batch, the weights. A cast in eager
  PyTorch (``compile`` false: ``abs``, ``amax``, ``float``, ``mul``, ``clamp``, ``to``) moves
  :data:`EAGER_CAST` = 33 bytes per element where a fused one moves ``2 + e``. The casts are
  elementwise kernels (:meth:`Traffic.cast_bytes`). The LM head and the
  router stay 16-bit. Weights: each micro-batch reads the local weights twice
  (forward, data gradient) at the format's width (forward only: ``e + 2``) and accumulates the
  weight gradient into the gradient buffer (read and write at its width, :mod:`.memory`). Per layer: attention
  ``q,k,v``: ``K = d``, ``N = (a + 2k)h/tp``; output ``K = a*h/tp``, ``N = d``; MLA's down- and
  up-projections likewise; MLP ``d -> g'f/tp -> d`` (``g' = 2`` gated); routed experts the same at
  ``fe/etp`` for each of the ``etp*Ts*K*CF`` routed copies (expert TP gathers each copy to its
  ``etp`` ranks; few tokens per expert make the weight
  traffic large next to the FLOPs: the grouped-GEMM efficiency of MoE); shared experts over ``T``;
  the router ``d -> E`` over ``Ts``; Mamba's in- and out-projections; the LM head ``d -> V/tp`` on
  the last stage.
* **Elementwise kernels**, forward bytes per token (backward moves twice the forward's: it reads
  the saved input and the output gradient and writes the input gradient; a recomputed forward adds
  one more forward: full checkpointing, and PyTorch's selective policy, which recomputes every op
  that is not a matmul; Megatron's selective policy recomputes only the attention core). Fused
  kernels (``compile`` true or unknown: Megatron-Core / Transformer Engine, llm-foundry, compiled
  blocks) read each input once and write each output once: RMSNorm / LayerNorm ``2+2`` bytes per
  element of ``d``; residual add ``2+2+2``; rotary embedding of the query and key heads ``2+2``;
  SwiGLU ``2+2`` read, ``2`` written per element of ``f`` (GELU ``2+2``). Eager PyTorch
  (``compile`` false) runs one kernel per op in fp32 where the reference code upcasts: an RMSNorm
  ``x.float() * rsqrt(pow(2).mean())`` ... ``.type_as(x) * w`` moves 36 bytes per element, a
  ``float()``-upcast rotary embedding 48, SwiGLU ``silu(a) * b`` 10, and grouped-query keys and
  values are expanded to every head (``4*a*h`` bytes). MoE: router softmax and top-k on fp32
  logits ``12E`` bytes per token, permute and unpermute ``8d`` per routed copy, on a rank that
  holds several experts (``ep < E``) the sort of the copies it receives by expert and back, ``8d``
  per copy it computes (Megatron-Core's all-to-all dispatcher, ``sort_chunks_by_idxs``; torchtitan
  reorders the same way), the experts' activation per routed copy (``etp`` ranks each run ``1/etp``
  of it). Mamba-2: the in-projection output read, the convolution written and
  read, the scan's output, gate and norm: ``2(2di + 2GN + heads) + 4(di + 2GN) + 6di``.
* **The loss** (per token on the last stage, forward and backward together): a fused cross
  entropy (Transformer Engine's, flash-attn's, a compiled one; ``compile`` unknown or ``fused_loss``
  true, :mod:`.memory`) reads the 16-bit logits and
  writes their gradient, ``4V``; PyTorch's ``cross_entropy(logits.float())`` (``compile`` known)
  moves ``40V``: the fp32 copy ``6V``, log-softmax ``12V`` (two passes over the row), the
  gradient's zero fill ``4V``, log-softmax backward ``12V`` and the cast back ``6V``.
* **The optimizer step** (once per step, not stretched by the pipeline bubble): Adam reads and
  writes the state it holds, ``2 x (parameters + gradients + optimizer state)`` bytes of the
  device's shard (:mod:`.memory`; 36 B per parameter in Megatron's mixed precision, 32 in torch
  FSDP's: a few bytes over, for the gradient that is only read, and under, for the norm of
  gradient clipping).
* **Materialised attention scores** (no flash kernel, ``flash_attention`` false: Megatron-LM before
  FlashAttention, PyTorch's math attention): separate kernels write and read the ``s x s`` scores of
  every head, ``T * (a/tp) * s`` per attention layer (:data:`SCORE_BYTES`). Forward: the ``QK^T``
  GEMM writes them (2 B), Megatron's fused scale-mask-softmax reads them and writes the
  probabilities (4), dropout reads those and writes its mask and output (5), the ``PV`` GEMM reads
  that (2): 13 B per score. Backward: the ``dV`` GEMM reads the dropout output (2), the ``dP`` GEMM
  writes its gradient (2), dropout's backward reads it and the mask and writes (5), the softmax's
  reads the probabilities and that and writes ``dS`` (6), the ``dQ`` and ``dK`` GEMMs read ``dS``
  (4): 19 B. A recomputed forward moves 13 more. The attention dropout is the one the memory
  model's ``5as`` score activations already hold (Korthikanti et al. 2022, arXiv 2205.05198:
  softmax output, dropout mask and output).
* **The softmax** beside the attention core's matmuls: one exponential per attention score in
  the forward and one more in a FlashAttention backward (it recomputes the probabilities from the
  saved log-sum-exp), one more per recomputed forward, at the accelerator's special-function
  rate (``exp_tera_s``; NVIDIA GPUs: 16 per SM and clock, 32 on Blackwell Ultra); and the fp32
  vector operations around them (:data:`SOFTMAX_OPS`), at the fp32 rate (``fp32_tflops`` / 2: an
  FMA is one operation, two FLOPs). FlashAttention-2's forward takes per score a scaled
  subtract (FMA), a running max, a running sum and half a packed bf16 conversion, 3.5; its
  backward the recompute's FMA, ``dS = P(dP - D)`` (2) and two half conversions, 4 (Dao 2023,
  algorithms 1-2). ``T * (a/tp) * ctx`` scores per attention layer (``ctx`` the causal context of
  :mod:`.shape`). On an H100 at head width 128 they cost 40% of the attention core's matmul time;
  FlashAttention-3 (Shah et al. 2024) overlaps part of it, FlashAttention-2 little (taken as not
  overlapped). A device without the exponential figure does not price the softmax. A
  FlashAttention-2 kernel on a newer GPU stretches it like the attention matmuls (:mod:`.llm`).

``memory_time`` = micro-batches x (GEMM operand + elementwise + loss bytes) / HBM bandwidth; these
kernels run between the GEMMs on the same stream, so the step adds them to the compute time
(:mod:`.llm`). Absolute bandwidth efficiency (70-90% of the datasheet figure) is left to
calibration, like the FLOP/s efficiency, with one exception: eager PyTorch's elementwise kernels
(``compile`` false) run one kernel per op with few bytes in flight per thread and reach a share of
the HBM bandwidth that falls as the HBM gets faster, so where the accelerator table has the figure
they move their bytes at its measured ``eager_tb_s`` (an H100 2.1 of 3.35 TB/s, an H200 2.6 of 4.8:
profiled llm-gpu jobs, ``docs/studies/eager-step-1128/kernel_profile.py``; the same jobs' GEMMs ran as fast on both
cards, their elementwise kernels 1.22x faster on the H200, their loss 1.48x and their optimizer
1.38x: ``docs/studies/eager-step-1128``).

>>> import pandas as pd
>>> from perfzoo.analytic.llm import LLMCost
>>> row = {"n_layers": 1, "hidden_dim": 1024, "n_heads": 8, "seq_len": 1024, "micro_batch_size": 1,
...        "global_batch_size": 1, "n_gpus": 1, "accelerator": "H100-80GB"}
>>> t = Traffic(LLMCost(pd.DataFrame([row])))
>>> k = t.gemm_act_elements()  # per token: q,k,v (d -> 3d) + o (d -> d); MLP d -> 4d -> d
>>> int(k["attention"][0]), int(k["mlp"][0])
(6144, 10240)
"""

from __future__ import annotations

from functools import cached_property

import numpy as np

from perfzoo.analytic._frame import is_code
from perfzoo.analytic.memory import EAGER, FUSED
from perfzoo.records.vocabulary import CHECKPOINTING, FORMATS

EAGER_NORM, EAGER_ROPE, EAGER_SWIGLU = 36.0, 48.0, 10.0  # forward bytes per element, eager PyTorch
FUSED_NORM, FUSED_ROPE, FUSED_SWIGLU, GELU, RESIDUAL = 4.0, 4.0, 6.0, 4.0, 6.0
ROUTER_BYTES, PERMUTE_BYTES = 12.0, 8.0  # per expert logit per token; per routed copy and element of d
SORT_BYTES = 8.0  # per received copy and element of d: sorted by local expert and back (Megatron's sort_chunks_by_idxs)
EAGER_CAST = 33.0  # bytes per element of a low-precision cast in eager PyTorch (Traffic.cast_bytes)
LOSS_FUSED, LOSS_TORCH = 4.0, 40.0  # per vocabulary entry and token, forward + backward
BACKWARD = 2.0  # a backward pass moves twice the forward's elementwise bytes
SOFTMAX_OPS = (3.5, 4.0)  # fp32 vector operations per attention score: FlashAttention-2 forward, backward
SCORE_BYTES = (13.0, 19.0)  # bytes per materialised attention score at 16 bits: forward, backward (no flash kernel)


class Traffic:
    """The HBM traffic of an :class:`~perfzoo.analytic.llm.LLMCost`'s rows (module docstring)."""

    def __init__(self, cost):
        self.c = cost
        self.sh = cost.shape
        self.width = cost.width
        self.profile = cost.memory.profile

    # GEMM operands ---------------------------------------------------------------------
    def gemm_act_elements(self) -> dict[str, np.ndarray]:
        """Per token and layer, the ``K + N`` elements of each kind's linear layers (TP shards applied)."""
        c, sh = self.c, self.sh
        t, d, a = c.tp, sh.d, sh.a
        standard = 2.0 * d + (2.0 * a + 2.0 * sh.k) * sh.hd / t
        kvl = np.where(sh.mla, sh.kvl, 0.0)
        query = np.where(sh.ql > 0, d + 2.0 * sh.ql, d) + a * sh.h_qk / t
        mla = query + d + 2.0 * kvl + sh.rope + a * (sh.h_qk - sh.rope + sh.h_v) / t + a * sh.h_v / t + d
        up = np.where(sh.gated > 0, 3.0, 2.0)  # (gate +) up and down: g' + 1 widths
        moe = sh.moe
        return {
            "attention": np.where(sh.mla, mla, standard),
            "mlp": 2.0 * d + up * sh.f / t,
            "routed": 2.0 * d + up * moe.fe / c.etp,
            "shared": np.where(moe.fs > 0, 2.0 * d + up * moe.fs / t, 0.0),
            "mamba": 2.0 * d + (2.0 * sh.di + 2.0 * sh.mamba_G * sh.mamba_N + sh.mamba_heads + sh.di) / t,
        }

    @cached_property
    def tokens(self) -> tuple[np.ndarray, np.ndarray]:
        """(``T``, ``Ts``): a micro-batch's GEMM rows and the tokens a rank's per-token ops touch."""
        c = self.c
        T = c.b * self.sh.s / c.cp
        return T, T / np.where(c.sp > 0, c.tp, 1.0)

    @cached_property
    def layer_counts(self) -> dict[str, np.ndarray]:
        """Layers of each kind on the heaviest pipeline stage (MTP blocks counted with the last layer's kind)."""
        sh, share = self.sh, self.c.stage_share  # the heaviest stage's share of the layers
        moe = sh.moe.L_moe + np.where(sh.moe.L_moe > 0, sh.mtp, 0.0)
        mlp = sh.L_ffn - sh.moe.L_moe + np.where(sh.moe.L_moe > 0, 0.0, sh.mtp)
        return {"attention": (sh.L_attn + sh.mtp) * share, "mlp": mlp * share, "moe": moe * share,
                "mamba": sh.L_mamba * share}

    def linear_elements(self) -> np.ndarray:
        """``K + N`` elements summed over one micro-batch's tokens and the blocks' linear layers on a
        device, times the passes over them / 3 (1 in training, 2/3 for adapter tuning)."""
        c, sh = self.c, self.sh
        T, Ts = self.tokens
        n = self.layer_counts
        k = self.gemm_act_elements()
        per_token = n["attention"] * k["attention"] + n["mlp"] * k["mlp"] + n["moe"] * k["shared"] + n["mamba"] * k["mamba"]
        routed = Ts * sh.moe.K * sh.moe.capacity * c.etp * n["moe"] * k["routed"]  # expert TP gathers etp x
        return c.weight_passes() / 6.0 * (T * per_token + routed)

    def gemm_bytes(self) -> np.ndarray:
        """Bytes the GEMMs of one micro-batch read and write on a device (operands and weights; the
        quantization casts are :meth:`cast_bytes`)."""
        c, sh = self.c, self.sh
        T, Ts = self.tokens
        n = self.layer_counts
        e = self.width
        # bytes per element of the three GEMMs: 3e at 16 and 32 bits, 2e + 2 in low precision (16-bit
        # outputs), (e + 10) / 2 where only the forward GEMM is low precision (its input e, the rest 16-bit)
        low = np.where(c.forward_only, (e + 10.0) / 2.0, 2.0 * e + 2.0)
        q = c.bf16_share  # layers a low-precision recipe keeps in BF16: 16-bit operands
        linear = np.where(e >= 2.0, 3.0 * e, (1.0 - q) * low + q * 6.0)
        # the LM head and the router stay 16-bit (fp32 in fp32 training): act_bytes per element and pass
        lm_head = np.where(sh.V > 0, T * (sh.d + sh.V / c.tp) * (1.0 + sh.mtp) / c.pp, 0.0)
        head = lm_head + Ts * n["moe"] * (sh.d + sh.moe.E)
        dense, expert = c.memory.local_params
        grad_b = c.memory.bytes_per_param()[1]
        reads = np.where(c.forward_only, e + 2.0, 2.0 * e)  # the weights, forward and data gradient
        weights = (dense + expert) * (reads + 2.0 * grad_b)
        return linear * self.linear_elements() + c.weight_passes() / 2.0 * c.act_bytes * head + weights

    def cast_bytes(self) -> np.ndarray:
        """Bytes the quantization casts of one micro-batch move on a device: per element cast, its
        16-bit read and its write in the format (``2 + e``), in eager PyTorch :data:`EAGER_CAST`
        (``abs``, ``amax``, ``float``, ``mul``, ``clamp``, ``to``: 2+2, 2, 2+4, 4+4, 4+4, 4+1).
        All GEMMs low precision: the forward input and the backward output gradient, plus their
        transposed copies (``e``; NVFP4's amax pass 2 more), per element of ``K + N``. Forward
        GEMM only: its input (half of ``K + N``) and, each micro-batch, the weights, again in a
        recomputed forward (:meth:`recomputed_forwards`)."""
        c, e = self.c, self.width
        cast = np.where(self.profile == EAGER, EAGER_CAST, 2.0 + e)
        amax = 2.0 * is_code(c.format, FORMATS, "nvfp4")
        # a recomputed forward casts its input and weights again (priced for the forward-only recipe,
        # whose jobs measured it: docs/studies/eager-step-1128)
        again = np.where(c.forward_only, self.recomputed_forwards(), 0.0)
        per_element = np.where(c.forward_only, cast / 2.0 * (1.0 + again), cast + e + amax)
        dense, expert = c.memory.local_params
        weights = np.where(c.forward_only, cast * (1.0 + again) * (dense + expert), 0.0)
        low = (1.0 - c.bf16_share) * (per_element * self.linear_elements() + weights)
        return np.where(e >= 2.0, 0.0, low)

    # elementwise kernels ---------------------------------------------------------------
    def elementwise_forward_bytes(self) -> np.ndarray:
        """Forward bytes of one micro-batch's elementwise kernels on a device (the loss excluded)."""
        c, sh = self.c, self.sh
        T, Ts = self.tokens
        n = self.layer_counts
        eager = self.profile == EAGER
        t, d, a = c.tp, sh.d, sh.a
        norm = np.where(c.memory.norm_profile == EAGER, EAGER_NORM, FUSED_NORM) * d
        swiglu = np.where(eager, EAGER_SWIGLU, FUSED_SWIGLU)
        act = np.where(sh.gated > 0, swiglu, GELU)
        rope_elems = np.where(sh.mla, (a + 1.0) * sh.rope, (a + sh.k) * sh.hd)
        rope = np.where(eager, EAGER_ROPE, FUSED_ROPE) * rope_elems / t
        expand = np.where(eager & (sh.k < a), 4.0 * a * sh.hd / t, 0.0)  # eager GQA: K and V for every head
        per_sublayer = Ts * (norm + RESIDUAL * d)
        moe = sh.moe
        copies = Ts * moe.K * moe.capacity
        attention = per_sublayer + T * (rope + expand)
        mlp = per_sublayer + T * act * sh.f / t
        # the copies a rank permutes before the all-to-all and, holding several experts, sorts by expert after
        # it (gathered over expert TP: etp x as many), unsorts and unpermutes
        sort = np.where(moe.E > np.maximum(c.ep, 1.0), SORT_BYTES * d * c.etp, 0.0)
        moe_layer = (per_sublayer + Ts * ROUTER_BYTES * moe.E + copies * (PERMUTE_BYTES * d + sort + act * moe.fe)
                     + T * act * moe.fs / t)
        mamba_io = 2.0 * (2.0 * sh.di + 2.0 * sh.mamba_G * sh.mamba_N + sh.mamba_heads) + 4.0 * (
            sh.di + 2.0 * sh.mamba_G * sh.mamba_N) + 6.0 * sh.di
        mamba = per_sublayer + T * mamba_io / t
        total = n["attention"] * attention + n["mlp"] * mlp + n["moe"] * moe_layer + n["mamba"] * mamba
        return total * c.act_bytes / 2.0

    def recomputed_forwards(self) -> np.ndarray:
        """Extra forwards of the elementwise kernels per micro-batch: 1 with full checkpointing and
        with PyTorch's selective policy (it recomputes every op that is not a matmul), else 0."""
        c = self.c
        full = is_code(c.ac, CHECKPOINTING, "full")
        torch_selective = is_code(c.ac, CHECKPOINTING, "selective") & (self.profile != FUSED)
        return (full | torch_selective).astype(float)

    def loss_bytes(self) -> np.ndarray:
        """Forward + backward bytes of the cross entropy of one micro-batch, averaged over the stages."""
        c, sh = self.c, self.sh
        T, _ = self.tokens
        per_v = np.where(self.c.memory.fused_loss, LOSS_FUSED, LOSS_TORCH)
        return T * per_v * sh.V / c.tp * (1.0 + sh.mtp) / c.pp * c.act_bytes / 2.0

    def elementwise_bytes(self) -> np.ndarray:
        """What one micro-batch's elementwise kernels move on a device: forward, backward, recompute,
        and the quantization casts."""
        return self.elementwise_forward_bytes() * (1.0 + BACKWARD + self.recomputed_forwards()) + self.cast_bytes()

    def optimizer_bytes(self) -> np.ndarray:
        """What the optimizer step reads and writes: twice the state the device holds."""
        state = self.c.memory.state_bytes()
        trains = 1.0 - self.c.adapters
        return 2.0 * (state["param_bytes"] * trains + state["grad_bytes"] + state["optimizer_bytes"])

    # the softmax -------------------------------------------------------------------------
    def scores(self, causal: bool = True) -> np.ndarray:
        """Attention scores one device computes per micro-batch and forward pass (``causal`` false:
        the whole ``s x s`` matrix, what batched GEMMs compute)."""
        c, sh = self.c, self.sh
        T, _ = self.tokens
        return T * sh.a / c.tp * sh.attention_context(causal) * c.stage_share

    def score_bytes(self) -> np.ndarray:
        """Bytes one micro-batch's materialised attention scores move on a device where no flash
        kernel keeps them on chip (``flash_attention`` false; module docstring): every score of the
        ``s x s`` matrix, forward, backward and a recomputed forward."""
        c = self.c
        forwards = 1.0 + is_code(c.ac, CHECKPOINTING, "full", "selective")
        per_score = (forwards * SCORE_BYTES[0] + SCORE_BYTES[1]) * c.act_bytes / 2.0
        return np.where(c.flash > 0, 0.0, self.scores(causal=False) * per_score)

    def softmax_work(self) -> tuple[np.ndarray, np.ndarray]:
        """(exponentials, fp32 vector operations) of one micro-batch's softmaxes (module docstring)."""
        c = self.c
        forwards = 1.0 + is_code(c.ac, CHECKPOINTING, "full", "selective")
        scores = self.scores()
        return scores * (forwards + c.flash), scores * (forwards * SOFTMAX_OPS[0] + SOFTMAX_OPS[1])

    def seconds(self) -> dict[str, np.ndarray]:
        """``memory_time_s`` (per step, before the bubble), ``optimizer_time_s`` and ``softmax_time_s``."""
        c, hw = self.c, self.c.hw
        exps, ops = self.softmax_work()
        softmax = np.where(np.isnan(hw.exp_rate), 0.0,
                           c.m * c.attention_x * (exps / hw.exp_rate + ops / hw.vector_rate))
        # eager PyTorch's elementwise kernels at the bandwidth they reach (the accelerator table's eager_tb_s)
        elementwise_bw = np.where(self.profile == EAGER, hw.eager_bw, hw.hbm_bw)
        moved = (self.gemm_bytes() + self.loss_bytes() + self.score_bytes()) / hw.hbm_bw \
            + self.elementwise_bytes() / elementwise_bw
        return {"memory_time_s": c.m * moved,
                "optimizer_time_s": self.optimizer_bytes() / hw.hbm_bw, "softmax_time_s": softmax}
