"""The cost model of the recommendation-model FSDP workload (``fsdp``; keys of
``docs/architecture.md``): per-layer sharding, local batch and a memory budget.

:func:`fsdp_estimate` is the model with its own columns; :func:`cost` the same as the columns
every cost model gives (``analytic.ESTIMATE_COLUMNS``), :func:`claims` the rows it prices.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from harness.workloads.fsdp_shapes import MLP_MULT
from perfzoo.analytic._frame import GIB, Frame, as_frame, broadcast, coded, is_code, mapped, num, wrap_frame
from perfzoo.analytic.estimates import ESTIMATE_COLUMNS
from perfzoo.analytic.hardware import device_figures, link_bandwidth
from perfzoo.analytic.llm import FP32_BYTES, MIXED_BYTES
from perfzoo.records.vocabulary import PRECISIONS, is_missing, normalize_precision, normalize_sharding

N_SHARD_LAYERS = 11
# the estimate columns the fsdp workload does not have (no tensor, pipeline, context or expert parallelism)
_NOT_FSDP = ("comm_tp_bytes", "comm_pp_bytes", "comm_cp_bytes", "comm_ep_bytes", "bubble", "tp_time_s",
             "cp_time_s", "ep_time_s", "pp_time_s")


_STRATEGY = {"no_shard": 0, "none": 0, "zero1": 0, "shard_grad_op": 1, "full_shard": 2, "hybrid_shard": 2}


def _shard_code(v: Any) -> int:
    """A layer's strategy: 0 NO_SHARD, 1 SHARD_GRAD_OP, 2 FULL_SHARD (also where none is given)."""
    return 2 if is_missing(v) else _STRATEGY[normalize_sharding(v)]


def fsdp_estimate(cfg: Frame):
    """Estimates for the recommendation-model FSDP workload (keys of ``docs/architecture.md``).

    Model assumed (override with ``config.params_per_layer``): ``n_layers`` dense layers,
    layer 0 maps the concatenated embeddings (``n_tables*emb_dim``) to ``width``, the others
    ``width -> width``, with bias: ``P_0 = n_tables*emb_dim*width + width``,
    ``P_i = width^2 + width``; a tower (``width_00``..: v2, v3) has the harness ``TowerLayer``'s
    parameters per layer (:func:`harness.workloads.fsdp_shapes.tower_layer_params`). Embedding tables (``n_tables*rows_per_table*emb_dim``) are
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
    ``memory_bytes``, ``memory_fraction`` (of ``memory_budget_gib`` or ``tensor_budget_mib``, else of the device
    memory), ``comm_dp_bytes``, ``n_full_shard``, ``n_shard_grad_op``, ``n_no_shard``,
    ``compute_time_s``, ``comm_time_s``, ``step_time_s``, ``throughput``,
    ``throughput_per_device``.
    """
    df, scalar = as_frame(cfg)
    return wrap_frame(fsdp_columns(df), df, scalar)


def fsdp_columns(df: pd.DataFrame) -> dict[str, np.ndarray]:
    n = len(df)
    L = num(df, "n_layers", float(N_SHARD_LAYERS))
    w = num(df, "width")
    T = num(df, "n_tables", 0.0)
    R = num(df, "rows_per_table", 0.0)
    e = num(df, "emb_dim", 0.0)
    lb = num(df, "local_batch")
    W = num(df, "world_size")
    W = np.where(np.isnan(W), num(df, "accelerator_count"), W)
    W = np.where(np.isnan(W), num(df, "n_gpus"), W)
    budget = num(df, "memory_budget_gib")
    budget = np.where(np.isnan(budget), num(df, "tensor_budget_mib") / 1024.0, budget)
    precision = coded(df, "precision", lambda v: "fp32" if is_missing(v) else normalize_precision(v), PRECISIONS)
    is32 = is_code(precision, PRECISIONS, "fp32")
    p_b, g_b, o_b, a_b = (np.where(is32, x32, xm) for x32, xm in zip(FP32_BYTES, MIXED_BYTES))
    ppl = num(df, "params_per_layer")

    in0 = np.where(T * e > 0, T * e, w)
    ring = np.where(W > 1, (W - 1.0) / np.maximum(W, 1.0), 0.0)
    n_max = int(np.nanmax(L)) if n and np.isfinite(np.nanmax(L)) else N_SHARD_LAYERS
    codes = [mapped(df, f"shard_{i:02d}", _shard_code, dtype=np.int8) for i in range(N_SHARD_LAYERS)]
    sizes, strategy = [], np.empty((n_max, n), dtype=np.int8)  # per layer: parameters, code (3: no layer)
    w_in = w
    for i in range(n_max):
        active = i < L
        P = np.where(i == 0, in0 * w + w, w * w + w)
        w_out = num(df, f"width_{i:02d}")  # a tower of differing widths: harness TowerLayer's arithmetic
        tower = 2 * w_in + MLP_MULT * w_out * (w_in + 1 + w_out) + w_out + np.where(w_in != w_out, w_in * w_out, 0.0)
        P = np.where(np.isnan(w_out), P, tower)
        w_in = np.where(np.isnan(w_out), w, w_out)
        sizes.append(np.where(np.isnan(ppl), P, ppl))
        c = codes[min(i, N_SHARD_LAYERS - 1)]
        strategy[i] = c if np.all(active) else np.where(active, c, 3)
    # parameters and layer count per strategy (rows of `by`, `counts`): a matrix product when every
    # row has the same layer sizes (a search space), else a sum
    m = 1 if all(np.size(P) == 1 for P in sizes) else n
    sizes = np.array([np.broadcast_to(P, (m,)) for P in sizes], dtype=float).reshape(n_max, m)
    by, counts = np.zeros((3, n)), np.zeros((3, n))
    for j in range(3):
        hit = strategy == j
        counts[j] = hit.sum(axis=0, dtype=np.int16)
        by[j] = sizes[:, 0] @ hit.astype(float) if m == 1 else (hit * sizes).sum(axis=0)
    dense = by.sum(axis=0)
    unsharded, grad_sharded = by[0] + by[1], by[1] + by[2]
    param_b = (unsharded + by[2] / W) * p_b
    grad_b = (by[0] + grad_sharded / W) * g_b
    opt_b = (by[0] + grad_sharded / W) * o_b
    comm = ring * (by[2] * (2 * p_b + g_b) + by[1] * (p_b + g_b) + by[0] * 2.0 * g_b)
    emb = T * R * e
    param_b += emb * p_b
    grad_b += emb * g_b
    opt_b += emb * o_b
    comm += 2.0 * ring * emb * g_b
    act = (2.0 * lb * w * L + lb * T * e) * a_b
    mem = param_b + grad_b + opt_b + act
    hw = device_figures(df, precision, W)
    cap = np.where(np.isnan(budget), hw.memory_gib, budget) * GIB
    flops = 6.0 * dense * lb
    t_compute = flops / hw.peak
    t_comm = comm / link_bandwidth(hw, W)
    step = t_compute + t_comm
    with np.errstate(divide="ignore", invalid="ignore"):
        qps = lb * W / step
        return {
            "layer_passes": L,
            "collective_calls": L * (W > 1),
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


def claims(df: pd.DataFrame) -> np.ndarray:
    """The rows this model prices: those with a ``width``."""
    return ~np.isnan(num(df, "width"))


_NAN, _ZERO = np.array(np.nan), np.array(0.0)


def cost(df: pd.DataFrame) -> dict[str, np.ndarray]:
    """:func:`fsdp_columns` as every column of ``analytic.ESTIMATE_COLUMNS`` (those it lacks ``NaN``,
    those of parallelisms it has not ``0``; its communication is data-parallel)."""
    n = len(df)
    cols = {k: broadcast(v, n) for k, v in fsdp_columns(df).items()}
    out = {c: cols.get(c, _NAN) for c in ESTIMATE_COLUMNS}
    for k in _NOT_FSDP:
        out[k] = _ZERO
    out["comm_bytes"] = cols["comm_dp_bytes"]
    out["dp_time_s"] = cols["comm_time_s"]
    return {k: broadcast(v, n) for k, v in out.items()}
