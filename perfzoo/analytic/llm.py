"""The LLM cost model: what a decoder training config should cost, ideally.

Conventions (the same in every function; the hand-worked examples are in ``tests/test_analytic.py``).
The model's shape (dense, MoE, MLA, sliding windows, MTP, hybrid Mamba; keys and defaults) is
:mod:`.shape`, MoE routing :mod:`.moe`, low precision :mod:`.precision`, memory :mod:`.memory`.
Layout keys: sequence ``s`` (unknown: 2048), global batch ``B`` sequences, micro batch ``b``;
parallel degrees ``tp, pp, cp, dp, ep`` (``dp`` defaults to ``n_gpus / (tp*pp*cp)``), ``etp``
(expert tensor parallelism, default 1), ``vp`` virtual pipeline stages; ``m`` = micro-batches per
step per pipeline = ``grad_accum`` (default ``B / (b*dp)``; when neither ``b`` nor ``m`` is given,
``b = 1``, the usual choice at scale). With no layout at all (``tp``, ``pp``, ``dp`` unknown) and
more devices than sequences, ``dp = B`` and the rest is model parallel: TP up to 8, then PP.

* Shape known only by a parameter count (``n_params``, else the size the model name states,
  ``GPT3-5B``): ``d = 128*L``, head width 128, ``f = 4d``, so ``N = 12*L*d^2`` gives
  ``d = (128*N/12)^(1/3)``; the stated ``N`` is kept.
* Model FLOPs per token (:func:`flops_per_token`; the PaLM / MosaicML / Megatron MFU convention):
  ``6*N + 6*ctx*a*(h_qk + h_v)`` summed over attention layers, ``N`` the parameters one token's
  matmuls touch (``K`` routed experts, shared experts, routers, the LM head per prediction; not the
  embedding lookup) and ``ctx = s`` (no causal discount: ``12*L*d*s`` for standard attention).
  ``causal=True`` counts ``ctx = s/2`` (Megatron-Bridge's convention, and what a causal flash kernel
  computes). Adapter tuning (``task`` LoRA / PEFT) computes no weight gradients: ``4*N``.
* Recompute (hardware FLOPs): full activation checkpointing adds one forward of everything, selective
  the attention cores' forward; the modules ``moe_recompute`` names add their matmuls' forward
  (:mod:`.recompute`). What the kernels execute (the compute time) adds the MoE padding and a
  FlashAttention backward's recomputed scores (``flash_attention`` true or unknown),
  ``2*ctx*a*h_qk`` per attention layer (:mod:`.shape`); no publisher's FLOP count includes them.
  Without a flash kernel (``flash_attention`` false) the attention matmuls are batched GEMMs over
  the whole ``s x s`` score matrix, the causal mask applied after: ``ctx = s``, no recomputed
  scores; the scores they materialise move through HBM (:mod:`.traffic`).
* FLOPs per device per step = ``B*s*flops_per_token(+recompute) / n_gpus`` (TP, PP, CP, EP and DP
  split the work evenly; the pipeline bubble costs time, not FLOPs).
* Communication bytes sent per device per step (ring collectives: an all-reduce of ``X`` bytes sends
  ``2*(g-1)/g*X``, an all-gather or reduce-scatter ``(g-1)/g*X``). Parameters travel in the compute
  dtype (2 B; fp32 4 B), the blocks' dense linears of an FP8 run in FP8 (1 B) where FSDP gathers
  them cast (``fp8_param_gather``: torchao's float8 all-gather, on in torchtitan's presets and its
  default here for FP8, tensorwise scales only; Megatron's ``--fp8-param-gather``), gradients as the
  model state holds them (:mod:`.memory`: 4 B in torch FSDP and Megatron mixed precision, fp32
  reduction). DP (``none``, ``no_shard``, ``zero1``): one gradient all-reduce per step (Megatron's
  distributed optimizer: reduce-scatter + all-gather, the same bytes); ``shard_grad_op``: per
  micro-batch one parameter all-gather + one gradient reduce-scatter;
  ``full_shard``/``hybrid_shard``: per micro-batch two all-gathers + one reduce-scatter (no gradient
  traffic for adapter tuning); under torchtitan's pipeline once per step, one all-gather + one
  reduce-scatter (the stage's parameters stay gathered, ``reshard_after_forward=False``, and
  ``torch.distributed.pipelining`` reduces the gradients after the last micro-batch:
  :mod:`.memory`); their seconds, one ring per layer with NCCL's latency, and the ``m + 1`` calls
  no compute hides: :mod:`.fsdp`. TP: per sublayer (attention, MLP, Mamba, an MoE layer's shared experts) and
  micro-batch two all-reduces of ``b*s*d`` activations (sequence parallelism moves the same bytes
  as all-gather + reduce-scatter), three with full recompute; an MoE layer's routed experts move
  nothing over TP (its sequence-parallel tokens go to the all-to-all as they are) unless the experts
  are tensor-parallel (``etp`` > 1: see EP). PP: each micro-batch's activation forward and gradient
  backward at each of the ``vp`` stage boundaries it crosses on the device,
  ``2*vp*(pp-1)/pp*b*s*d``. CP (ring attention): ``3*(cp-1)*b*(s/cp)*kv*(h_qk + h_v)/tp`` per
  attention layer (K, V forward; K, V and their gradients backward; TP shards the heads). EP:
  :mod:`.dispatch` (4 collectives per MoE layer of the ``b*s/(cp*tp)`` local tokens, as the row's
  dispatcher sends them), and with expert TP an all-gather and a
  reduce-scatter of those copies over the ``etp`` ranks forward and backward (a third pair with full
  recompute; :meth:`LLMCost.etp_bytes`), on the critical path with the all-to-alls: NCCL's
  collectives in the dispatcher, which the TP overlap of the dense linears does not cover.
  ``ep_time_s`` is what the step waits for: the dispatch less what the MoE overlaps hide
  (``moe_shared_expert_overlap``, ``moe_a2a_overlap``: :mod:`.dispatch`), the hidden part holding SMs
  as the hidden DP and CP traffic does.
* Where a group lands (Megatron's rank order: TP innermost, then CP, DP, PP; experts folded as
  ETP-EP): a group of ``size`` ranks ``stride`` apart uses the scale-up link (NVLink) while it fits
  the device's domain (:mod:`.hardware`: 8 on HGX, 72 on NVL72), else the network, its members in
  one domain sharing their rails (:func:`~perfzoo.analytic.hardware.group_bandwidth`,
  :func:`~perfzoo.analytic.hardware.alltoall_seconds`: an MoE token crosses the network once per
  destination domain): TP ``(tp, 1)``, CP ``(cp, tp)``, EP
  ``(ep, etp)``, DP ``(dp, tp*cp)`` for the dense parameters and ``(dp*cp*tp/(ep*etp), ep*etp)``
  for the routed experts, whose gradients reduce over the ranks holding the same experts (with EP
  inside an 8-GPU board, one rank per board: the device's own rail); PP's point-to-point sends
  cross the network when the job spans domains.
* Pipeline stages: ``pp`` need not divide the layers (Megatron-Core's uneven splits,
  ``decoder_first/last_pipeline_num_layers``, ``account_for_embedding/loss_in_pipeline_split`` or a
  ``pipeline_model_parallel_layout``, as the published Llama 3.1 405B (126 layers, pp 8 and 16) and
  DeepSeek-V3 (61 layers) recipes run; torchtitan splits unevenly too): the heaviest rank holds
  ``stage_layers = ceil(L/pp)`` layers (``L/pp`` when ``pp`` divides them, or when the row gives no
  ``n_layers`` and the shape is derived), its ``vp`` virtual stages a layer apart at most, and paces
  the pipeline: its compute, memory traffic, TP / CP / EP traffic and layer passes are those of
  ``stage_layers`` layers, ``stage_share = stage_layers/L`` of the model's (``imbalance =
  pp*stage_share`` over an even split). The last stage also runs the whole LM head: an uneven split
  takes its missing ``pp*stage_layers - L`` layers from the first and last stages (half each, the
  last's rounded up), so the compute that paces the pipeline is the larger of ``stage_layers``
  layers and the last stage's layers plus the head (an even split of Llama 3 70B at pp 8: 10 layers
  and the head, 1.2 layers' worth; Llama 3.1 405B's 126 at pp 16: 8, against the last's 7 + 0.7).
* Pipeline bubble fraction (1F1B): ``(pp-1)/(m+pp-1)``; interleaved ``(pp-1)/(vp*m+pp-1)``.
* Ideal step time: compute at each part's peak (:mod:`.precision`: the blocks' linear layers at the
  precision's peak, the LM head, routers and the causal attention cores in BF16), the softmax
  (exponentials at the special-function rate, its fp32 vector operations), the bytes the GEMMs, the
  elementwise kernels and the loss move through HBM (:mod:`.traffic`), each traffic over its link;
  ``busy = t_compute + t_softmax + t_memory``, ``step = (busy + t_tp + t_ep)/(1 - bubble) + t_pp +
  t_optimizer + t_exposed + max(0, t_dp - t_exposed + t_cp - busy) + contention`` (TP and EP traffic
  on the critical path; FSDP's ``t_exposed``, :mod:`.fsdp`, too; the rest of the DP/FSDP
  traffic and ring attention overlap with the kernels, only their excess shows; the optimizer step
  runs once, after the pipeline drains). Throughput = ``B*s/step`` tokens/s. What overlaps is not
  free: an NCCL collective runs as :data:`NCCL_CHANNELS` thread blocks, one per channel, each holding
  an SM while it runs, so for the ``min(t_dp - t_exposed + t_cp, busy)`` the kernels hide, they run on
  ``units - 16`` of the device's SMs (``contention = hidden * 16/units``; 12% on an H100's 132; no
  figure without SMs in the accelerator table). 16 channels: NCCL's ring count on an 8-GPU NVLink 4
  board at training message sizes (``NCCL_DEBUG=INFO`` "16 coll channels").
* The host's pace (:mod:`.host`): the host launches every kernel of a layer pass, and where the GPU
  finishes a pass sooner it waits; ``host_time_s`` is that wait, added to the step where it shows.
* TP communication overlap (``tp_comm_overlap``; default on for NeMo and Megatron-Bridge with
  ``tp > 1`` and sequence parallelism, whose performance recipes turn on Transformer Engine's
  userbuffers overlap, ``tp_comm_overlap=True``; off elsewhere, Megatron-LM's ``--tp-comm-overlap``
  included, which is off by default; the published loader sets the key where a table's options name
  it, as Megatron-LM's README rows do): the sequence-parallel all-gathers and reduce-scatters run in
  chunks under the GEMMs that consume and produce them, so only ``max(0, t_tp - t_compute)`` of
  the TP time stays on the critical path.
* The attention kernel: the roofline's attention core (matmuls at the BF16 peak, then the softmax,
  not overlapped: 71% of an H100's peak at head width 128) stands for a kernel written for the
  device, FlashAttention-3 (75%) or cuDNN's fused attention, which Megatron-Core's Transformer
  Engine runs (Megatron-LM, NeMo, Megatron-Bridge; also an unknown framework). PyTorch's SDPA
  flash backend and the flash-attn 2 package (a framework's ``fa2_attention``, :class:`perfzoo.frameworks.Physics`:
  torchtitan, llm-foundry, plain PyTorch) run FlashAttention-2, written for Ampere's ``mma.sync``: on a Hopper GPU it reaches
  35% of the peak (Shah et al. 2024, arXiv 2407.08608), so its matmuls and softmax take the
  accelerator table's ``fa2_slowdown`` times as long (75/35 = 2.14). On an A100 FlashAttention-2 is
  every framework's flash kernel and reaches 50-73% of the peak (Dao 2023, arXiv 2307.08691) where
  the roofline prices a head-width-128 core at 78%: the table's ``flash_slowdown`` (the device's own
  kernel, whatever the framework) and ``fa2_slowdown`` are both 78/61.5 = 1.27 there
  (``docs/studies/fa2-ampere-1128``). Without a flash kernel (``flash_attention`` false) no factor applies.
* A row that cannot be priced (no shape, an unknown accelerator, a precision the device lacks) gets
  NaN, never a default that looks like a number.
"""

from __future__ import annotations

from functools import cached_property
from typing import Optional

import numpy as np
import pandas as pd

from perfzoo.analytic._frame import coded, column, is_code, mapped, num, trait
from perfzoo.analytic.dispatch import Dispatch
from perfzoo.analytic.fsdp import dense_dp_seconds
from perfzoo.analytic.hardware import device_figures, group_bandwidth, link_bandwidth, ring_seconds
from perfzoo.analytic.host import host_wait, pass_factor, shows
from perfzoo.analytic.kernels import shape_efficiency
from perfzoo.analytic.memory import FP32_BYTES, FUSED, MIXED_BYTES, Memory
from perfzoo.analytic.precision import compute_seconds, format_width, precision_codes
from perfzoo.analytic.recompute import ModuleRecompute
from perfzoo.analytic.shape import ModelShape
from perfzoo.analytic.traffic import Traffic
from perfzoo.records.vocabulary import (CHECKPOINTING, FORMATS, FRAMEWORKS, PRECISIONS, SHARDINGS, is_adapter_tuning,
                                        normalize_checkpointing, normalize_framework, normalize_sharding, to_bool)

NCCL_CHANNELS = 16  # thread blocks (one SM each) an overlapped NCCL collective holds (module docstring)


def stage_layers(n_layers, pp):
    """Layers on the heaviest of ``pp`` pipeline ranks splitting ``n_layers`` (module docstring):
    ``ceil(n_layers / pp)``, ``n_layers / pp`` where it divides.

    >>> stage_layers(126, 16), stage_layers(61, 8), stage_layers(32, 4), stage_layers(80, 1)
    (8.0, 8.0, 8.0, 80.0)
    """
    L, pp = (np.asarray(x, dtype=float) for x in (n_layers, pp))
    out = np.ceil(L / np.maximum(pp, 1.0))
    return out if out.ndim else float(out)


class LLMCost:
    """The LLM config as float arrays, defaults applied (see the module docstring), and its costs.

    >>> cost = LLMCost(pd.DataFrame([{"n_layers": 24, "hidden_dim": 1024, "n_heads": 16, "seq_len": 1024}]))
    >>> float(cost.total_params()[0])
    301989888.0
    """

    size_hint = staticmethod(ModelShape.size_hint)

    def __init__(self, df: pd.DataFrame):
        self.n = len(df)
        self.shape = ModelShape(df)
        self.adapters = mapped(df, "task", is_adapter_tuning, dtype=float)
        count = num(df, "accelerator_count")
        n_gpus = num(df, "n_gpus")
        self.n_gpus = np.where(np.isnan(n_gpus), count, n_gpus)
        tp, pp = num(df, "tp"), num(df, "pp")
        self.tp = np.where(np.isnan(tp), 1.0, tp)
        self.pp = np.where(np.isnan(pp), 1.0, pp)
        self.cp = num(df, "cp", 1.0)
        self.vp = num(df, "vp", 1.0)
        self.ep = num(df, "ep", 1.0)
        self.etp = num(df, "etp", 1.0)
        dp = num(df, "dp")
        B = num(df, "global_batch_size")
        with np.errstate(divide="ignore", invalid="ignore"):
            self.dp = np.where(np.isnan(dp), self.n_gpus / (self.tp * self.pp * self.cp), dp)
            # no layout given and more devices than sequences: the rest is model parallel, TP up to 8, then PP
            excess = np.where(np.isnan(dp) & np.isnan(tp) & np.isnan(pp) & (self.dp > B), self.dp / B, 1.0)
            self.tp = self.tp * np.minimum(excess, 8.0)
            self.pp = self.pp * excess / np.minimum(excess, 8.0)
            self.dp = self.dp / excess
            self.n_gpus = np.where(np.isnan(self.n_gpus), self.dp * self.tp * self.pp * self.cp, self.n_gpus)
            b = num(df, "micro_batch_size")
            m = num(df, "grad_accum")
            b = np.where(np.isnan(b) & np.isnan(m), 1.0, b)  # neither given: micro batch 1
            m = np.where(np.isnan(m), B / (b * self.dp), m)
            m = np.where(np.isnan(m), 1.0, m)  # no global batch either: one micro-batch
            self.m = np.maximum(m, 1.0)
            b = np.where(np.isnan(b), B / (self.m * self.dp), b)
            self.B = np.where(np.isnan(B), b * self.m * self.dp, B)
            self.b = b
            # the heaviest rank's layers (uneven splits); an even split where the layers are derived, not given
            self.stage_layers = np.where(np.isnan(num(df, "n_layers")), self.shape.L / self.pp,
                                         stage_layers(self.shape.L, self.pp))
            self.stage_share = self.stage_layers / self.shape.L
            # the last stage: an uneven split takes its missing layers from the first and last stages,
            # half each, the last's rounded up (they hold the embedding and the LM head)
            short = np.maximum(self.pp * self.stage_layers - self.shape.L, 0.0)
            self.last_stage_layers = np.where(self.pp > 1, np.maximum(self.stage_layers - np.ceil(short / 2.0), 0.0),
                                              self.shape.L)
            self.imbalance = self.pp * self.stage_share

        self.precision, self.format = precision_codes(df)
        self.ac = coded(df, "activation_checkpointing", normalize_checkpointing, CHECKPOINTING)
        key = "zero_stage" if column(df, "fsdp") is None and column(df, "zero_stage") is not None else "fsdp"
        self.sharding = coded(df, key, normalize_sharding, SHARDINGS)
        self.shard_group = num(df, "shard_group", np.nan)  # hybrid_shard's group (memory.py; NaN: a node)
        sp = mapped(df, "sequence_parallel", to_bool, dtype=float)
        self.sp = np.where(np.isnan(sp), (self.tp > 1).astype(float), sp)  # Megatron and torchtitan: on with TP
        fa = mapped(df, "flash_attention", to_bool, dtype=float)
        self.flash = np.where(np.isnan(fa), 1.0, fa)
        self.compile_flag = mapped(df, "compile", to_bool, dtype=float)
        self.fused_loss_flag = mapped(df, "fused_loss", to_bool, dtype=float)
        self.framework = coded(df, "framework", normalize_framework, FRAMEWORKS)
        self.token_drop = mapped(df, "moe_token_drop", to_bool, dtype=float) > 0
        overlap = mapped(df, "tp_comm_overlap", to_bool, dtype=float)
        recipes = trait(self.framework, "tp_comm_overlap")  # the framework's default (module docstring)
        self.tp_overlap = np.where(np.isnan(overlap), recipes, overlap > 0) & (self.tp > 1) & (self.sp > 0)
        gather = mapped(df, "fp8_param_gather", to_bool, dtype=float)  # torchtitan's presets: on (module docstring)
        self.fp8_gather = np.where(np.isnan(gather), trait(self.framework, "fp8_param_gather"), gather > 0)
        is32 = is_code(self.precision, PRECISIONS, "fp32")
        self.act_bytes = np.where(is32, FP32_BYTES[3], MIXED_BYTES[3])
        self.hw = device_figures(df, self.precision, self.n_gpus, self.format)
        # the share of the blocks' linear layers a low-precision recipe keeps in BF16 (:mod:`.precision`)
        self.bf16_share = np.clip(num(df, "bf16_layers", 0.0) / self.shape.L, 0.0, 1.0)
        # its backward GEMMs: in the format too (Transformer Engine, torchao: the default), or in BF16
        # (``low_precision_backward`` false: perfzoo's llm workload, whose FP8 linears quantize the forward only)
        backward = mapped(df, "low_precision_backward", to_bool, dtype=float)
        self.width = format_width(self.precision, self.format)  # bytes per element of the quantized GEMM inputs
        self.forward_only = (backward == 0) & (self.width < 2.0)
        fa2 = trait(self.framework, "fa2_attention")
        kernel = np.where(fa2, self.hw.fa2_slowdown, self.hw.flash_slowdown)
        self.attention_x = np.where(self.flash > 0, kernel, 1.0)  # the flash kernel's slowdown (module docstring)
        self.recompute = ModuleRecompute(self, df)
        self.memory = Memory(self)
        self.traffic = Traffic(self)
        self.dispatch = Dispatch(self, df)
        self._parts: dict[tuple[bool, bool, bool], dict[str, np.ndarray]] = {}

    # parameters and FLOPs ----------------------------------------------------------------
    def total_params(self) -> np.ndarray:
        return self.shape.total_params

    def weight_passes(self) -> np.ndarray:
        return 6.0 - 2.0 * self.adapters  # forward, activation grads, weight grads

    def flops_parts(self, causal: bool = False, recompute: bool = False, executed: bool = False) -> dict[str, np.ndarray]:
        """FLOPs per token by part (``linear``, ``head``, ``attention``), optionally with the causal
        attention count, the recomputed forward, and what the kernels execute beyond the count
        (the MoE padding, FlashAttention's recomputed scores); each kind computed once."""
        key = (causal, recompute, executed)
        if key not in self._parts:
            self._parts[key] = self._flops_parts(causal, recompute, executed)
        return self._parts[key]

    def _flops_parts(self, causal: bool, recompute: bool, executed: bool) -> dict[str, np.ndarray]:
        parts = self.shape.flops_per_token(self.weight_passes(), causal, executed)
        if recompute:
            full = is_code(self.ac, CHECKPOINTING, "full")
            selective = is_code(self.ac, CHECKPOINTING, "selective")
            fwd = self.shape.flops_per_token(2.0, causal, executed, forward=True)  # one forward of everything
            parts = {k: v + np.where(full | (selective & (k == "attention")), fwd[k], 0.0) for k, v in parts.items()}
            modules = self.recompute.forward_flops_per_token()  # moe_recompute's modules (:mod:`.recompute`)
            parts["linear"] = parts["linear"] + np.where(full | (self.memory.profile != FUSED), 0.0, modules)
        if executed:  # a flash kernel recomputes the scores; batched GEMMs compute the masked half too
            parts["attention"] = parts["attention"] + self.shape.flash_recompute_flops_per_token(causal)
            if np.any(self.flash <= 0):
                parts["attention"] = np.where(self.flash > 0, parts["attention"],
                                              self.flops_parts(False, recompute)["attention"])
        return parts

    def flops_per_token(self, causal: bool = False) -> np.ndarray:
        return sum(self.flops_parts(causal).values())

    def recompute_flops_per_token(self) -> np.ndarray:
        return sum(self.flops_parts(recompute=True).values()) - self.flops_per_token()

    def tokens_per_step(self) -> np.ndarray:
        return self.B * self.shape.s

    def flops_per_step(self, recompute: bool = True) -> np.ndarray:
        return self.tokens_per_step() * sum(self.flops_parts(recompute=recompute).values())

    def flops_per_device_step(self) -> np.ndarray:
        return self.flops_per_step(True) / self.n_gpus

    # communication ---------------------------------------------------------------------
    def comm_bytes(self) -> dict[str, np.ndarray]:
        sh = self.shape
        dp = sum(self.dp_bytes)
        t = self.tp
        tokens = self.b * sh.s / self.cp  # one micro-batch's tokens on this device
        act = tokens * sh.d * self.act_bytes
        passes = self.m * self.stage_share  # micro-batch passes of the heaviest stage's share of the layers
        tp = self.tp_calls() * 2.0 * (t - 1.0) / np.maximum(t, 1.0) * act
        pp = np.where(self.pp > 1, self.m * self.vp * 2.0 * (self.pp - 1.0) / self.pp * act / np.where(self.sp > 0, t, 1.0),
                      0.0)
        kv = tokens * sh.kv_heads * (sh.h_qk + sh.h_v) * self.act_bytes / t  # TP shards the heads
        cp = np.where(self.cp > 1, passes * (sh.L_attn + sh.mtp) * 3.0 * (self.cp - 1.0) * kv, 0.0)
        return {"comm_dp_bytes": dp, "comm_tp_bytes": tp, "comm_pp_bytes": pp, "comm_cp_bytes": cp,
                "comm_ep_bytes": self.dispatch.bytes + self.etp_bytes}

    @cached_property
    def etp_bytes(self) -> np.ndarray:
        """Bytes each device sends per step to gather its routed tokens over the expert-TP group and
        scatter their outputs back: per MoE layer and micro-batch an all-gather and a reduce-scatter
        forward, the same backward (and in a recomputed forward) of the ``K*CF`` copies of its local
        tokens, ``etp - 1`` of every ``etp`` gathered from the others (Megatron-Core's all-to-all
        dispatcher with expert TP; none with ``etp`` 1)."""
        sh = self.shape
        moe_layers = sh.moe.L_moe + np.where(sh.moe.L_moe > 0, sh.mtp, 0.0)
        n_ar = np.where(is_code(self.ac, CHECKPOINTING, "full"), 3.0, 2.0)
        copies = sh.moe.routed_tokens(self.b * sh.s / self.cp / self.tp) * sh.d * self.act_bytes
        return np.where((self.etp > 1) & sh.moe.is_moe,
                        self.m * self.stage_share * moe_layers * 2.0 * n_ar * (self.etp - 1.0) * copies, 0.0)

    @cached_property
    def dp_bytes(self) -> tuple[np.ndarray, np.ndarray]:
        """(dense, expert) bytes each device sends per step to reduce gradients and gather
        parameters: the dense parameters over the ``dp*cp`` ranks of their group, the routed
        experts over their expert-data-parallel group (:meth:`expert_dp_group`)."""
        g_wire = self.memory.bytes_per_param()[1]
        s = self.sharding
        full = is_code(s, SHARDINGS, "full_shard", "hybrid_shard")
        dense, expert = self.memory.local_params

        def per_param(p_wire):
            return np.select([self.memory.pipelined_fsdp, full, is_code(s, SHARDINGS, "shard_grad_op")],
                             [p_wire + g_wire, self.m * (2.0 * p_wire + g_wire), self.m * (p_wire + g_wire)],
                             2.0 * g_wire)

        def ring(size):
            return np.where(size > 1, (size - 1.0) / np.maximum(size, 1.0), 0.0)

        # parameters gathered in the compute dtype; the blocks' dense linears in FP8 with a float8 all-gather
        blocks = self.memory.local_blocks
        block_wire = np.where(self.fp8_gather & is_code(self.format, FORMATS, "fp8"), 1.0, self.act_bytes)
        dense_sent = blocks * per_param(block_wire) + (dense - blocks) * per_param(self.act_bytes)
        expert_sent = expert * per_param(self.act_bytes)
        return ring(self.dp * self.cp) * dense_sent, ring(self.expert_dp_group()[0]) * expert_sent

    def expert_dp_group(self) -> tuple[np.ndarray, np.ndarray]:
        """(size, stride) of the routed experts' data-parallel group: the ``tp*cp*dp`` ranks of a
        pipeline stage regrouped as ETP x EP x expert-DP, ETP innermost (Megatron-Core's
        ``expert_decoder_rank_generator``, order tp-ep-dp-pp, expert-DP size ``world/(etp*ep*pp)``),
        so its members sit ``ep*etp`` ranks apart."""
        width = np.maximum(self.ep * self.etp, 1.0)
        return np.maximum(self.dp * self.cp * self.tp / width, 1.0), width

    def call_counts(self) -> dict[str, np.ndarray]:
        """What fixed per-call costs multiply: ``layer_passes`` (forward + backward of one layer
        on one micro-batch, per device per step) and ``collective_calls`` (the blocking TP / CP
        / EP collectives among them). Small layers spend most of their time in these."""
        sh = self.shape
        passes = self.m * self.stage_layers
        n_ar = np.where(is_code(self.ac, CHECKPOINTING, "full"), 6.0, 4.0)
        moe_share = np.where(sh.L > 0, sh.moe.L_moe / sh.L, 0.0)
        calls = passes * (np.where(self.tp > 1, n_ar, 0.0) + np.where(self.cp > 1, 3.0 * (self.cp - 1.0), 0.0)
                          + np.where((self.ep > 1) & sh.moe.is_moe, 4.0 * moe_share, 0.0))
        return {"layer_passes": passes, "collective_calls": calls}

    def tp_calls(self) -> np.ndarray:
        """The TP all-reduces (or all-gather + reduce-scatter pairs) one device runs per step: per sublayer
        and micro-batch of its stage two, three with full recompute (as :meth:`comm_bytes` counts their bytes)."""
        sh = self.shape
        moe_layers = sh.moe.L_moe + np.where(sh.moe.L_moe > 0, sh.mtp, 0.0)
        # an MoE sublayer gathers its tokens over TP only for its shared experts (its routed ones: etp_bytes)
        sublayers = sh.L_attn + sh.L_linear + sh.L_ffn + sh.L_mamba + 2.0 * sh.mtp - np.where(sh.moe.fs > 0, 0.0, moe_layers)
        n_ar = np.where(is_code(self.ac, CHECKPOINTING, "full"), 3.0, 2.0)
        return np.where(self.tp > 1, self.m * self.stage_share * sublayers * n_ar, 0.0)

    def bubble(self) -> np.ndarray:
        pp = self.pp
        return np.where(pp > 1, (pp - 1.0) / (self.vp * self.m + pp - 1.0), 0.0)

    def compute_time(self) -> np.ndarray:
        """Seconds of compute per device per step: what the kernels execute (causal attention,
        recompute, the MoE padding), each part at its peak (:mod:`.precision`) times the rate its kernels'
        shapes reach (:mod:`.kernels`), the attention core stretched by its kernel's slowdown, the LM head
        on the last pipeline stage (module docstring)."""
        return self._shaped_compute

    @cached_property
    def _shaped_compute(self) -> np.ndarray:  # step_time and kernel_rate both read it: computed once
        return self._compute_seconds(shape_efficiency(self))

    def kernel_rate(self) -> np.ndarray:
        """The rate the compute runs at at this layout's kernel shapes over the reference GEMM's
        (:mod:`.kernels`): the compute time at the peaks over :meth:`compute_time`."""
        parts = self.flops_parts(causal=True, recompute=True, executed=True)
        return self._compute_seconds(dict.fromkeys(parts, 1.0)) / self.compute_time()

    def _compute_seconds(self, rate: dict[str, np.ndarray]) -> np.ndarray:
        """The pacing stage's compute: the fuller of a middle stage (``stage_layers``, no head) and the last
        (its layers and the whole LM head; module docstring); without a pipeline, the one stage."""
        parts = self.flops_parts(causal=True, recompute=True, executed=True)

        def seconds(layers, head):
            share = {"linear": layers, "attention": layers, "head": head}
            per_device = {k: v * self.tokens_per_step() / self.n_gpus * share[k] / rate[k] for k, v in parts.items()}
            per_device["attention"] = per_device["attention"] * self.attention_x
            return compute_seconds(per_device, self.hw.peak, self.hw.peak_bf16, self.linear_bf16_share())

        last = self.pp * self.last_stage_layers / self.shape.L
        return np.where(self.pp > 1, np.maximum(seconds(self.imbalance, 0.0), seconds(last, self.pp)),
                        seconds(self.imbalance, self.pp))

    def linear_bf16_share(self) -> np.ndarray:
        """The share of the blocks' linear FLOPs that runs at the 16-bit peak: the layers a recipe keeps
        in BF16 and, where only the forward GEMM is low precision, the backward GEMMs (2 of every 3
        passes; a recomputed forward is low precision too)."""
        full = is_code(self.ac, CHECKPOINTING, "full")
        forward = (2.0 + 2.0 * full) / (self.weight_passes() + 2.0 * full)
        q = self.bf16_share
        return np.where(self.forward_only, q + (1.0 - q) * (1.0 - forward), q)

    def step_time(self, comm: Optional[dict[str, np.ndarray]] = None) -> dict[str, np.ndarray]:
        """The step's time terms: ``compute_time_s``, ``softmax_time_s``, ``memory_time_s``,
        ``optimizer_time_s``, ``tp_time_s``, ``cp_time_s``, ``ep_time_s``, ``pp_time_s``,
        ``dp_time_s``, ``comm_time_s`` and ``step_time_s``."""
        comm = comm if comm is not None else self.comm_bytes()
        hw = self.hw
        t_compute = self.compute_time()
        kernels = self.traffic.seconds()
        busy = t_compute + kernels["softmax_time_s"] + kernels["memory_time_s"]
        t_tp = ring_seconds(hw, comm["comm_tp_bytes"], self.tp_calls(), self.tp, 1.0)  # NCCL's cost, latency too
        t_tp = np.where(self.tp_overlap, np.maximum(0.0, t_tp - t_compute), t_tp)  # only the excess shows
        t_cp = comm["comm_cp_bytes"] / group_bandwidth(hw, self.cp, self.tp)
        # the all-to-alls over EP as far as no overlap hides them (:mod:`.dispatch`), then the expert-TP gathers
        # (NCCL's, never under the GEMMs)
        t_hidden = self.dispatch.hidden(t_compute)
        t_ep = self.dispatch.seconds() - t_hidden + self.etp_bytes / group_bandwidth(hw, self.etp, 1.0)
        dense_dp, expert_dp = self.dp_bytes
        t_dense, t_exposed = dense_dp_seconds(self, dense_dp)  # FSDP's rings, latency too (:mod:`.fsdp`)
        t_dp = t_dense + expert_dp / group_bandwidth(hw, *self.expert_dp_group())
        t_pp = comm["comm_pp_bytes"] / link_bandwidth(hw, self.n_gpus)
        overlapped = t_dp - t_exposed + t_cp
        hidden = np.minimum(overlapped, busy) + t_hidden  # what the kernels hide still holds NCCL's SMs meanwhile
        contention = hidden * np.where(np.isnan(hw.units), 0.0, NCCL_CHANNELS / hw.units)
        step = ((busy + t_tp + t_ep) / (1.0 - self.bubble()) + t_pp + kernels["optimizer_time_s"]
                + t_exposed + np.maximum(0.0, overlapped - busy) + contention)
        host = host_wait(self, step)
        return {"compute_time_s": t_compute, **kernels, "tp_time_s": t_tp, "cp_time_s": t_cp, "ep_time_s": t_ep,
                "pp_time_s": t_pp, "dp_time_s": t_dp, "comm_time_s": t_tp + t_cp + t_ep + t_pp + t_dp,
                "host_time_s": host, "step_time_s": step + host}

    def host_pass_factor(self) -> np.ndarray:
        """How many times the host's time per layer pass it takes (:func:`.host.pass_factor`)."""
        return pass_factor(self)

    def host_shows(self) -> np.ndarray:
        """Whether the host's time per layer pass can pace the step (:func:`.host.shows`)."""
        return shows(self)

    def columns(self) -> dict[str, np.ndarray]:
        """Every estimate of :data:`perfzoo.analytic.ESTIMATE_COLUMNS`."""
        with np.errstate(divide="ignore", invalid="ignore"):
            comm = self.comm_bytes()
            times = self.step_time(comm)
            tokens = self.tokens_per_step()
            tput = tokens / times["step_time_s"]
            executed = sum(self.flops_parts(causal=True, recompute=True, executed=True).values())
            executed = executed * tokens / self.n_gpus * self.imbalance  # the heaviest pipeline rank's
            return {
                "n_params": self.total_params(),
                "active_params": self.shape.matmul_params,
                "flops_per_token": self.flops_per_token(),
                "tokens_per_step": tokens,
                "flops_per_device_step": self.flops_per_device_step(),
                "effective_peak_flops": executed / times["compute_time_s"],  # the FLOP/s the ideal compute runs at
                "kernel_rate": self.kernel_rate(),
                **self.memory.columns(),
                **comm,
                "comm_bytes": sum(comm.values()),
                "bubble": self.bubble(),
                **self.call_counts(),
                **times,
                "throughput": tput,
                "throughput_per_device": tput / self.n_gpus,
            }
