"""A decoder's shape, as float arrays: which layers it has, their parameters, and the FLOPs one
token costs in each of them. Every LLM row goes through here, dense or MoE, attention or hybrid.

Keys (the config vocabulary of ``docs/architecture.md``; unknown -> the default after the arrow):

* ``n_layers`` ``L``; ``hidden_dim`` ``d``; ``n_heads`` ``a``; ``n_kv_heads`` ``k`` (-> ``a``);
  ``head_dim`` ``h`` (-> ``d/a``); ``ffn_dim`` ``f`` (-> ``4d``); ``vocab_size`` ``V`` (-> 0: no
  embedding or LM head); ``gated_mlp`` (SwiGLU, 3 matrices; -> ``f != 4d``); ``tie_embeddings``.
* Multi-head latent attention (DeepSeek-V2/V3, Kimi-K2; on when ``kv_lora_rank`` is given):
  ``q_lora_rank`` (0: a full-rank query), ``kv_lora_rank``, ``qk_nope_head_dim``,
  ``qk_rope_head_dim``, ``v_head_dim``. Per layer: query ``d*ql + ql*a*(nope+rope)``, keys and
  values ``d*(kvl+rope) + kvl*a*(nope+v)``, output ``a*v*d`` (DeepSeek-V3 report, section 2.1.1).
  Standard attention: ``d*a*h + 2*d*k*h + a*h*d``.
* Mixture of experts (``n_experts`` ``E`` > 1): ``experts_per_token`` ``K``, ``moe_ffn_dim``
  ``fe`` (one expert's width; -> ``f``), shared experts ``n_shared_experts`` of total width
  ``shared_ffn_dim`` (-> ``n_shared_experts*fe``), ``n_dense_layers`` layers with a dense
  MLP of width ``f`` (the first ones, or interleaved: only their count is priced); see :mod:`.moe`.
* Multi-token prediction: ``mtp_layers`` extra blocks (one attention + one FFN of the last
  layer's kind each, an ``eh_proj`` of ``2d*d`` and another pass of the LM head), as DeepSeek-V3
  trains them (Megatron-Core's ``mtp_num_layers``).
* Sliding-window attention: ``n_sliding_layers`` of the attention layers see only the last
  ``sliding_window`` tokens (GPT-OSS alternates 128-token windows with full attention).
* Packed samples: ``packed_sample_len`` ``S < s`` tokens per sample, several packed into each
  sequence, each attending only within itself (variable-length attention: FlashAttention's
  ``cu_seqlens``, Transformer Engine's THD layout), so an attention layer's context is that of an
  ``S``-token sequence; everything else still runs on ``s`` tokens (fine-tuning on short samples:
  NeMo's SFT and LoRA benchmarks, whose published FLOPs per token count almost no attention).
* Hybrid Mamba models (Nemotron-H, Nemotron-3 Nano): ``n_mamba_layers`` Mamba-2 mixers and
  ``n_attention_layers`` attention mixers among the ``L`` layers, the rest FFN (MoE) layers; a
  Mamba-2 layer of ``mamba_heads`` x ``mamba_head_dim`` (``di`` = their product), state
  ``mamba_state_dim`` ``N`` and ``mamba_groups`` ``G`` holds an in-projection ``d*(2di + 2GN +
  heads)`` and an out-projection ``di*d`` (Dao & Gu 2024, Mamba-2; Megatron-Core ``MambaMixer``);
  its selective scan is priced as Megatron-Bridge prices it, ``7*di*N`` FLOPs per token forward
  (``flop_utils.mamba_layer_flops``), a non-matrix kernel that runs in 16-bit.
* Linear attention (Qwen3-Next's gated delta-net): ``n_linear_layers`` of the ``L`` blocks
  mix with linear attention instead of softmax attention (each still followed by its FFN) over
  ``linear_key_heads`` ``nk`` query/key heads of ``linear_key_head_dim`` ``dk`` and
  ``linear_value_heads`` ``nv`` value heads of ``linear_value_head_dim`` ``dv``: projections
  ``d*(2nk*dk + 2nv*dv + 2nv)`` (q, k, v, the output gate z, and the gates beta, alpha) and
  ``nv*dv*d`` out (HF ``Qwen3NextGatedDeltaNet``); the core runs chunk by chunk (``C`` = 64
  tokens, fla's ``chunk_gated_delta_rule``; Yang et al. 2024, Gated Delta Networks), per value
  head and token forward ``2C(3dk + 2dv)`` within the chunk (``KK^T``, ``W``, ``U``, ``QK^T``,
  their product with the values) plus ``6*dk*dv`` for the state (read, output, update): linear
  in the sequence, not its square; plus the causal convolution, ``2*K*(2nk*dk + nv*dv)``.

FLOPs per token (training = forward + 2x backward = 3x forward, 2 FLOPs per multiply-add), split
by where they run (:mod:`.precision` prices each part at its peak):

* ``linear``: the blocks' projections and MLPs, ``6 x`` the active block parameters (routed
  experts ``K x capacity factor``, shared experts, Mamba projections, MTP blocks and ``eh_proj``);
  these are what FP8 / MXFP8 / NVFP4 recipes quantize.
* ``head``: the LM head ``6*V*d`` per prediction (``1 + mtp_layers``) and the MoE routers
  ``6*d*E`` per MoE layer; they stay in BF16.
* ``attention``: the attention core, ``6*ctx*a*(h_qk + h_v)`` per attention layer (what the
  kernels execute adds a FlashAttention backward's recomputed scores, ``2*ctx*a*h_qk``), where the
  context ``ctx`` is ``s`` in the model-FLOPs convention (PaLM, MosaicML, Megatron's MFU: no causal
  discount), ``s/2`` causal (what a FlashAttention kernel computes, and Megatron-Bridge's
  convention), and ``w - w(w-1)/(2s)`` in a sliding window ``w < s``, with ``s`` the packed sample
  ``S`` where samples are packed; plus the Mamba scans and the linear-attention cores.

>>> shape = ModelShape(pd.DataFrame([{"n_layers": 2, "hidden_dim": 64, "n_heads": 4, "ffn_dim": 256}]))
>>> float(shape.total_params[0])  # 2 x (4*64^2 attention + 2*64*256 MLP)
98304.0
>>> packed = ModelShape(pd.DataFrame([{"n_layers": 2, "hidden_dim": 64, "n_heads": 4, "seq_len": 4096},
...                                   {"n_layers": 2, "hidden_dim": 64, "n_heads": 4, "seq_len": 4096,
...                                    "packed_sample_len": 256}]))
>>> packed.attention_context(causal=True).tolist()  # 2 layers x s/2: 4,096-token samples, then 256-token ones
[4096.0, 256.0]
"""

from __future__ import annotations

from functools import cached_property

import numpy as np
import pandas as pd

from perfzoo.analytic._frame import mapped, num
from perfzoo.analytic.moe import MoE
from perfzoo.records.vocabulary import params_from_name, to_bool

ASPECT = 128.0  # d / L and the head width, for shapes known only by their parameter count
DEFAULT_SEQ_LEN = 2048.0  # for rows that give none: per-device throughput hardly depends on it
MAMBA_SCAN_FLOPS = 7.0  # forward FLOPs per token per (inner channel x state): Megatron-Bridge flop_utils
LINEAR_CHUNK = 64.0  # tokens per chunk of the chunked gated delta rule (fla's chunk_gated_delta_rule)
LINEAR_CONV_KERNEL = 4.0  # the gated delta-net's causal convolution width (Qwen3-Next's linear_conv_kernel_dim)


def _given(x: np.ndarray, default) -> np.ndarray:
    return np.where(np.isnan(x), default, x)


class ModelShape:
    """The shape of each row (see the module docstring), defaults applied."""

    @staticmethod
    def size_hint(df: pd.DataFrame) -> np.ndarray:
        """The parameter count a row states: ``n_params``, else the size in its model name."""
        N_given = num(df, "n_params")
        return np.where(np.isnan(N_given), mapped(df, "model_name", params_from_name), N_given)

    def __init__(self, df: pd.DataFrame):
        self.n_params_published = self.size_hint(df)
        L, d = num(df, "n_layers"), num(df, "hidden_dim")
        d_from_n = np.cbrt(ASPECT * self.n_params_published / 12.0)
        shape_derived = np.isnan(L) | np.isnan(d)
        self.d = _given(d, d_from_n)
        self.L = _given(L, np.maximum(np.round(self.d / ASPECT), 1.0))
        a = num(df, "n_heads")
        # a stated parameter count beats one computed from a guessed shape
        self.use_stated = (shape_derived | np.isnan(a)) & ~np.isnan(self.n_params_published)
        self.a = _given(a, np.maximum(np.round(self.d / ASPECT), 1.0))
        self.k = _given(num(df, "n_kv_heads"), self.a)
        self.hd = _given(num(df, "head_dim"), self.d / self.a)
        self.f = _given(num(df, "ffn_dim"), 4.0 * self.d)
        self.V = num(df, "vocab_size", 0.0)
        self.s = num(df, "seq_len", DEFAULT_SEQ_LEN)
        gated = mapped(df, "gated_mlp", to_bool, dtype=float)
        self.gated = _given(gated, (self.f != 4.0 * self.d).astype(float))
        self.g = np.where(self.gated > 0, 3.0, 2.0)  # matrices per MLP
        self.tied = _given(mapped(df, "tie_embeddings", to_bool, dtype=float), 0.0)
        # multi-head latent attention
        self.kvl = num(df, "kv_lora_rank")
        self.mla = ~np.isnan(self.kvl)
        self.ql = num(df, "q_lora_rank", 0.0)
        rope = num(df, "qk_rope_head_dim", 0.0)
        nope = _given(num(df, "qk_nope_head_dim"), self.hd)
        self.rope = np.where(self.mla, rope, 0.0)
        self.h_qk = np.where(self.mla, nope + rope, self.hd)
        self.h_v = np.where(self.mla, _given(num(df, "v_head_dim"), self.hd), self.hd)
        self.kv_heads = np.where(self.mla, self.a, self.k)  # MLA expands the latent to every head
        # layers: attention, Mamba, FFN (dense or MoE); sliding windows; MTP
        self.L_mamba = num(df, "n_mamba_layers", 0.0)
        hybrid = self.L_mamba > 0
        self.L_linear = np.where(hybrid, 0.0, np.minimum(num(df, "n_linear_layers", 0.0), self.L))
        self.L_attn = np.where(hybrid, num(df, "n_attention_layers", 0.0), self.L - self.L_linear)
        self.L_ffn = np.where(hybrid, self.L - self.L_attn - self.L_mamba, self.L)
        self.window = num(df, "sliding_window")
        self.sample = num(df, "packed_sample_len")
        self.L_window = np.where(np.isnan(self.window), 0.0, np.minimum(num(df, "n_sliding_layers", 0.0), self.L_attn))
        self.mtp = num(df, "mtp_layers", 0.0)
        self.moe = MoE(df, self.d, self.f, self.g, self.L_ffn)
        self.mamba_heads = num(df, "mamba_heads", 0.0)
        self.di = self.mamba_heads * num(df, "mamba_head_dim", 0.0)
        self.mamba_N = num(df, "mamba_state_dim", 0.0)
        self.mamba_G = num(df, "mamba_groups", 1.0)
        self.lin_nk = num(df, "linear_key_heads", 0.0)
        self.lin_nv = _given(num(df, "linear_value_heads"), self.lin_nk)
        self.lin_dk = num(df, "linear_key_head_dim", 0.0)
        self.lin_dv = _given(num(df, "linear_value_head_dim"), self.lin_dk)
        self.lin_conv = num(df, "linear_conv_kernel", LINEAR_CONV_KERNEL)
        self._core: dict[bool, np.ndarray] = {}

    # parameters ------------------------------------------------------------------------
    @cached_property
    def attention_params(self) -> np.ndarray:
        """Parameters of one attention mixer (its projections)."""
        d, a = self.d, self.a
        standard = d * a * self.hd + 2.0 * d * self.k * self.hd + a * self.hd * d
        query = np.where(self.ql > 0, d * self.ql + self.ql * a * self.h_qk, d * a * self.h_qk)
        kvl = np.where(self.mla, self.kvl, 0.0)
        mla = query + d * (kvl + self.rope) + kvl * a * (self.h_qk - self.rope + self.h_v) + a * self.h_v * d
        return np.where(self.mla, mla, standard)

    @cached_property
    def mamba_params(self) -> np.ndarray:
        """Parameters of one Mamba-2 mixer's projections (in and out)."""
        inner = 2.0 * self.di + 2.0 * self.mamba_G * self.mamba_N + self.mamba_heads
        return self.d * inner + self.di * self.d

    @cached_property
    def linear_attention_params(self) -> np.ndarray:
        """Parameters of one gated delta-net mixer's projections (q, k, v, z, beta, alpha in; out)."""
        keys, values = self.lin_nk * self.lin_dk, self.lin_nv * self.lin_dv
        return self.d * (2.0 * keys + 2.0 * values + 2.0 * self.lin_nv) + values * self.d

    def linear_attention_core_flops(self) -> np.ndarray:
        """Forward FLOPs per token of one gated delta-net layer's chunked core and convolution."""
        dk, dv = self.lin_dk, self.lin_dv
        per_head = 2.0 * LINEAR_CHUNK * (3.0 * dk + 2.0 * dv) + 6.0 * dk * dv
        conv = 2.0 * self.lin_conv * (2.0 * self.lin_nk * dk + self.lin_nv * dv)
        return self.lin_nv * per_head + conv

    @cached_property
    def mlp_params(self) -> np.ndarray:
        return self.g * self.d * self.f

    @cached_property
    def _mtp_blocks(self) -> tuple[np.ndarray, np.ndarray]:
        """(every parameter, the active ones) of the MTP blocks: attention, an FFN like the last layer's, eh_proj."""
        last_moe = self.moe.L_moe > 0
        ffn = np.where(last_moe, self.moe.layer_params, self.mlp_params)
        active_ffn = np.where(last_moe, self.moe.active_params, self.mlp_params)
        block = self.attention_params + 2.0 * self.d * self.d
        return self.mtp * (block + ffn), self.mtp * (block + active_ffn)

    @cached_property
    def block_params(self) -> np.ndarray:
        """Parameters of every block (experts all counted), MTP blocks included."""
        dense_ffn = (self.L_ffn - self.moe.L_moe) * self.mlp_params
        return (self.L_attn * self.attention_params + self.L_mamba * self.mamba_params + dense_ffn
                + self.L_linear * self.linear_attention_params + self.moe.L_moe * self.moe.layer_params
                + self._mtp_blocks[0])

    @cached_property
    def embedding_params(self) -> np.ndarray:
        return self.V * self.d * (2.0 - self.tied)

    @cached_property
    def total_params(self) -> np.ndarray:
        est = self.block_params + self.embedding_params
        return np.where(np.isnan(est) | self.use_stated, self.n_params_published, est)

    @cached_property
    def expert_params(self) -> np.ndarray:
        """Parameters of the routed experts (what expert parallelism splits), MTP's included."""
        mtp_moe = np.where(self.moe.L_moe > 0, self.mtp, 0.0)
        return (self.moe.L_moe + mtp_moe) * self.moe.routed_params

    @cached_property
    def active_block_params(self) -> np.ndarray:
        """Block parameters one token's matmuls touch (``K`` experts x the capacity factor)."""
        dense_ffn = (self.L_ffn - self.moe.L_moe) * self.mlp_params
        return (self.L_attn * self.attention_params + self.L_mamba * self.mamba_params + dense_ffn
                + self.L_linear * self.linear_attention_params + self.moe.L_moe * self.moe.active_params
                + self._mtp_blocks[1])

    @cached_property
    def matmul_params(self) -> np.ndarray:
        """Parameters one token's matmuls touch: active blocks, routers, LM head (not the embedding)."""
        N = self.active_block_params + self.head_params
        return np.where(np.isnan(N) | self.use_stated, self.n_params_published, N)

    @cached_property
    def head_params(self) -> np.ndarray:
        """LM-head and router parameters one token touches (they stay in BF16)."""
        routers = (self.moe.L_moe + np.where(self.moe.L_moe > 0, self.mtp, 0.0)) * self.moe.router_params
        return self.V * self.d * (1.0 + self.mtp) + routers

    # FLOPs per token -------------------------------------------------------------------
    def attention_context(self, causal: bool) -> np.ndarray:
        """Mean tokens each query attends to, summed over the attention layers (MTP's included)."""
        s, w = np.fmin(self.s, self.sample), self.window  # a packed sample is the span attention sees
        full = s / 2.0 if causal else s
        windowed = np.where(w < s, w - w * (w - 1.0) / (2.0 * s), full) if causal else np.minimum(w, s)
        windowed = np.where(np.isnan(w), full, windowed)
        return (self.L_attn + self.mtp - self.L_window) * full + self.L_window * windowed

    def core_flops_per_token(self, causal: bool, passes: float = 3.0) -> np.ndarray:
        """FLOPs of the attention cores, Mamba scans and linear-attention cores per token (the part without weights):
        ``passes`` = 3 for training (forward + backward), 1 for a forward."""
        if causal not in self._core:  # one forward's worth, computed once per convention
            attention = 2.0 * self.attention_context(causal) * self.a * (self.h_qk + self.h_v)
            scans = MAMBA_SCAN_FLOPS * self.L_mamba * self.di * self.mamba_N
            self._core[causal] = attention + scans + self.L_linear * self.linear_attention_core_flops()
        return passes * self._core[causal]

    def flash_recompute_flops_per_token(self, causal: bool) -> np.ndarray:
        """FLOPs a FlashAttention backward adds per token by recomputing the scores ``QK^T``
        (its backward runs five matmuls where the forward runs two: ``2*ctx*a*h_qk`` per attention
        layer beyond the 2 x forward of the training convention; Dao 2023, FlashAttention-2)."""
        return 2.0 * self.attention_context(causal) * self.a * self.h_qk

    def flops_per_token(self, weight_passes, causal: bool = False, padded: bool = False,
                        forward: bool = False) -> dict[str, np.ndarray]:
        """Training FLOPs per token by where they run: ``linear``, ``head``, ``attention`` (see the
        module docstring); ``weight_passes``: 6 (training) or 4 (adapters: no weight gradients);
        ``padded``: the busiest expert rank's work (x the MoE capacity factor, :mod:`.moe`);
        ``forward``: one forward pass only (what recomputation repeats)."""
        weight_passes = 2.0 if forward else weight_passes
        padding = self.moe.L_moe * self.moe.padding_params if padded else 0.0
        linear = weight_passes * (self.active_block_params + padding)
        head = weight_passes * self.head_params
        stated = np.isnan(linear + head) | self.use_stated  # a stated size: 6N over the matmuls
        linear = np.where(stated, weight_passes * self.n_params_published, linear)
        head = np.where(stated, 0.0, head)
        return {"linear": linear, "head": head, "attention": self.core_flops_per_token(causal, 1.0 if forward else 3.0)}
