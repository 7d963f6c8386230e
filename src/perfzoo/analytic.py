"""Analytic performance estimates: what a config should cost, before anyone runs it.

Every function here is vectorised: it takes a flat frame (``config.*`` / ``hardware.*``
columns, as in ``Dataset.frame`` or ``Dataset.X``; the prefixes may also be left out) and
returns a :class:`pandas.Series` / :class:`pandas.DataFrame` aligned with it, or it takes one
config as a mapping and returns a float / dict. They are pure numpy, so scoring millions of
configurations during a search costs about a second. Unknown inputs give ``NaN`` (never an
exception): e.g. an accelerator missing from the accelerator table (:mod:`perfzoo.accelerators`,
which warns once naming it) has no peak FLOP/s, so its
ideal step time is ``NaN``; predictors treat those as missing values.

Conventions (the same in every function; the hand-worked examples are in
``tests/test_analytic.py``)
-----------------------------------------------------------------------------------------
LLM (decoder-only transformer; keys from ``docs/architecture.md``): ``L`` layers, width
``d``, FFN width ``f`` (default ``4d``), ``a`` heads, ``k`` KV heads (default ``a``),
vocabulary ``V`` (unknown -> 0: the embedding / LM head is left out), sequence ``s``,
global batch ``B`` sequences, micro batch ``b``; parallel degrees ``tp, pp, cp, dp``
(``dp`` defaults to ``n_gpus / (tp*pp*cp)``); ``m`` = micro-batches per step per pipeline
= ``grad_accum`` (default ``B / (b*dp)``).

* Parameters (biases and norms left out): per layer ``2d^2 + 2d^2*k/a`` (Q, O and the
  K, V projections) plus the MLP ``2*d*f`` (``3*d*f`` when gated, i.e. SwiGLU; gated is
  taken from ``config.gated_mlp`` or, when absent, assumed when ``f != 4d``); plus ``V*d``
  for the input embedding and ``V*d`` for the LM head unless ``config.tie_embeddings``.
* Training FLOPs per token (the PaLM / MosaicML / Megatron convention, no causal discount):
  ``6*N + 12*L*d*s``, where ``N = L*(block params) + V*d`` are the parameters that take
  part in matmuls (the embedding lookup is free, the LM head is not) and ``12*L*d*s``
  counts QK^T and AV (2 matmuls x 2 FLOP/MAC x 3 for forward+backward, ``s*d`` each).
* Recompute (hardware FLOPs): full activation checkpointing adds one forward,
  ``2*N + 4*L*d*s`` per token; selective adds the attention-core forward ``4*L*d*s``.
* FLOPs per device per step = ``B*s*flops_per_token(+recompute) / n_gpus`` (TP, PP, CP and
  DP split the work evenly; the pipeline bubble costs time, not FLOPs).
* Model state bytes per device (ZeRO paper accounting, Adam): mixed precision (bf16, fp16,
  fp8, fp4) holds 2 B params + 2 B grads + 12 B optimizer (fp32 master, m, v) per
  parameter; fp32 holds 4 + 4 + 8. TP and PP split the parameters (``N_total/(tp*pp)``);
  data-parallel sharding over ``D = dp*cp`` ranks divides: ``none``/``no_shard`` (DDP,
  ZeRO-0) nothing; ``zero1`` the optimizer; ``shard_grad_op`` (ZeRO-2) grads + optimizer;
  ``full_shard`` (ZeRO-3) all three; ``hybrid_shard`` all three over ``min(D, node)``.
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
  (forward and backward) + one reduce-scatter. TP (Megatron): 4 all-reduces of ``b*s*d``
  activations per layer per micro-batch (6 with full recompute). PP: each micro-batch's
  activation forward and its gradient backward, ``2*(pp-1)/pp*b*s*d`` per device. CP (ring
  attention): ``3*(cp-1)*2*b*(s/cp)*d*k/a`` per layer per micro-batch (K, V forward;
  K, V and their gradients backward). Gradients travel in the parameter dtype.
* Pipeline bubble fraction (1F1B / GPipe): ``(pp-1)/(m+pp-1)``; interleaved with ``vp``
  virtual stages ``(pp-1)/(vp*m+pp-1)``.
* Ideal step time: ``t_compute = flops_per_device_step / peak_flops[precision]``,
  each traffic over its link bandwidth (NVLink inside a node, the per-device network
  outside it); ``step = (t_compute + t_tp + t_cp)/(1 - bubble) + t_pp +
  max(0, t_dp - t_compute)`` (TP and CP traffic is on the critical path, DP/FSDP traffic
  overlaps with compute, only its excess shows). Throughput = ``B*s/step`` tokens/s.

Recommendation-model FSDP workload (the ``fsdp`` workload keys): see :func:`fsdp_estimate`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping, Optional, Union

import numpy as np
import pandas as pd

from perfzoo.accelerators import AcceleratorSpec
from perfzoo.accelerators import spec as accelerator_spec
from perfzoo.accelerators import table as accelerator_table

Frame = Union[pd.DataFrame, Mapping[str, Any]]

GIB = float(2**30)

# ----------------------------------------------------------------------------------------
# hardware: the accelerator table (perfzoo/data/accelerators.csv, perfzoo.accelerators)
# ----------------------------------------------------------------------------------------

HARDWARE: dict[str, AcceleratorSpec] = {s.name: s for _, s in accelerator_table()}


# ----------------------------------------------------------------------------------------
# normalising the vocabulary (lenient: published tables spell things many ways)
# ----------------------------------------------------------------------------------------


def _missing(v: Any) -> bool:
    return v is None or (isinstance(v, float) and np.isnan(v)) or v is pd.NA or (isinstance(v, str) and not v.strip())


def normalize_precision(v: Any) -> str:
    """Precision class: ``fp32``, ``bf16`` (also fp16 / amp), ``fp8`` (fp8, mxfp8), ``fp4``.

    Unknown or missing -> ``bf16`` (mixed precision, the usual GPU default).

    >>> [normalize_precision(x) for x in ["amp_bf16", "FP8 (Float8 linears) + BF16", "fp32", None]]
    ['bf16', 'fp8', 'fp32', 'bf16']
    """
    if _missing(v):
        return "bf16"
    s = str(v).lower()
    if "fp4" in s or "nvfp4" in s or "mxfp4" in s:
        return "fp4"
    if "fp8" in s or "float8" in s:
        return "fp8"
    if "bf16" in s or "bfloat16" in s or "fp16" in s or "float16" in s or "half" in s or "amp" in s:
        return "bf16"
    if "fp32" in s or "float32" in s or "tf32" in s:
        return "fp32"
    return "bf16"


def normalize_sharding(v: Any) -> str:
    """Data-parallel sharding: ``none`` (DDP / Megatron DP), ``no_shard``, ``zero1``,
    ``shard_grad_op`` (ZeRO-2), ``full_shard`` (ZeRO-3) or ``hybrid_shard``.

    Accepts FSDP names in any case, ZeRO stages (``0..3`` / ``'zero3'``) and FSDP2
    phrases (``'FSDP2 (dp_shard=8)'`` -> ``full_shard``). Missing -> ``none``.

    >>> [normalize_sharding(x) for x in ["FULL_SHARD", "SHARD_GRAD_OP", 2, "FSDP2", None]]
    ['full_shard', 'shard_grad_op', 'shard_grad_op', 'full_shard', 'none']
    """
    if _missing(v) or v is False:
        return "none"
    if isinstance(v, (int, np.integer, float)) and not isinstance(v, bool):
        return {0: "none", 1: "zero1", 2: "shard_grad_op", 3: "full_shard"}.get(int(v), "none")
    s = str(v).lower().replace("-", "_").replace(" ", "_")
    if "hybrid" in s or "hsdp" in s:
        return "hybrid_shard"
    if "grad_op" in s or "zero2" in s or "zero_2" in s or s == "2":
        return "shard_grad_op"
    if "no_shard" in s or "noshard" in s or "replicate" in s or s in ("ddp", "zero0", "0"):
        return "no_shard"
    if "zero1" in s or "zero_1" in s or s == "1":
        return "zero1"
    if "full" in s or "fsdp" in s or "zero3" in s or "zero_3" in s or s in ("true", "3"):
        return "full_shard"
    return "none"


def normalize_checkpointing(v: Any) -> str:
    """Activation checkpointing: ``none``, ``selective`` or ``full`` (``True`` -> full).

    >>> [normalize_checkpointing(x) for x in [True, False, "selective op", "full", None]]
    ['full', 'none', 'selective', 'full', 'none']
    """
    if _missing(v) or v is False:
        return "none"
    if v is True:
        return "full"
    s = str(v).lower()
    if "selective" in s:
        return "selective"
    if "full" in s or s in ("true", "1", "yes", "on"):
        return "full"
    return "none"


def _bool(v: Any) -> float:
    if _missing(v):
        return np.nan
    if isinstance(v, (bool, np.bool_)):
        return float(v)
    s = str(v).strip().lower()
    if s in ("true", "1", "yes", "on"):
        return 1.0
    if s in ("false", "0", "no", "off"):
        return 0.0
    return np.nan


# ----------------------------------------------------------------------------------------
# column access
# ----------------------------------------------------------------------------------------


def _as_frame(cfg: Frame) -> tuple[pd.DataFrame, bool]:
    if isinstance(cfg, pd.DataFrame):
        return cfg, False
    if isinstance(cfg, Mapping):
        return pd.DataFrame([dict(cfg)]), True
    raise TypeError(f"expected a DataFrame of configs or one config as a dict, got {type(cfg).__name__}")


def _column(df: pd.DataFrame, name: str) -> Optional[pd.Series]:
    for key in (f"config.{name}", name, f"hardware.{name}"):
        if key in df.columns:
            return df[key]
    return None


def _num(df: pd.DataFrame, name: str, default: float = np.nan) -> np.ndarray:
    """A numeric column as floats (a 0-d array when the column is absent: it broadcasts)."""
    col = _column(df, name)
    if col is None:
        return np.array(default, dtype=float)
    if col.dtype == bool:
        out = col.to_numpy(dtype=float)
    else:
        out = pd.to_numeric(col, errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    if not np.isnan(default):
        out = np.where(np.isnan(out), default, out)
    return out


PRECISIONS = ("fp32", "bf16", "fp8", "fp4")
CHECKPOINTING = ("none", "selective", "full")
SHARDINGS = ("none", "no_shard", "zero1", "shard_grad_op", "full_shard", "hybrid_shard")


def _coded(df: pd.DataFrame, name: str, normalise: Callable[[Any], str], vocab: tuple[str, ...]) -> np.ndarray:
    """A categorical column as small-int codes into ``vocab`` (normalised per distinct value)."""
    return _mapped(df, name, lambda v: vocab.index(normalise(v)), dtype=np.int8)


def _is(codes: np.ndarray, vocab: tuple[str, ...], *values: str) -> np.ndarray:
    """Mask of the rows whose code is one of ``values``."""
    mask = codes == vocab.index(values[0])
    for v in values[1:]:
        mask |= codes == vocab.index(v)
    return mask


def _mapped(df: pd.DataFrame, name: str, fn: Callable[[Any], Any], dtype=float) -> np.ndarray:
    """``fn`` applied to each distinct value of a column (fast on millions of rows)."""
    col = _column(df, name)
    if col is None:
        return np.array(fn(None), dtype=dtype)  # 0-d: broadcasts
    codes, uniques = pd.factorize(col, use_na_sentinel=True)
    table = np.array([fn(u) for u in uniques] + [fn(None)], dtype=dtype)
    return table[codes]  # code -1 picks the last entry: fn(None)


def _full(values: Any, n: int) -> np.ndarray:
    """``values`` (an array or a broadcastable 0-d array) as a fresh float array of length ``n``."""
    values = np.asarray(values, dtype=float)
    return values.copy() if values.shape == (n,) else np.array(np.broadcast_to(values, (n,)), dtype=float)


def _wrap(values: np.ndarray, df: pd.DataFrame, scalar: bool):
    values = _full(values, len(df))
    return float(values[0]) if scalar else pd.Series(values, index=df.index)


def _wrap_frame(cols: dict[str, np.ndarray], df: pd.DataFrame, scalar: bool):
    cols = {k: _full(v, len(df)) for k, v in cols.items()}
    if scalar:
        return {k: float(v[0]) for k, v in cols.items()}
    return pd.DataFrame(cols, index=df.index)


# ----------------------------------------------------------------------------------------
# the LLM inputs, resolved once
# ----------------------------------------------------------------------------------------

_FP32_BYTES = (4.0, 4.0, 8.0, 4.0)  # params, grads, optimizer, activations
_MIXED = (2.0, 2.0, 12.0, 2.0)


class _LLM:
    """The LLM config as float arrays, defaults applied (see the module docstring)."""

    def __init__(self, df: pd.DataFrame):
        n = len(df)
        self.n = n
        self.L = _num(df, "n_layers")
        self.d = _num(df, "hidden_dim")
        self.a = _num(df, "n_heads")
        k = _num(df, "n_kv_heads")
        self.k = np.where(np.isnan(k), self.a, k)
        f = _num(df, "ffn_dim")
        self.f = np.where(np.isnan(f), 4.0 * self.d, f)
        self.V = _num(df, "vocab_size", 0.0)
        self.s = _num(df, "seq_len")
        gated = _mapped(df, "gated_mlp", _bool, dtype=float)
        self.gated = np.where(np.isnan(gated), (self.f != 4.0 * self.d).astype(float), gated)
        tied = _mapped(df, "tie_embeddings", _bool, dtype=float)
        self.tied = np.where(np.isnan(tied), 0.0, tied)
        self.n_params_published = _num(df, "n_params")

        count = _num(df, "accelerator_count")
        n_gpus = _num(df, "n_gpus")
        self.n_gpus = np.where(np.isnan(n_gpus), count, n_gpus)
        self.tp = _num(df, "tp", 1.0)
        self.pp = _num(df, "pp", 1.0)
        self.cp = _num(df, "cp", 1.0)
        self.vp = _num(df, "vp", 1.0)
        dp = _num(df, "dp")
        with np.errstate(divide="ignore", invalid="ignore"):
            self.dp = np.where(np.isnan(dp), self.n_gpus / (self.tp * self.pp * self.cp), dp)
            self.n_gpus = np.where(np.isnan(self.n_gpus), self.dp * self.tp * self.pp * self.cp, self.n_gpus)
            B = _num(df, "global_batch_size")
            b = _num(df, "micro_batch_size")
            m = _num(df, "grad_accum")
            m = np.where(np.isnan(m), B / (b * self.dp), m)
            self.m = np.maximum(m, 1.0)
            b = np.where(np.isnan(b), B / (self.m * self.dp), b)
            self.B = np.where(np.isnan(B), b * self.m * self.dp, B)
            self.b = b

        self.precision = _coded(df, "precision", normalize_precision, PRECISIONS)
        self.ac = _coded(df, "activation_checkpointing", normalize_checkpointing, CHECKPOINTING)
        fsdp = _column(df, "fsdp")
        key = "zero_stage" if fsdp is None and _column(df, "zero_stage") is not None else "fsdp"
        self.sharding = _coded(df, key, normalize_sharding, SHARDINGS)
        sp = _mapped(df, "sequence_parallel", _bool, dtype=float)
        self.sp = np.where(np.isnan(sp), 0.0, sp)
        fa = _mapped(df, "flash_attention", _bool, dtype=float)
        self.flash = np.where(np.isnan(fa), 0.0, fa)

        is32 = _is(self.precision, PRECISIONS, "fp32")
        self.p_bytes, self.g_bytes, self.o_bytes, self.act_bytes = (
            np.where(is32, x32, xm) for x32, xm in zip(_FP32_BYTES, _MIXED))

        self.hw = _hardware(df, self.precision, self.n_gpus)

    # parameters (computed once per frame) -------------------------------------------
    def block_params(self) -> np.ndarray:
        if not hasattr(self, "_block"):
            d, a, k, f = self.d, self.a, self.k, self.f
            attn = 2.0 * d * d + 2.0 * d * (d * k / a)
            mlp = np.where(self.gated > 0, 3.0, 2.0) * d * f
            self._block = attn + mlp
        return self._block

    def matmul_params(self) -> np.ndarray:
        if not hasattr(self, "_matmul"):
            N = self.L * self.block_params() + self.V * self.d
            self._matmul = np.where(np.isnan(N), self.n_params_published, N)
        return self._matmul

    def total_params(self) -> np.ndarray:
        if not hasattr(self, "_total"):
            est = self.L * self.block_params() + self.V * self.d * (2.0 - self.tied)
            self._total = np.where(np.isnan(est), self.n_params_published, est)
        return self._total

    # FLOPs -----------------------------------------------------------------------------
    def flops_per_token(self) -> np.ndarray:
        N = self.matmul_params()
        return 6.0 * N + 12.0 * self.L * self.d * self.s

    def recompute_flops_per_token(self) -> np.ndarray:
        N = self.matmul_params()
        attn_fwd = 4.0 * self.L * self.d * self.s
        full = 2.0 * N + attn_fwd
        return np.select([_is(self.ac, CHECKPOINTING, "full"), _is(self.ac, CHECKPOINTING, "selective")],
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
        return np.where(_is(self.sharding, SHARDINGS, "hybrid_shard"), np.minimum(D, self.hw.node_size), D)

    def state_bytes(self) -> dict[str, np.ndarray]:
        N_local = self.total_params() / (self.tp * self.pp)
        D = np.maximum(self.shard_group(), 1.0)
        s = self.sharding
        full = _is(s, SHARDINGS, "full_shard", "hybrid_shard")
        p_div = np.where(full, D, 1.0)
        g_div = np.where(full | _is(s, SHARDINGS, "shard_grad_op"), D, 1.0)
        o_div = np.where(full | _is(s, SHARDINGS, "shard_grad_op", "zero1"), D, 1.0)
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
        per_layer = np.select([_is(self.ac, CHECKPOINTING, "full"), _is(self.ac, CHECKPOINTING, "selective")],
                              [full, selective], none)
        layers_held = self.L / self.pp * np.minimum(self.pp, self.m)
        return per_layer * layers_held * self.act_bytes / 2.0

    # communication ---------------------------------------------------------------------
    def comm_bytes(self) -> dict[str, np.ndarray]:
        N_local = self.total_params() / (self.tp * self.pp)
        D = self.dp * self.cp
        ring = np.where(D > 1, (D - 1.0) / np.maximum(D, 1.0), 0.0)
        s = self.sharding
        full = _is(s, SHARDINGS, "full_shard", "hybrid_shard")
        dp = np.select(
            [full, _is(s, SHARDINGS, "shard_grad_op")],
            [self.m * ring * N_local * (2.0 * self.p_bytes + self.g_bytes),
             self.m * ring * N_local * (self.p_bytes + self.g_bytes)],
            2.0 * ring * N_local * self.g_bytes,
        )
        t = self.tp
        act = self.b * self.s / self.cp * self.d * self.act_bytes  # one micro-batch's activations
        n_ar = np.where(_is(self.ac, CHECKPOINTING, "full"), 6.0, 4.0)
        tp = np.where(t > 1, self.m * self.L / self.pp * n_ar * 2.0 * (t - 1.0) / t * act, 0.0)
        pp = np.where(self.pp > 1, self.m * 2.0 * (self.pp - 1.0) / self.pp * act, 0.0)
        kv = 2.0 * self.b * (self.s / self.cp) * self.d * self.k / self.a * self.act_bytes
        cp = np.where(self.cp > 1, self.m * self.L / self.pp * 3.0 * (self.cp - 1.0) * kv, 0.0)
        return {"comm_dp_bytes": dp, "comm_tp_bytes": tp, "comm_pp_bytes": pp, "comm_cp_bytes": cp}

    def bubble(self) -> np.ndarray:
        pp = self.pp
        return np.where(pp > 1, (pp - 1.0) / (self.vp * self.m + pp - 1.0), 0.0)

    def step_time(self, comm: Optional[dict[str, np.ndarray]] = None) -> dict[str, np.ndarray]:
        comm = comm if comm is not None else self.comm_bytes()
        hw = self.hw
        t_compute = self.flops_per_device_step() / hw.peak
        node = hw.node_size
        tp_bw = np.where(self.tp <= node, hw.intra_bw, hw.inter_bw)
        cp_bw = np.where(self.tp * self.cp <= node, hw.intra_bw, hw.inter_bw)
        big_bw = np.where(self.n_gpus <= node, hw.intra_bw, hw.inter_bw)
        t_tp = comm["comm_tp_bytes"] / tp_bw
        t_cp = comm["comm_cp_bytes"] / cp_bw
        t_pp = comm["comm_pp_bytes"] / big_bw
        t_dp = comm["comm_dp_bytes"] / big_bw
        step = (t_compute + t_tp + t_cp) / (1.0 - self.bubble()) + t_pp + np.maximum(0.0, t_dp - t_compute)
        return {"compute_time_s": t_compute, "comm_time_s": t_tp + t_cp + t_pp + t_dp, "step_time_s": step}


@dataclass
class _HW:
    peak: np.ndarray
    memory_gib: np.ndarray
    intra_bw: np.ndarray
    inter_bw: np.ndarray
    node_size: np.ndarray
    known: np.ndarray


def _hardware(df: pd.DataFrame, precision: np.ndarray, n_devices: np.ndarray) -> _HW:
    """Per-row device figures, looked up once per distinct accelerator string."""
    col = _column(df, "accelerator")
    if col is None:
        codes, uniques = np.array(-1), []
    else:
        codes, uniques = pd.factorize(col, use_na_sentinel=True)
    specs = [accelerator_spec(u) for u in uniques] + [None]  # code -1 -> None
    classes = PRECISIONS
    peak_t = np.full((len(specs), len(classes)), np.nan)
    for i, spec in enumerate(specs):
        if spec is None:
            continue
        for j, cls in enumerate(classes):
            peak_t[i, j] = spec.flops(cls) or np.nan

    attrs = np.array([[np.nan] * 6 if s is None else
                      [s.memory_gib, s.intra_bw, s.inter_bw, float(s.node_size), float(s.name == "cpu"), 1.0]
                      for s in specs], dtype=float)
    if len(specs) == 1:  # no known accelerator in the frame: constants, no per-row work
        mem, intra, inter, node, cpu, known = (np.array(v) for v in attrs[0])
    else:
        mem, intra, inter, node, cpu, known = attrs[codes].T
    cpu = cpu == 1.0
    known = known == 1.0
    peak = peak_t[codes, precision]  # precision: codes into PRECISIONS (= classes)
    # the job's own figures win where given
    mem_given = _num(df, "accelerator_memory_gib")
    mem = np.where(np.isnan(mem_given), mem, mem_given)
    nodes = _num(df, "nodes")
    count = _num(df, "accelerator_count")
    with np.errstate(divide="ignore", invalid="ignore"):
        per_node = count / nodes
    # CPU ranks: a "node" is one machine (all ranks unless the record says otherwise);
    # GPUs: the table's node size unless the job says it ran on several smaller nodes
    devices = np.where(np.isnan(n_devices), 1.0, n_devices)
    node = np.where(cpu, np.where(np.isnan(per_node), devices, per_node), node)
    multi = ~cpu & ~np.isnan(per_node) & (nodes > 1)
    node = np.where(multi, np.minimum(node, per_node), node)
    return _HW(peak, mem, intra, inter, node, known)


# ----------------------------------------------------------------------------------------
# public LLM functions
# ----------------------------------------------------------------------------------------


def param_count(cfg: Frame):
    """Total parameters (blocks + embedding + LM head); ``config.n_params`` where the shape is unknown.

    >>> param_count({"n_layers": 24, "hidden_dim": 1024, "n_heads": 16})
    301989888.0
    """
    df, scalar = _as_frame(cfg)
    return _wrap(_LLM(df).total_params(), df, scalar)


def flops_per_token(cfg: Frame, recompute: bool = False):
    """Training FLOPs per token, ``6N + 12*L*d*s`` (+ recompute when ``recompute=True``).

    >>> flops_per_token({"n_layers": 24, "hidden_dim": 1024, "n_heads": 16, "seq_len": 1024})
    2113929216.0
    """
    df, scalar = _as_frame(cfg)
    m = _LLM(df)
    out = m.flops_per_token() + (m.recompute_flops_per_token() if recompute else 0.0)
    return _wrap(out, df, scalar)


def flops_per_step(cfg: Frame, recompute: bool = True):
    """Training FLOPs of one optimizer step, all devices together (``B*s`` tokens)."""
    df, scalar = _as_frame(cfg)
    return _wrap(_LLM(df).flops_per_step(recompute), df, scalar)


def flops_per_device_step(cfg: Frame):
    """Hardware FLOPs (recompute included) one device performs per optimizer step."""
    df, scalar = _as_frame(cfg)
    return _wrap(_LLM(df).flops_per_device_step(), df, scalar)


def pipeline_bubble(cfg: Frame):
    """Idle fraction of a pipeline step, ``(pp-1)/(vp*m + pp-1)`` (0 without PP).

    >>> pipeline_bubble({"pp": 4, "grad_accum": 8})
    0.2727272727272727
    """
    df, scalar = _as_frame(cfg)
    return _wrap(_LLM(df).bubble(), df, scalar)


def state_bytes_per_device(cfg: Frame):
    """Bytes of parameters, gradients and optimizer state per device (columns
    ``param_bytes``, ``grad_bytes``, ``optimizer_bytes``) under the config's sharding."""
    df, scalar = _as_frame(cfg)
    return _wrap_frame(_LLM(df).state_bytes(), df, scalar)


def activation_bytes_per_device(cfg: Frame):
    """Activation memory per device (Korthikanti et al. 2022; see the module docstring)."""
    df, scalar = _as_frame(cfg)
    return _wrap(_LLM(df).activation_bytes(), df, scalar)


def comm_bytes_per_device(cfg: Frame):
    """Bytes each device sends per optimizer step: ``comm_dp_bytes`` (DDP all-reduce or
    FSDP all-gather + reduce-scatter), ``comm_tp_bytes``, ``comm_pp_bytes``, ``comm_cp_bytes``."""
    df, scalar = _as_frame(cfg)
    return _wrap_frame(_LLM(df).comm_bytes(), df, scalar)


def ideal_step_time(cfg: Frame):
    """Ideal seconds per optimizer step from peak FLOP/s and link bandwidths (NaN for unknown hardware)."""
    df, scalar = _as_frame(cfg)
    return _wrap(_LLM(df).step_time()["step_time_s"], df, scalar)


def throughput(cfg: Frame, per_device: bool = False):
    """Analytic throughput: tokens/s (LLM) or queries/s (fsdp workload), global or per device."""
    est = estimate(cfg)
    key = "throughput_per_device" if per_device else "throughput"
    return est[key]


# ----------------------------------------------------------------------------------------
# the recommendation-model FSDP workload
# ----------------------------------------------------------------------------------------

N_SHARD_LAYERS = 11


def _shard_code(v: Any) -> float:
    s = normalize_sharding(v)
    return {"no_shard": 0.0, "none": 0.0, "zero1": 0.0, "shard_grad_op": 1.0, "full_shard": 2.0, "hybrid_shard": 2.0}[s] if not _missing(v) else np.nan


def fsdp_estimate(cfg: Frame):
    """Estimates for the recommendation-model FSDP workload (keys of ``docs/architecture.md``).

    Model assumed (override with ``config.params_per_layer``): ``n_layers`` dense layers,
    layer 0 maps the concatenated embeddings (``n_tables*emb_dim``) to ``width``, the others
    ``width -> width``, with bias: ``P_0 = n_tables*emb_dim*width + width``,
    ``P_i = width^2 + width``. Embedding tables (``n_tables*rows_per_table*emb_dim``) are
    replicated and all-reduced like ``NO_SHARD``. Layer ``i`` uses ``shard_{i:02d}``
    (missing -> ``FULL_SHARD``); layers beyond ``shard_10`` use ``shard_10``.
    ``W = world_size``; bytes per parameter as for LLMs (fp32 4/4/8, bf16 2/2/12).

    Per layer and rank: memory ``NO_SHARD`` ``P*(p+g+o)``; ``SHARD_GRAD_OP`` ``P*p + P*(g+o)/W``
    (unsharded parameters stay from forward to backward); ``FULL_SHARD`` ``P*(p+g+o)/W``.
    Communication ``NO_SHARD`` ``2(W-1)/W*P*g`` (all-reduce); ``SHARD_GRAD_OP``
    ``(W-1)/W*P*(p+g)`` (one all-gather, one reduce-scatter); ``FULL_SHARD``
    ``(W-1)/W*P*(2p+g)`` (all-gather in forward and again in backward). Activations
    ``2*local_batch*width*act_bytes`` per layer plus the embedding output. Compute
    ``6*P_dense*local_batch`` FLOPs per rank per step; the step is compute + communication
    (no overlap assumed: gloo on CPU overlaps little). Throughput = ``local_batch*W/step``
    queries/s.

    Returns columns ``n_params``, ``dense_params``, ``flops_per_device_step``,
    ``param_bytes``, ``grad_bytes``, ``optimizer_bytes``, ``activation_bytes``,
    ``memory_bytes``, ``memory_fraction`` (of ``memory_budget_gib``, else of the device
    memory), ``comm_dp_bytes``, ``n_full_shard``, ``n_shard_grad_op``, ``n_no_shard``,
    ``compute_time_s``, ``comm_time_s``, ``step_time_s``, ``throughput``,
    ``throughput_per_device``.
    """
    df, scalar = _as_frame(cfg)
    return _wrap_frame(_fsdp_cols(df), df, scalar)


def _fsdp_cols(df: pd.DataFrame) -> dict[str, np.ndarray]:
    n = len(df)
    L = _num(df, "n_layers", float(N_SHARD_LAYERS))
    w = _num(df, "width")
    T = _num(df, "n_tables", 0.0)
    R = _num(df, "rows_per_table", 0.0)
    e = _num(df, "emb_dim", 0.0)
    lb = _num(df, "local_batch")
    W = _num(df, "world_size")
    W = np.where(np.isnan(W), _num(df, "accelerator_count"), W)
    W = np.where(np.isnan(W), _num(df, "n_gpus"), W)
    budget = _num(df, "memory_budget_gib")
    precision = _coded(df, "precision", lambda v: "fp32" if _missing(v) else normalize_precision(v), PRECISIONS)
    is32 = _is(precision, PRECISIONS, "fp32")
    p_b, g_b, o_b, a_b = (np.where(is32, x32, xm) for x32, xm in zip(_FP32_BYTES, _MIXED))
    ppl = _num(df, "params_per_layer")

    in0 = np.where(T * e > 0, T * e, w)
    ring = np.where(W > 1, (W - 1.0) / np.maximum(W, 1.0), 0.0)
    dense = np.zeros(n)
    param_b = np.zeros(n)
    grad_b = np.zeros(n)
    opt_b = np.zeros(n)
    comm = np.zeros(n)
    counts = np.zeros((3, n))
    n_max = int(np.nanmax(L)) if n and np.isfinite(np.nanmax(L)) else N_SHARD_LAYERS
    codes = [_mapped(df, f"shard_{i:02d}", _shard_code, dtype=float) for i in range(N_SHARD_LAYERS)]
    last = codes[-1]
    for i in range(n_max):
        active = i < L
        P = np.where(i == 0, in0 * w + w, w * w + w)
        P = np.where(np.isnan(ppl), P, ppl)
        P = np.where(active, P, 0.0)
        c = codes[i] if i < N_SHARD_LAYERS else last
        c = np.where(np.isnan(c), 2.0, c)  # missing strategy -> FULL_SHARD
        for j in range(3):
            counts[j] += active & (c == j)
        dense += P
        full_div = np.where(c == 2, W, 1.0)
        grad_div = np.where(c >= 1, W, 1.0)
        param_b += P * p_b / full_div
        grad_b += P * g_b / grad_div
        opt_b += P * o_b / grad_div
        comm += np.select([c == 2, c == 1], [ring * P * (2 * p_b + g_b), ring * P * (p_b + g_b)], 2.0 * ring * P * g_b)
    emb = T * R * e
    param_b += emb * p_b
    grad_b += emb * g_b
    opt_b += emb * o_b
    comm += 2.0 * ring * emb * g_b
    act = (2.0 * lb * w * L + lb * T * e) * a_b
    mem = param_b + grad_b + opt_b + act
    hw = _hardware(df, precision, W)
    cap = np.where(np.isnan(budget), hw.memory_gib, budget) * GIB
    flops = 6.0 * dense * lb
    t_compute = flops / hw.peak
    bw = np.where(W <= hw.node_size, hw.intra_bw, hw.inter_bw)
    t_comm = comm / bw
    step = t_compute + t_comm
    with np.errstate(divide="ignore", invalid="ignore"):
        qps = lb * W / step
        return {
            "n_params": dense + emb,
            "dense_params": dense,
            "flops_per_device_step": flops,
            "param_bytes": param_b,
            "grad_bytes": grad_b,
            "optimizer_bytes": opt_b,
            "activation_bytes": act,
            "memory_bytes": mem,
            "memory_fraction": mem / cap,
            "comm_dp_bytes": comm,
            "n_full_shard": counts[2],
            "n_shard_grad_op": counts[1],
            "n_no_shard": counts[0],
            "compute_time_s": t_compute,
            "comm_time_s": t_comm,
            "step_time_s": step,
            "throughput": qps,
            "throughput_per_device": qps / W,
        }


# ----------------------------------------------------------------------------------------
# everything at once
# ----------------------------------------------------------------------------------------

ESTIMATE_COLUMNS = (
    "n_params", "flops_per_token", "tokens_per_step", "flops_per_device_step", "param_bytes",
    "grad_bytes", "optimizer_bytes", "activation_bytes", "memory_bytes", "memory_fraction",
    "comm_dp_bytes", "comm_tp_bytes", "comm_pp_bytes", "comm_cp_bytes", "comm_bytes",
    "bubble", "compute_time_s", "comm_time_s", "step_time_s", "throughput", "throughput_per_device",
)


def _llm_cols(df: pd.DataFrame) -> dict[str, np.ndarray]:
    m = _LLM(df)
    with np.errstate(divide="ignore", invalid="ignore"):
        state = m.state_bytes()
        act = m.activation_bytes()
        comm = m.comm_bytes()
        times = m.step_time(comm)
        mem = state["param_bytes"] + state["grad_bytes"] + state["optimizer_bytes"] + act
        tokens = m.tokens_per_step()
        tput = tokens / times["step_time_s"]
        return {
            "n_params": m.total_params(),
            "flops_per_token": m.flops_per_token(),
            "tokens_per_step": tokens,
            "flops_per_device_step": m.flops_per_device_step(),
            **state,
            "activation_bytes": act,
            "memory_bytes": mem,
            "memory_fraction": mem / (m.hw.memory_gib * GIB),
            **comm,
            "comm_bytes": comm["comm_dp_bytes"] + comm["comm_tp_bytes"] + comm["comm_pp_bytes"] + comm["comm_cp_bytes"],
            "bubble": m.bubble(),
            **times,
            "throughput": tput,
            "throughput_per_device": tput / m.n_gpus,
        }


def estimate(cfg: Frame):
    """All analytic estimates as columns (:data:`ESTIMATE_COLUMNS`), one row per config.

    Rows with a ``hidden_dim`` get the LLM estimates, rows with a ``width`` the
    recommendation-model (``fsdp`` workload) estimates; the rest are ``NaN``. Throughput is
    tokens/s for LLM rows and queries/s for fsdp rows (a frame mixes workloads only if its
    target does). Columns that do not apply (e.g. ``comm_tp_bytes`` for fsdp rows) are ``0``
    or ``NaN``.

    >>> est = estimate({"n_layers": 24, "hidden_dim": 1024, "n_heads": 16, "seq_len": 1024,
    ...                 "global_batch_size": 16, "micro_batch_size": 4, "n_gpus": 4, "tp": 2,
    ...                 "dp": 2, "pp": 1, "accelerator": "A100-80GB"})
    >>> round(est["throughput"]) > 0
    True
    """
    df, scalar = _as_frame(cfg)
    return _wrap_frame(estimate_arrays(df), df, scalar)


def estimate_arrays(df: pd.DataFrame) -> dict[str, np.ndarray]:
    """:func:`estimate` as a dict of numpy arrays (no DataFrame built: the fast path for features)."""
    n = len(df)
    llm = np.broadcast_to(~np.isnan(_num(df, "hidden_dim")), (n,))
    fsdp = ~llm & np.broadcast_to(~np.isnan(_num(df, "width")), (n,))
    if llm.all() and n:
        return {k: _full(v, n) for k, v in _llm_cols(df).items()}
    if fsdp.all() and n:
        cols = {k: _full(cols_v, n) for k, cols_v in _fsdp_cols(df).items()}
        out = {c: cols.get(c, np.full(n, np.nan)) for c in ESTIMATE_COLUMNS}
        for k in ("comm_tp_bytes", "comm_pp_bytes", "comm_cp_bytes", "bubble"):
            out[k] = np.zeros(n)
        out["comm_bytes"] = cols["comm_dp_bytes"].copy()
        return out
    out = {c: np.full(n, np.nan) for c in ESTIMATE_COLUMNS}
    if llm.any():
        cols = _llm_cols(df.loc[llm])
        for k, v in cols.items():
            out[k][llm] = v
    if fsdp.any():
        cols = _fsdp_cols(df.loc[fsdp])
        for k in ESTIMATE_COLUMNS:
            if k in cols:
                out[k][fsdp] = cols[k]
        for k in ("comm_tp_bytes", "comm_pp_bytes", "comm_cp_bytes", "bubble"):
            out[k][fsdp] = 0.0
        out["comm_bytes"][fsdp] = cols["comm_dp_bytes"]
    return out
