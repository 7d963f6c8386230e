"""Every analytic estimate of a frame at once: each row goes to its workload's cost model."""

from __future__ import annotations

import numpy as np
import pandas as pd

from perfzoo.analytic._frame import Frame, as_frame, broadcast, wrap_frame
from perfzoo.analytic.memory import MemoryRule
from perfzoo.records.vocabulary import CHECKPOINTING
from perfzoo.workloads import WorkloadSpec, specs

ESTIMATE_COLUMNS = (
    "n_params", "active_params", "flops_per_token", "tokens_per_step", "flops_per_device_step",
    "effective_peak_flops", "kernel_rate", "param_bytes", "grad_bytes", "optimizer_bytes", "activation_bytes",
    "peak_allocated_bytes", "overhead_bytes", "memory_bytes", "memory_fraction",
    "comm_dp_bytes", "comm_tp_bytes", "comm_pp_bytes", "comm_cp_bytes", "comm_ep_bytes", "comm_bytes",
    "bubble", "layer_passes", "collective_calls", "compute_time_s", "softmax_time_s", "memory_time_s",
    "optimizer_time_s", "tp_time_s", "cp_time_s", "ep_time_s", "pp_time_s", "dp_time_s",
    "comm_time_s", "host_time_s", "step_time_s", "throughput", "throughput_per_device",
)


def estimate(cfg: Frame):
    """All analytic estimates as columns (:data:`ESTIMATE_COLUMNS`), one row per config.

    Each row goes to the cost model of the first registered workload that claims it
    (:mod:`perfzoo.workloads`: rows with a ``width`` to the recommendation model of ``fsdp``,
    rows with a ``hidden_dim``, an ``n_params`` or a ``model_name`` to the LLM model,
    :mod:`.llm`); the rest are ``NaN``. Throughput is in each workload's unit: tokens/s for
    LLM rows, queries/s for fsdp rows (a frame mixes workloads only if its target does).
    Columns that do not apply (e.g. ``comm_tp_bytes`` for fsdp rows) are ``0``.
    """
    df, scalar = as_frame(cfg)
    return wrap_frame(estimate_arrays(df), df, scalar)


def claimed(df: pd.DataFrame) -> list[tuple[WorkloadSpec, np.ndarray]]:
    """Each workload with a cost model and the rows it costs: those it claims that no workload
    registered before it claims."""
    n = len(df)
    taken = np.zeros(n, dtype=bool)
    out = []
    for spec in specs():
        if spec.claims is not None:
            mask = np.broadcast_to(spec.claims(df), (n,)) & ~taken
            taken |= mask
            out.append((spec, mask))
    return out


def estimate_arrays(df: pd.DataFrame) -> dict[str, np.ndarray]:
    """:func:`estimate` as a dict of float arrays of length ``n`` (no DataFrame built: the fast path for
    features); read only, where a cost model's value is shared by every row a broadcast view of it."""
    n = len(df)
    parts = claimed(df)
    for spec, mask in parts:
        if n and mask.all():
            return {k: broadcast(v, n) for k, v in spec.cost(df).items()}
    out = {c: np.full(n, np.nan) for c in ESTIMATE_COLUMNS}
    for spec, mask in parts:
        if mask.any():
            cols = spec.cost(df.loc[mask])
            for k in ESTIMATE_COLUMNS:
                out[k][mask] = cols[k]
    return out


def throughput(cfg: Frame, per_device: bool = False):
    """Analytic throughput: tokens/s (LLM) or queries/s (fsdp workload), global or per device."""
    est = estimate(cfg)
    return est["throughput_per_device" if per_device else "throughput"]


def least_recompute(frame: pd.DataFrame, rule: MemoryRule = MemoryRule()) -> pd.DataFrame:
    """Per row, the activation checkpointing it is priced with and whether it fits (``rule``): the one
    it states, or where it states none, the least recompute that fits, in :data:`CHECKPOINTING`'s
    order (none, selective, full: every framework perfzoo prices offers the three, e.g. Megatron's
    ``--recompute-granularity``, torchtitan's ``activation_checkpoint.mode``, MaxText's remat
    policies), ``full`` where none does. Columns ``activation_checkpointing``, ``stated``, ``fits``,
    ``memory_bytes`` (under the setting).

    >>> cfg = pd.DataFrame([{"n_layers": 32, "hidden_dim": 4096, "n_heads": 32, "vocab_size": 128256,
    ...                      "seq_len": 8192, "micro_batch_size": 2, "n_gpus": 8, "fsdp": "full_shard",
    ...                      "accelerator": "H100"}])
    >>> row = least_recompute(cfg).iloc[0]
    >>> row["activation_checkpointing"], bool(row["stated"]), bool(row["fits"])
    ('full', False, True)
    """
    key = "activation_checkpointing"
    key = f"config.{key}" if f"config.{key}" in frame or "config.hidden_dim" in frame else key
    stated = frame[key].notna().to_numpy() if key in frame else np.zeros(len(frame), dtype=bool)
    setting = frame[key].to_numpy(dtype=object).copy() if key in frame else np.full(len(frame), None, dtype=object)
    fit, memory = np.zeros(len(frame), dtype=bool), np.full(len(frame), np.nan)
    todo = ~stated
    for mode in (None, *CHECKPOINTING):  # the rows as stated, then each setting for the rest
        rows = stated if mode is None else todo
        if not rows.any():
            continue
        part = frame[rows] if mode is None else frame[rows].assign(**{key: mode})
        est = estimate(part)
        ok = rule.fits(est["peak_allocated_bytes"], est["memory_bytes"],
                       est["memory_bytes"] / est["memory_fraction"])
        take = np.ones(int(rows.sum()), dtype=bool) if mode is None else (ok | (mode == CHECKPOINTING[-1]))
        idx = np.flatnonzero(rows)[take]
        fit[idx], memory[idx] = np.asarray(ok)[take], np.asarray(est["memory_bytes"], dtype=float)[take]
        if mode is not None:
            setting[idx] = mode
            todo[idx] = False
    return pd.DataFrame({"activation_checkpointing": setting, "stated": stated, "fits": fit, "memory_bytes": memory},
                        index=frame.index)
