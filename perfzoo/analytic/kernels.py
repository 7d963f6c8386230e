"""Kernels priced by their shape: the fraction of a large GEMM's rate each kernel of a layout reaches.

A layout does not change a step's FLOPs, it changes the shapes they run at: TP narrows every
linear layer's GEMMs (``n`` or ``k`` divided by ``tp``), a micro-batch of one at CP 2 gives
``m = s/2`` rows, EP spreads the routed tokens over more, smaller expert GEMMs, CP shortens the
attention chunks. This module prices each shape against a large square GEMM (8,192 cubed: the rate
the calibration's compute factor stands for, :mod:`.calibration`), so the factor is fitted once
per precision and the shapes move the layouts apart.

* **A GEMM** (``m x k`` by ``k x n``) is cut into output tiles of :data:`TILE` (128 x 256, the tile
  cuBLAS and CUTLASS run large BF16 / FP8 GEMMs at on Hopper and Blackwell), spread over the
  device's SMs (compute units: the accelerator table's ``compute_units``) in waves. It pays for
  the padding of its edge tiles (tile quantization: ``m*n`` over the tiles' area), for its last,
  partly filled wave (``tiles / (waves * units)``), and for each tile's prologue and epilogue,
  a fixed time that costs :data:`K_OVERHEAD` elements of ``k`` at the BF16 rate (``k / (k + k0)``;
  twice as many at FP8, whose main loop runs twice as fast). ``k0 = 336`` is the fit of this
  formula to the 87 BF16 GEMMs timed on an H100 and an H200 (``docs/studies/kernel-rates-1128``:
  M 3,584-16,384, N 1,280-28,672, K 1,024-28,672; log error 0.080 against 0.101 for one rate; the
  15 FP8 GEMMs give 632, the doubling). A device without such units (TPU, Gaudi, CPU) pays no wave term.
* **A linear layer** in training runs three GEMMs of one FLOP count: forward ``(m, n, k)``, the
  input gradient ``(m, k, n)``, the weight gradient ``(k, n, m)``; a layer is priced at the
  time-weighted (harmonic) mean of its matrices' rates, each matrix weighted by its parameters.
  Per device and micro-batch ``m = b*s/cp`` tokens (sequence parallelism gathers the ``tp`` shards
  before the GEMM); attention's input projections ``(d, q+k+v / tp)``, its output ``(a*h_v / tp, d)``,
  the MLP's ``(d, (g-1)*f / tp)`` and ``(f / tp, d)``; the routed experts as one grouped GEMM over
  the ``E/ep`` local experts, each with ``ep*etp*m*K*CF / (tp*E)`` tokens (the EP group's tokens
  routed ``K`` times; :mod:`.moe`), ``n`` and ``k`` split by ``etp``; the LM head ``(d, V / tp)``.
* **The attention core** (a flash kernel: one thread block per 128 queries of a head of a sequence)
  pays the same wave term over ``b * a/tp * ceil(chunk/128)`` blocks and a per-block start cost of
  :data:`ATTENTION_S0` tokens: ``chunk / (chunk + 900)`` of its long-sequence rate (cuDNN's causal
  forward + backward on an H100 ran at 0.67 / 0.82 / 0.92 of its 64k rate at 2k / 4k / 8k tokens:
  ``docs/studies/kernel-rates-1128``), ``chunk = s``, and with context parallelism ``s / (2*cp)``: the
  ring's kernels run on the halves of the load-balanced causal split (Transformer Engine's p2p
  ``cp_comm_type``; torch's ring attention).

>>> import numpy as np
>>> eff = gemm_efficiency(np.array([8192.0, 8192.0, 8192.0]), np.array([8192.0, 4096.0, 8192.0]),
...                       np.array([8192.0, 8192.0, 1024.0]), units=np.array(132.0))
>>> [round(float(e), 3) for e in eff]  # the reference; half as wide (as many full waves); a short k
[1.0, 1.0, 0.784]
>>> round(float(attention_efficiency(np.array(2048.0), heads=np.array(32.0), batch=np.array(1.0),
...                                  units=np.array(132.0))), 3)  # 2048/2948 x 512 blocks in 528 slots
0.674
"""

from __future__ import annotations

import numpy as np

TILE = (128.0, 256.0)  # output tile (rows, columns) of large GEMMs (module docstring)
K_OVERHEAD = 336.0  # a tile's prologue and epilogue, in elements of k at the BF16 rate (fitted: module docstring)
ATTENTION_S0 = 900.0  # a flash kernel's start cost per query block, in tokens (measured: module docstring)
QUERY_BLOCK = 128.0  # queries per thread block of a flash kernel
REFERENCE = 8192.0  # the square GEMM the compute factor stands for


def _waves(tiles: np.ndarray, units: np.ndarray) -> np.ndarray:
    """The share of ``units`` x waves that ``tiles`` thread blocks fill (1 without units)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        filled = tiles / (np.ceil(tiles / units) * units)
    return np.where(np.isnan(units) | (units <= 0), 1.0, filled)


def _raw(m, n, k, units, k_scale, groups):
    tm, tn = TILE
    rows, cols = np.ceil(m / tm), np.ceil(n / tn)
    padding = (m * n) / (rows * tm * cols * tn)
    return padding * _waves(groups * rows * cols, units) * k / (k + K_OVERHEAD * k_scale)


def gemm_efficiency(m, n, k, units, k_scale=1.0, groups=1.0) -> np.ndarray:
    """The rate of ``groups`` GEMMs of ``(m x k) @ (k x n)`` run as one (a grouped GEMM), as a share of
    the 8,192-cubed GEMM's on the same device; ``k_scale``: the format's speed over BF16 (FP8: 2).

    >>> round(float(gemm_efficiency(np.array(16384.0), np.array(1536.0), np.array(4096.0), np.array(132.0))), 3)
    0.962
    """
    m, n, k = (np.maximum(np.asarray(x, dtype=float), 1.0) for x in (m, n, k))
    reference = _raw(REFERENCE, REFERENCE, REFERENCE, units, k_scale, 1.0)
    return _raw(m, n, k, units, k_scale, groups) / reference


def linear_efficiency(m, matrices, units, k_scale=1.0) -> np.ndarray:
    """The rate of a set of linear layers trained on ``m`` tokens, as a share of the reference GEMM's:
    ``matrices`` = ``[(k_in, n_out, count, groups, m_scale), ...]`` (``count`` x ``k_in*n_out``
    weighs a matrix's FLOPs; ``m_scale`` its tokens over ``m``); each matrix's forward,
    input-gradient and weight-gradient GEMMs, harmonically (module docstring)."""
    work, time = 0.0, 0.0
    for k_in, n_out, count, groups, m_scale in matrices:
        rows = m * m_scale
        w = np.nan_to_num(count * k_in * n_out)
        passes = (gemm_efficiency(rows, n_out, k_in, units, k_scale, groups),
                  gemm_efficiency(rows, k_in, n_out, units, k_scale, groups),
                  gemm_efficiency(k_in, n_out, rows, units, k_scale, groups))
        work = work + w
        time = time + w * sum(1.0 / np.maximum(e, 1e-6) for e in passes) / 3.0
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(time > 0, work / time, 1.0)


def attention_efficiency(chunk, heads, batch, units) -> np.ndarray:
    """A flash kernel's rate over ``chunk`` tokens per sequence, ``heads`` per device, ``batch``
    sequences, as a share of its long-sequence rate (module docstring)."""
    chunk = np.maximum(np.asarray(chunk, dtype=float), 1.0)
    blocks = batch * heads * np.ceil(chunk / QUERY_BLOCK)
    return _waves(blocks, units) * chunk / (chunk + ATTENTION_S0)


def shape_efficiency(cost) -> dict[str, np.ndarray]:
    """Per part of :meth:`perfzoo.analytic.llm.LLMCost.flops_parts` (``linear``, ``head``, ``attention``),
    the rate its kernels reach at the layout's shapes, as a share of the reference GEMM's (``cost``: an
    ``LLMCost``)."""
    sh, hw = cost.shape, cost.hw
    units = hw.units
    m = cost.b * sh.s / cost.cp
    tp, ep, etp = cost.tp, np.maximum(cost.ep, 1.0), np.maximum(cost.etp, 1.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        k_scale = np.where(cost.width < 2.0, hw.peak / hw.peak_bf16, 1.0)
        attn_out = sh.a * sh.h_v
        attn_in = sh.attention_params / sh.d - attn_out
        moe = sh.moe
        dense_ffn = sh.L_ffn - moe.L_moe
        shared = np.where(moe.is_moe, moe.fs, 0.0)
        local = np.maximum(moe.E / ep, 1.0)
        routed = ep * etp * moe.K * moe.capacity / (tp * np.maximum(moe.E, 1.0))
        experts = np.where(moe.is_moe, moe.L_moe * moe.K, 0.0)  # each token's FLOPs: K experts' worth
        mamba_in = np.where(sh.L_mamba > 0, (sh.mamba_params - sh.di * sh.d) / sh.d, 0.0)
        lin_out = sh.lin_nv * sh.lin_dv
        lin_in = np.where(sh.L_linear > 0, sh.linear_attention_params / sh.d - lin_out, 0.0)
        matrices = [
            (sh.d, attn_in / tp, sh.L_attn, 1.0, 1.0), (attn_out / tp, sh.d, sh.L_attn, 1.0, 1.0),
            (sh.d, (sh.g - 1.0) * sh.f / tp, dense_ffn, 1.0, 1.0), (sh.f / tp, sh.d, dense_ffn, 1.0, 1.0),
            (sh.d, (sh.g - 1.0) * shared / tp, moe.L_moe, 1.0, 1.0), (shared / tp, sh.d, moe.L_moe, 1.0, 1.0),
            (sh.d, (sh.g - 1.0) * moe.fe / etp, experts, local, routed), (moe.fe / etp, sh.d, experts, local, routed),
            (sh.d, mamba_in / tp, sh.L_mamba, 1.0, 1.0), (sh.di / tp, sh.d, sh.L_mamba, 1.0, 1.0),
            (sh.d, lin_in / tp, sh.L_linear, 1.0, 1.0), (lin_out / tp, sh.d, sh.L_linear, 1.0, 1.0),
        ]
        linear = linear_efficiency(m, matrices, units, k_scale)
        head = linear_efficiency(m, [(sh.d, sh.V / tp, 1.0, 1.0, 1.0)], units)
        chunk = np.where(cost.cp > 1, sh.s / (2.0 * cost.cp), sh.s)  # ring attention: the balanced halves
        attention = attention_efficiency(chunk, np.maximum(sh.a / tp, 1.0), cost.b, units)
    return {k: np.where(np.isfinite(v) & (v > 0), v, 1.0) for k, v in
            {"linear": linear, "head": head, "attention": attention}.items()}


__all__ = ["ATTENTION_S0", "K_OVERHEAD", "TILE", "attention_efficiency", "gemm_efficiency", "linear_efficiency",
           "shape_efficiency"]
