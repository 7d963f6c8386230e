"""The analytic estimates as model features: :func:`estimates` computes a chunk's estimates
(:func:`perfzoo.analytic.estimate_arrays`) once and keeps them with its
:class:`~perfzoo.records.columns.Columns`, however many features, targets and models read them;
:func:`analytic_features` turns them into the ``analytic.*`` columns of every encoding but
``onehot`` (:mod:`perfzoo.zoo.features`); :func:`n_devices` is the device count each job ran on;
:func:`host_paced` marks the configs whose GPU work per layer pass is shorter than the host's.

>>> import pandas as pd
>>> X = pd.DataFrame({"config.n_layers": [24], "config.hidden_dim": [2048], "config.n_heads": [16],
...                   "config.seq_len": [2048], "config.n_gpus": [8], "hardware.accelerator": ["H100-SXM-80GB"]})
>>> sorted(analytic_features(X, ["analytic.log_n_params"])), n_devices(X).tolist()
(['analytic.log_n_params'], [8.0])
"""

from __future__ import annotations

from typing import Optional, Sequence

import numpy as np
import pandas as pd

from perfzoo import analytic
from perfzoo.analytic.host import HOST_PASS_S
from perfzoo.records.columns import Columns

HOST_PACE = ("runs at the host's pace (eager PyTorch, dropless MoE): the estimate prices each layer pass at "
             f"{1e3 * HOST_PASS_S:.0f} ms, its host time; a larger micro batch helps")
# analytic estimate -> how it becomes a feature
_ANALYTIC_LOG = (
    "n_params", "flops_per_token", "tokens_per_step", "flops_per_device_step", "memory_bytes",
    "activation_bytes", "compute_time_s", "step_time_s", "throughput", "throughput_per_device",
)
_ANALYTIC_LOG1P = ("comm_dp_bytes", "comm_tp_bytes", "comm_pp_bytes", "comm_cp_bytes", "comm_bytes")
_ANALYTIC_RAW = ("memory_fraction", "bubble")
_STATE = ("param_bytes", "grad_bytes", "optimizer_bytes")
# feature -> (transform, the estimates it sums)
_ANALYTIC = {
    **{f"analytic.log_{c}": ("log", (c,)) for c in _ANALYTIC_LOG},
    **{f"analytic.log1p_{c}": ("log1p", (c,)) for c in _ANALYTIC_LOG1P},
    **{f"analytic.{c}": ("raw", (c,)) for c in _ANALYTIC_RAW},
    "analytic.log_state_bytes": ("log", _STATE),
}
ANALYTIC_FEATURES = tuple(_ANALYTIC)
# whether a config fits, not how fast it runs: a learned correction that splits on them learns
# where each source's recipes put their memory use (``hybrid`` leaves them out)
MEMORY_FEATURES = ("analytic.memory_fraction", "analytic.log_memory_bytes")


def estimates(X) -> dict[str, np.ndarray]:
    """:func:`perfzoo.analytic.estimate_arrays` of a frame or :class:`~perfzoo.records.columns.Columns`;
    computed once per Columns (kept in its ``cache``), however many features, targets and
    models read it."""
    if not isinstance(X, Columns):
        return analytic.estimate_arrays(X)
    est = X.cache.get("estimates")
    if est is None:
        est = X.cache["estimates"] = _estimate_columns(X)
    return est


_NO_BROADCAST: set[frozenset] = set()  # constant column sets a cost model could not broadcast


def _estimate_columns(X: Columns) -> dict[str, np.ndarray]:
    """The estimates of the light columns, their constants held once; where a cost model cannot
    broadcast them (it raises, e.g. building one array from per-layer arrays of different
    lengths), of the columns at full length, and that set of constants is not tried light again."""
    constant = frozenset(c for c in X.columns if X.is_constant(c))
    if constant and constant not in _NO_BROADCAST:
        try:
            return analytic.estimate_arrays(X)
        except (ValueError, IndexError):
            _NO_BROADCAST.add(constant)
    return analytic.estimate_arrays(X.expanded() if constant else X)


def analytic_features(X, names: Optional[Sequence[str]] = None) -> dict[str, np.ndarray]:
    """The analytic estimates of :func:`perfzoo.analytic.estimate` as model features
    (:data:`ANALYTIC_FEATURES`, or the ``names`` among them): logs of sizes, times and
    throughputs (NaN where not positive), ``log1p`` of communication bytes, memory fraction and
    bubble as they are; a dict of arrays. An estimate with one value on every row is
    transformed once and kept as one value (it broadcasts, as :class:`~perfzoo.records.columns.Columns`' constants)."""
    est = estimates(X)
    out = {}
    with np.errstate(divide="ignore", invalid="ignore"):
        for name in (ANALYTIC_FEATURES if names is None else names):
            how, parts = _ANALYTIC[name]
            v = _constant_once(est[parts[0]])
            for part in parts[1:]:
                v = v + _constant_once(est[part])
            out[name] = _per_run(_log, v) if how == "log" else _per_run(np.log1p, v) if how == "log1p" else v
    return out


def _log(v: np.ndarray) -> np.ndarray:
    """``log``: NaN below zero, and at zero (-inf made NaN)."""
    out = np.log(v)
    out[v == 0] = np.nan
    return out


def _per_run(fn, v: np.ndarray) -> np.ndarray:
    """``fn(v)`` (elementwise), computed once per run of equal values where the runs are long: a
    search scores configs in grid order, where the knobs that vary fastest leave most estimates
    unchanged from one config to the next (fsdp-ads-v3: the memory budget, in runs of 9).

    >>> _per_run(np.sqrt, np.array([4.0, 4.0, 4.0, 9.0] * 20)).tolist()[:5]
    [2.0, 2.0, 2.0, 3.0, 2.0]
    """
    if len(v) < 64:
        return fn(v)
    change = np.flatnonzero(v[1:] != v[:-1])
    if len(change) > len(v) // 4:
        return fn(v)
    starts = np.concatenate(([0], change + 1))
    return np.repeat(fn(v[starts]), np.diff(np.append(starts, len(v))))


def _constant_once(v: np.ndarray) -> np.ndarray:
    """``v`` itself, or its one value (length 1) when every row has it."""
    v = analytic.compact(v)
    return v[:1] if len(v) > 1 and v[0] == v[-1] and (v == v[0]).all() else v


def n_devices(X) -> np.ndarray:
    """Devices per job (a frame or :class:`~perfzoo.records.columns.Columns`): ``config.n_gpus``, else
    ``hardware.accelerator_count``, else ``config.world_size``; 1 where none is known."""
    out = np.full(len(X), np.nan)
    for c in ("config.n_gpus", "hardware.accelerator_count", "config.world_size", "n_gpus", "world_size"):
        if c in X.columns:
            v = pd.to_numeric(X[c], errors="coerce").to_numpy(dtype=float, na_value=np.nan)
            out = np.where(np.isnan(out), v, out)
    return np.where(np.isnan(out) | (out <= 0), 1.0, out)


def host_paced(est) -> tuple[np.ndarray, np.ndarray]:
    """``(seconds, flagged)`` per config of the estimates ``est``: the ideal GPU time of one layer
    pass (the step without the host's wait, over ``layer_passes``), and whether the host's time
    paces the step (``host_time_s`` > 0: a pass shorter than :data:`HOST_PASS_S` in a framework
    whose host time shows, :mod:`perfzoo.analytic.llm`).

    >>> seconds, flagged = host_paced({"step_time_s": [0.32, 0.2], "host_time_s": [0.12, 0.0], "layer_passes": [64, 64]})
    >>> [round(float(s) * 1e3, 2) for s in seconds], flagged.tolist()
    ([3.12, 3.12], [True, False])
    """
    host = np.asarray(est["host_time_s"], dtype=float)
    seconds = (np.asarray(est["step_time_s"], dtype=float) - host) / np.asarray(est["layer_passes"], dtype=float)
    return seconds, np.nan_to_num(host) > 0
