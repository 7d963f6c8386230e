"""The LLM cost model: what a decoder-only transformer training config should cost.

Conventions (the same in every function; the hand-worked examples are in
``tests/test_analytic.py``). Keys from ``docs/architecture.md``: ``L`` layers, width ``d``,
FFN width ``f`` (default ``4d``), ``a`` heads, ``k`` KV heads (default ``a``), vocabulary
``V`` (unknown -> 0: the embedding / LM head is left out), sequence ``s``, global batch ``B``
sequences, micro batch ``b``; parallel degrees ``tp, pp, cp, dp, ep`` (``dp`` defaults to
``n_gpus / (tp*pp*cp)``); ``m`` = micro-batches per step per pipeline = ``grad_accum``
(default ``B / (b*dp)``; when neither ``b`` nor ``m`` is given, ``b = 1``, the usual choice at
scale). With no layout at all (``tp``, ``pp``, ``dp`` unknown) and more devices than
sequences, ``dp = B`` and the rest is model parallel: TP up to 8, then PP. An unknown ``s`` is
2048 (per-device throughput hardly depends on it). MoE: ``E`` experts (``n_experts``), ``K``
active per token (``experts_per_token``).

* Shape: unknown ``L``/``d`` with a known parameter count (``n_params``, else the size the
  model name states, ``GPT3-5B``) take the common aspect ratio ``d = 128*L``, head width 128,
  ``f = 4d``: ``N = 12*L*d^2`` gives ``d = (128*N/12)^(1/3)``.
* Parameters (biases and norms left out): per layer ``2d^2 + 2d^2*k/a`` (Q, O and the
  K, V projections) plus the MLP ``2*d*f`` (``3*d*f`` when gated, i.e. SwiGLU; gated is
  taken from ``config.gated_mlp`` or, when absent, assumed when ``f != 4d``), times ``E`` for
  MoE (plus a ``d*E`` router); plus ``V*d`` for the input embedding and ``V*d`` for the LM
  head unless ``config.tie_embeddings``.
* Training FLOPs per token (the PaLM / MosaicML / Megatron convention, no causal discount):
  ``6*N + 12*L*d*s``, where ``N = L*(active block params) + V*d`` are the parameters that
  take part in matmuls (MoE: ``K`` experts' MLPs, not ``E``; the embedding lookup is free,
  the LM head is not) and ``12*L*d*s`` counts QK^T and AV (2 matmuls x 2 FLOP/MAC x 3 for
  forward+backward, ``s*d`` each). Adapter tuning (``task`` LoRA / PEFT) computes no weight
  gradients: ``4*N + 12*L*d*s``.
* Recompute (hardware FLOPs): full activation checkpointing adds one forward,
  ``2*N + 4*L*d*s`` per token; selective adds the attention-core forward ``4*L*d*s``.
* FLOPs per device per step = ``B*s*flops_per_token(+recompute) / n_gpus`` (TP, PP, CP, EP
  and DP split the work evenly; the pipeline bubble costs time, not FLOPs).
* Model state bytes per device (ZeRO paper accounting, Adam): mixed precision (bf16, fp16,
  fp8, fp4) holds 2 B params + 2 B grads + 12 B optimizer (fp32 master, m, v) per
  parameter; fp32 holds 4 + 4 + 8; adapter tuning holds the parameters only. TP and PP split
  the parameters (``N_total/(tp*pp)``), EP the experts; data-parallel sharding over
  ``D = dp*cp`` ranks divides: ``none``/``no_shard`` (DDP, ZeRO-0) nothing; ``zero1`` the
  optimizer; ``shard_grad_op`` (ZeRO-2) grads + optimizer; ``full_shard`` (ZeRO-3) all
  three; ``hybrid_shard`` all three over ``min(D, node)``.
* Activation bytes per device (Korthikanti et al. 2022, "Reducing activation recomputation
  in large transformer models", 16-bit activations, per layer and micro-batch, with
  ``s -> s/cp``): no recompute ``s*b*d*(10 + 24/t + 5*a*s/(d*t))`` (with sequence
  parallelism ``s*b*d/t*(34 + 5*a*s/d)``); selective ``s*b*d*(10 + 24/t)`` (with SP
  ``34*s*b*d/t``); full ``2*s*b*d`` (``/t`` with SP). ``config.flash_attention`` drops the
  ``5*a*s/d`` term. A 1F1B pipeline stage holds ``L/pp * min(pp, m)`` layers' worth; fp32
  doubles it.
* Communication bytes sent per device per step (ring collectives: an all-reduce of ``X``
  bytes sends ``2*(g-1)/g*X``, an all-gather or reduce-scatter ``(g-1)/g*X``):
  DP (``none``, ``no_shard``, ``zero1``): one gradient all-reduce per step;
  ``shard_grad_op``: per micro-batch one parameter all-gather + one gradient
  reduce-scatter; ``full_shard``/``hybrid_shard``: per micro-batch two all-gathers
  (forward and backward) + one reduce-scatter (no gradient traffic for adapter tuning).
  TP (Megatron): 4 all-reduces of ``b*s*d`` activations per layer per micro-batch (6 with
  full recompute). PP: each micro-batch's activation forward and its gradient backward,
  ``2*(pp-1)/pp*b*s*d`` per device. CP (ring attention): ``3*(cp-1)*2*b*(s/cp)*d*k/a`` per
  layer per micro-batch (K, V forward; K, V and their gradients backward). EP: per MoE
  layer and micro-batch 4 all-to-alls (dispatch and combine, forward and backward) of the
  ``K*b*s/cp`` routed tokens, ``(ep-1)/ep`` of them leaving the device. Gradients travel in
  the parameter dtype.
* Where a group lands (Megatron's rank order: TP innermost, then CP, DP (EP within DP), PP):
  a group whose members lie within ``span`` consecutive ranks uses the intra-node link when
  ``span <= devices per node``, else the network: TP ``tp``, CP ``tp*cp``, EP ``tp*cp*ep``,
  DP ``tp*cp*dp``, PP ``n_gpus``.
* Pipeline bubble fraction (1F1B / GPipe): ``(pp-1)/(m+pp-1)``; interleaved with ``vp``
  virtual stages ``(pp-1)/(vp*m+pp-1)``.
* Ideal step time: ``t_compute = flops_per_device_step / peak_flops[precision]``,
  each traffic over its link; ``step = (t_compute + t_tp + t_ep)/(1 - bubble) + t_pp
  + max(0, t_dp + t_cp - t_compute)`` (TP and EP traffic is on the critical path; DP/FSDP
  traffic and ring attention's KV passing overlap with compute, only their excess shows).
  Throughput = ``B*s/step`` tokens/s.
"""

from __future__ import annotations

from typing import Optional

import numpy as np
import pandas as pd

from perfzoo.analytic._frame import Frame, as_frame, coded, column, is_code, mapped, num, wrap, wrap_frame
from perfzoo.analytic.hardware import device_figures, link_bandwidth
from perfzoo.vocabulary import (CHECKPOINTING, PRECISIONS, SHARDINGS, is_adapter_tuning, normalize_checkpointing,
                                normalize_precision, normalize_sharding, params_from_name, to_bool)

FP32_BYTES = (4.0, 4.0, 8.0, 4.0)  # params, grads, optimizer, activations
MIXED_BYTES = (2.0, 2.0, 12.0, 2.0)
ASPECT = 128.0  # d / L and the head width, for shapes known only by their parameter count
DEFAULT_SEQ_LEN = 2048.0  # for rows that give none: per-device throughput hardly depends on it


class LLMCost:
    """The LLM config as float arrays, defaults applied (see the module docstring), and its costs.

    >>> cost = LLMCost(pd.DataFrame([{"n_layers": 24, "hidden_dim": 1024, "n_heads": 16, "seq_len": 1024}]))
    >>> float(cost.total_params()[0])
    301989888.0
    """

    @staticmethod
    def size_hint(df: pd.DataFrame) -> np.ndarray:
        """The parameter count a row states: ``n_params``, else the size in its model name."""
        N_given = num(df, "n_params")
        return np.where(np.isnan(N_given), mapped(df, "model_name", params_from_name), N_given)

    def __init__(self, df: pd.DataFrame):
        self.n = len(df)
        self.n_params_published = self.size_hint(df)
        L, d = num(df, "n_layers"), num(df, "hidden_dim")
        d_from_n = np.cbrt(ASPECT * self.n_params_published / 12.0)
        shape_derived = np.isnan(L) | np.isnan(d)
        self.d = np.where(np.isnan(d), d_from_n, d)
        self.L = np.where(np.isnan(L), np.maximum(np.round(self.d / ASPECT), 1.0), L)
        a = num(df, "n_heads")
        # a stated parameter count beats one computed from a guessed shape
        self.use_stated = (shape_derived | np.isnan(a)) & ~np.isnan(self.n_params_published)
        self.a = np.where(np.isnan(a), np.maximum(np.round(self.d / ASPECT), 1.0), a)
        k = num(df, "n_kv_heads")
        self.k = np.where(np.isnan(k), self.a, k)
        f = num(df, "ffn_dim")
        self.f = np.where(np.isnan(f), 4.0 * self.d, f)
        self.V = num(df, "vocab_size", 0.0)
        self.s = num(df, "seq_len", DEFAULT_SEQ_LEN)
        gated = mapped(df, "gated_mlp", to_bool, dtype=float)
        self.gated = np.where(np.isnan(gated), (self.f != 4.0 * self.d).astype(float), gated)
        tied = mapped(df, "tie_embeddings", to_bool, dtype=float)
        self.tied = np.where(np.isnan(tied), 0.0, tied)
        E = num(df, "n_experts")
        self.E = np.where(np.isnan(E) | (E < 1), 1.0, E)
        K = num(df, "experts_per_token")
        self.K = np.where(self.E > 1, np.where(np.isnan(K), 1.0, np.minimum(K, self.E)), 1.0)
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

        self.precision = coded(df, "precision", normalize_precision, PRECISIONS)
        self.ac = coded(df, "activation_checkpointing", normalize_checkpointing, CHECKPOINTING)
        key = "zero_stage" if column(df, "fsdp") is None and column(df, "zero_stage") is not None else "fsdp"
        self.sharding = coded(df, key, normalize_sharding, SHARDINGS)
        sp = mapped(df, "sequence_parallel", to_bool, dtype=float)
        self.sp = np.where(np.isnan(sp), 0.0, sp)
        fa = mapped(df, "flash_attention", to_bool, dtype=float)
        self.flash = np.where(np.isnan(fa), 0.0, fa)

        is32 = is_code(self.precision, PRECISIONS, "fp32")
        self.p_bytes, self.g_bytes, self.o_bytes, self.act_bytes = (
            np.where(is32, x32, xm) for x32, xm in zip(FP32_BYTES, MIXED_BYTES))
        trains = 1.0 - self.adapters  # adapter tuning: no weight gradients, no optimizer state
        self.g_bytes = self.g_bytes * trains
        self.o_bytes = self.o_bytes * trains

        self.hw = device_figures(df, self.precision, self.n_gpus)

    # parameters ------------------------------------------------------------------------
    def _attention_params(self) -> np.ndarray:
        d = self.d
        return 2.0 * d * d + 2.0 * d * (d * self.k / self.a)

    def _expert_params(self) -> np.ndarray:
        return np.where(self.gated > 0, 3.0, 2.0) * self.d * self.f

    def block_params(self) -> np.ndarray:
        """Parameters of one layer, every expert counted."""
        router = np.where(self.E > 1, self.d * self.E, 0.0)
        return self._attention_params() + self.E * self._expert_params() + router

    def matmul_params(self) -> np.ndarray:
        """Parameters one token's matmuls touch: ``K`` experts, the LM head, not the embedding."""
        active = self._attention_params() + self.K * self._expert_params()
        N = self.L * active + self.V * self.d
        return np.where(np.isnan(N) | self.use_stated, self.n_params_published, N)

    def total_params(self) -> np.ndarray:
        est = self.L * self.block_params() + self.V * self.d * (2.0 - self.tied)
        return np.where(np.isnan(est) | self.use_stated, self.n_params_published, est)

    # FLOPs -----------------------------------------------------------------------------
    def flops_per_token(self) -> np.ndarray:
        weight_passes = 6.0 - 2.0 * self.adapters  # forward, activation grads, weight grads
        return weight_passes * self.matmul_params() + 12.0 * self.L * self.d * self.s

    def recompute_flops_per_token(self) -> np.ndarray:
        attn_fwd = 4.0 * self.L * self.d * self.s
        full = 2.0 * self.matmul_params() + attn_fwd
        return np.select([is_code(self.ac, CHECKPOINTING, "full"), is_code(self.ac, CHECKPOINTING, "selective")],
                         [full, attn_fwd], 0.0)

    def tokens_per_step(self) -> np.ndarray:
        return self.B * self.s

    def flops_per_step(self, recompute: bool = True) -> np.ndarray:
        per_token = self.flops_per_token() + (self.recompute_flops_per_token() if recompute else 0.0)
        return self.tokens_per_step() * per_token

    def flops_per_device_step(self) -> np.ndarray:
        return self.flops_per_step(True) / self.n_gpus

    # memory ----------------------------------------------------------------------------
    def shard_group(self) -> np.ndarray:
        D = self.dp * self.cp
        return np.where(is_code(self.sharding, SHARDINGS, "hybrid_shard"), np.minimum(D, self.hw.node_size), D)

    def local_params(self) -> np.ndarray:
        """Parameters held per device before data-parallel sharding (TP, PP; EP splits experts)."""
        experts = self.L * self.E * self._expert_params()
        experts = np.where(self.E > 1, experts, 0.0)  # dense models: nothing for EP to split
        return (self.total_params() - experts + experts / np.maximum(self.ep, 1.0)) / (self.tp * self.pp)

    def state_bytes(self) -> dict[str, np.ndarray]:
        N_local = self.local_params()
        D = np.maximum(self.shard_group(), 1.0)
        s = self.sharding
        full = is_code(s, SHARDINGS, "full_shard", "hybrid_shard")
        p_div = np.where(full, D, 1.0)
        g_div = np.where(full | is_code(s, SHARDINGS, "shard_grad_op"), D, 1.0)
        o_div = np.where(full | is_code(s, SHARDINGS, "shard_grad_op", "zero1"), D, 1.0)
        return {
            "param_bytes": N_local * self.p_bytes / p_div,
            "grad_bytes": N_local * self.g_bytes / g_div,
            "optimizer_bytes": N_local * self.o_bytes / o_div,
        }

    def activation_bytes(self) -> np.ndarray:
        s = self.s / self.cp
        b, d, a, t = self.b, self.d, self.a, self.tp
        attn = np.where(self.flash > 0, 0.0, 5.0 * a * s / d)
        sp = (self.sp > 0) & (t > 1)
        none = np.where(sp, s * b * d / t * (34.0 + attn), s * b * d * (10.0 + 24.0 / t + attn / t))
        selective = np.where(sp, 34.0 * s * b * d / t, s * b * d * (10.0 + 24.0 / t))
        full = np.where(sp, 2.0 * s * b * d / t, 2.0 * s * b * d)
        per_layer = np.select([is_code(self.ac, CHECKPOINTING, "full"), is_code(self.ac, CHECKPOINTING, "selective")],
                              [full, selective], none)
        layers_held = self.L / self.pp * np.minimum(self.pp, self.m)
        return per_layer * layers_held * self.act_bytes / 2.0

    # communication ---------------------------------------------------------------------
    def comm_bytes(self) -> dict[str, np.ndarray]:
        N_local = self.local_params()
        D = self.dp * self.cp
        ring = np.where(D > 1, (D - 1.0) / np.maximum(D, 1.0), 0.0)
        s = self.sharding
        full = is_code(s, SHARDINGS, "full_shard", "hybrid_shard")
        dp = np.select(
            [full, is_code(s, SHARDINGS, "shard_grad_op")],
            [self.m * ring * N_local * (2.0 * self.p_bytes + self.g_bytes),
             self.m * ring * N_local * (self.p_bytes + self.g_bytes)],
            2.0 * ring * N_local * self.g_bytes,
        )
        t = self.tp
        tokens = self.b * self.s / self.cp  # one micro-batch's tokens on this device
        act = tokens * self.d * self.act_bytes
        layers = self.m * self.L / self.pp  # layer passes per device per step
        n_ar = np.where(is_code(self.ac, CHECKPOINTING, "full"), 6.0, 4.0)
        tp = np.where(t > 1, layers * n_ar * 2.0 * (t - 1.0) / t * act, 0.0)
        pp = np.where(self.pp > 1, self.m * 2.0 * (self.pp - 1.0) / self.pp * act, 0.0)
        kv = 2.0 * tokens * self.d * self.k / self.a * self.act_bytes
        cp = np.where(self.cp > 1, layers * 3.0 * (self.cp - 1.0) * kv, 0.0)
        ep = np.where((self.ep > 1) & (self.E > 1),
                      layers * 4.0 * (self.ep - 1.0) / np.maximum(self.ep, 1.0) * self.K * act / t, 0.0)
        return {"comm_dp_bytes": dp, "comm_tp_bytes": tp, "comm_pp_bytes": pp, "comm_cp_bytes": cp,
                "comm_ep_bytes": ep}

    def call_counts(self) -> dict[str, np.ndarray]:
        """What fixed per-call costs multiply: ``layer_passes`` (forward + backward of one layer
        on one micro-batch, per device per step) and ``collective_calls`` (the blocking TP / CP
        / EP collectives among them). Small layers spend most of their time in these."""
        passes = self.m * self.L / self.pp
        n_ar = np.where(is_code(self.ac, CHECKPOINTING, "full"), 6.0, 4.0)
        calls = passes * (np.where(self.tp > 1, n_ar, 0.0) + np.where(self.cp > 1, 3.0 * (self.cp - 1.0), 0.0)
                          + np.where((self.ep > 1) & (self.E > 1), 4.0, 0.0))
        return {"layer_passes": passes, "collective_calls": calls}

    def bubble(self) -> np.ndarray:
        pp = self.pp
        return np.where(pp > 1, (pp - 1.0) / (self.vp * self.m + pp - 1.0), 0.0)

    def step_time(self, comm: Optional[dict[str, np.ndarray]] = None) -> dict[str, np.ndarray]:
        """The step's time terms: ``compute_time_s``, ``tp_time_s``, ``cp_time_s``,
        ``ep_time_s``, ``pp_time_s``, ``dp_time_s``, ``comm_time_s`` and ``step_time_s``."""
        comm = comm if comm is not None else self.comm_bytes()
        hw = self.hw
        t_compute = self.flops_per_device_step() / hw.peak
        t_tp = comm["comm_tp_bytes"] / link_bandwidth(hw, self.tp)
        t_cp = comm["comm_cp_bytes"] / link_bandwidth(hw, self.tp * self.cp)
        t_ep = comm["comm_ep_bytes"] / link_bandwidth(hw, self.tp * self.cp * self.ep)
        t_dp = comm["comm_dp_bytes"] / link_bandwidth(hw, self.tp * self.cp * self.dp)
        t_pp = comm["comm_pp_bytes"] / link_bandwidth(hw, self.n_gpus)
        step = (t_compute + t_tp + t_ep) / (1.0 - self.bubble()) + t_pp + np.maximum(0.0, t_dp + t_cp - t_compute)
        return {"compute_time_s": t_compute, "tp_time_s": t_tp, "cp_time_s": t_cp, "ep_time_s": t_ep,
                "pp_time_s": t_pp, "dp_time_s": t_dp, "comm_time_s": t_tp + t_cp + t_ep + t_pp + t_dp,
                "step_time_s": step}

    def columns(self) -> dict[str, np.ndarray]:
        """Every estimate of :data:`perfzoo.analytic.ESTIMATE_COLUMNS`."""
        with np.errstate(divide="ignore", invalid="ignore"):
            state = self.state_bytes()
            act = self.activation_bytes()
            comm = self.comm_bytes()
            times = self.step_time(comm)
            mem = state["param_bytes"] + state["grad_bytes"] + state["optimizer_bytes"] + act
            tokens = self.tokens_per_step()
            tput = tokens / times["step_time_s"]
            return {
                "n_params": self.total_params(),
                "flops_per_token": self.flops_per_token(),
                "tokens_per_step": tokens,
                "flops_per_device_step": self.flops_per_device_step(),
                **state,
                "activation_bytes": act,
                "memory_bytes": mem,
                "memory_fraction": mem / (self.hw.memory_gib * 2.0**30),
                **comm,
                "comm_bytes": sum(comm.values()),
                "bubble": self.bubble(),
                **self.call_counts(),
                **times,
                "throughput": tput,
                "throughput_per_device": tput / self.n_gpus,
            }


# ----------------------------------------------------------------------------------------
# one quantity at a time
# ----------------------------------------------------------------------------------------


def param_count(cfg: Frame):
    """Total parameters (blocks + embedding + LM head); ``config.n_params`` where the shape is unknown.

    >>> param_count({"n_layers": 24, "hidden_dim": 1024, "n_heads": 16})
    301989888.0
    """
    df, scalar = as_frame(cfg)
    return wrap(LLMCost(df).total_params(), df, scalar)


def flops_per_token(cfg: Frame, recompute: bool = False):
    """Training FLOPs per token, ``6N + 12*L*d*s`` (+ recompute when ``recompute=True``).

    >>> flops_per_token({"n_layers": 24, "hidden_dim": 1024, "n_heads": 16, "seq_len": 1024})
    2113929216.0
    """
    df, scalar = as_frame(cfg)
    m = LLMCost(df)
    out = m.flops_per_token() + (m.recompute_flops_per_token() if recompute else 0.0)
    return wrap(out, df, scalar)


def flops_per_step(cfg: Frame, recompute: bool = True):
    """Training FLOPs of one optimizer step, all devices together (``B*s`` tokens)."""
    df, scalar = as_frame(cfg)
    return wrap(LLMCost(df).flops_per_step(recompute), df, scalar)


def flops_per_device_step(cfg: Frame):
    """Hardware FLOPs (recompute included) one device performs per optimizer step."""
    df, scalar = as_frame(cfg)
    return wrap(LLMCost(df).flops_per_device_step(), df, scalar)


def pipeline_bubble(cfg: Frame):
    """Idle fraction of a pipeline step, ``(pp-1)/(vp*m + pp-1)`` (0 without PP).

    >>> pipeline_bubble({"pp": 4, "grad_accum": 8})
    0.2727272727272727
    """
    df, scalar = as_frame(cfg)
    return wrap(LLMCost(df).bubble(), df, scalar)


def state_bytes_per_device(cfg: Frame):
    """Bytes of parameters, gradients and optimizer state per device (columns
    ``param_bytes``, ``grad_bytes``, ``optimizer_bytes``) under the config's sharding."""
    df, scalar = as_frame(cfg)
    return wrap_frame(LLMCost(df).state_bytes(), df, scalar)


def activation_bytes_per_device(cfg: Frame):
    """Activation memory per device (Korthikanti et al. 2022; see the module docstring)."""
    df, scalar = as_frame(cfg)
    return wrap(LLMCost(df).activation_bytes(), df, scalar)


def comm_bytes_per_device(cfg: Frame):
    """Bytes each device sends per optimizer step: ``comm_dp_bytes`` (DDP all-reduce or
    FSDP all-gather + reduce-scatter), ``comm_tp_bytes``, ``comm_pp_bytes``, ``comm_cp_bytes``,
    ``comm_ep_bytes``."""
    df, scalar = as_frame(cfg)
    return wrap_frame(LLMCost(df).comm_bytes(), df, scalar)


def ideal_step_time(cfg: Frame):
    """Ideal seconds per optimizer step from peak FLOP/s and link bandwidths (NaN for unknown hardware)."""
    df, scalar = as_frame(cfg)
    return wrap(LLMCost(df).step_time()["step_time_s"], df, scalar)
