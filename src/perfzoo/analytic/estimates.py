"""Every analytic estimate of a frame at once: each row goes to its workload's cost model."""

from __future__ import annotations

import numpy as np
import pandas as pd

from perfzoo.analytic._frame import Frame, as_frame, full, num, wrap_frame
from perfzoo.analytic.fsdp import fsdp_columns
from perfzoo.analytic.llm import LLMCost

ESTIMATE_COLUMNS = (
    "n_params", "flops_per_token", "tokens_per_step", "flops_per_device_step", "param_bytes",
    "grad_bytes", "optimizer_bytes", "activation_bytes", "memory_bytes", "memory_fraction",
    "comm_dp_bytes", "comm_tp_bytes", "comm_pp_bytes", "comm_cp_bytes", "comm_ep_bytes", "comm_bytes",
    "bubble", "layer_passes", "collective_calls", "compute_time_s", "tp_time_s", "cp_time_s", "ep_time_s", "pp_time_s", "dp_time_s",
    "comm_time_s", "step_time_s", "throughput", "throughput_per_device",
)
# what the fsdp workload does not have
_NOT_FSDP = ("comm_tp_bytes", "comm_pp_bytes", "comm_cp_bytes", "comm_ep_bytes", "bubble", "tp_time_s",
             "cp_time_s", "ep_time_s", "pp_time_s")


def estimate(cfg: Frame):
    """All analytic estimates as columns (:data:`ESTIMATE_COLUMNS`), one row per config.

    Rows with a ``hidden_dim``, an ``n_params`` or a ``model_name`` get the LLM estimates
    (:mod:`.llm`), rows with a ``width`` the recommendation-model (``fsdp`` workload)
    estimates (:mod:`.fsdp`); the rest are ``NaN``. Throughput is tokens/s for LLM rows and
    queries/s for fsdp rows (a frame mixes workloads only if its target does). Columns that
    do not apply (e.g. ``comm_tp_bytes`` for fsdp rows) are ``0``.
    """
    df, scalar = as_frame(cfg)
    return wrap_frame(estimate_arrays(df), df, scalar)


def _fsdp_as_estimate(df: pd.DataFrame) -> dict[str, np.ndarray]:
    n = len(df)
    cols = {k: full(v, n) for k, v in fsdp_columns(df).items()}
    out = {c: cols.get(c, np.full(n, np.nan)) for c in ESTIMATE_COLUMNS}
    for k in _NOT_FSDP:
        out[k] = np.zeros(n)
    out["comm_bytes"] = cols["comm_dp_bytes"].copy()
    out["dp_time_s"] = cols["comm_time_s"].copy()
    return out


def estimate_arrays(df: pd.DataFrame) -> dict[str, np.ndarray]:
    """:func:`estimate` as a dict of numpy arrays (no DataFrame built: the fast path for features)."""
    n = len(df)
    width = np.broadcast_to(~np.isnan(num(df, "width")), (n,))
    llm = ~width & np.broadcast_to(~np.isnan(num(df, "hidden_dim")) | ~np.isnan(LLMCost.size_hint(df)), (n,))
    if llm.all() and n:
        return {k: full(v, n) for k, v in LLMCost(df).columns().items()}
    if width.all() and n:
        return _fsdp_as_estimate(df)
    out = {c: np.full(n, np.nan) for c in ESTIMATE_COLUMNS}
    for mask, part in ((llm, lambda d: LLMCost(d).columns()), (width, _fsdp_as_estimate)):
        if mask.any():
            cols = part(df.loc[mask])
            for k in ESTIMATE_COLUMNS:
                out[k][mask] = cols[k]
    return out


def throughput(cfg: Frame, per_device: bool = False):
    """Analytic throughput: tokens/s (LLM) or queries/s (fsdp workload), global or per device."""
    est = estimate(cfg)
    return est["throughput_per_device" if per_device else "throughput"]
