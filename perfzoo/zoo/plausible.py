"""A user's runs checked before they anchor a prediction (:class:`perfzoo.zoo.anchor.Anchored`).

* **Faster than the device** (:func:`refuse_faster_than_peak`): a run whose tokens/s per GPU, times
  the least work a token takes (the model's FLOPs, causal attention counted half, no recompute),
  exceeds its GPU's peak in its precision (any precision where none is stated) is refused, one line
  naming the run: a wrong unit (tokens/s per job given per GPU) or a wrong config, never a fast stack.
* **A layout its framework cannot run** (:func:`refused_by_framework`): the rules of the framework a
  run names (:func:`perfzoo.frameworks.refusal`, the ones ``predict`` and ``plan`` apply) leave it
  out with a warning naming it: what it says it ran is not what ran.
* **Far off its prediction** (:func:`far_off`): a run more than :data:`FAR` times faster or slower
  than predicted is left out with a warning naming it. Across the shared tables no run is that far
  off the anchoring member (the farthest: 2.98x, DGX Cloud's DeepSeek-V3 on 256 GB200); used, it
  would move every layout of its model by that factor, where a mistake in its config is the
  likelier story.

>>> far_off(31_000.0, 10_000.0), far_off(12_000.0, 10_000.0)
('measured 3.1x its prediction (10,000): more than 3x off, likely a wrong unit or config; not used', None)
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd

from perfzoo import frameworks
from perfzoo.analytic import flops_per_token
from perfzoo.analytic.estimates import claimed
from perfzoo.datasets.sources import DataError
from perfzoo.hardware import accelerators
from perfzoo.records.vocabulary import is_missing, precision_format

FAR = 3.0  # a run this many times faster or slower than predicted does not anchor
PER_DEVICE = {"metrics.throughput_per_device": True, "metrics.throughput": False}  # targets in tokens/s


def refused_by_framework(X: pd.DataFrame) -> list[str | None]:
    """Per run (a row of ``config.*`` columns), why its framework cannot run it as written, or None.

    >>> refused_by_framework(pd.DataFrame({"config.framework": ["torchtitan", "torchtitan"],
    ...                                    "config.fsdp": ["zero1", "full_shard"]}))[1] is None
    True
    """
    configs = [{k.removeprefix("config."): v for k, v in row.items() if k.startswith("config.") and not is_missing(v)}
               for row in X.to_dict("records")]
    return [None if why is None else f"{why}: not used" for why in map(frameworks.refusal, configs)]


def far_off(measured: float, predicted: float) -> str | None:
    """Why a run ``measured`` against ``predicted`` does not anchor (None: it may)."""
    ratio = measured / predicted
    if 1 / FAR <= ratio <= FAR:
        return None
    return (f"measured {ratio:.1f}x its prediction ({predicted:,.0f}): more than {FAR:g}x off, likely a wrong unit "
            "or config; not used")


def implied_mfu(X: pd.DataFrame, measured: np.ndarray, target: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(mfu, flops, peak)`` per run: its tokens/s per GPU x model FLOPs per token (causal, no
    recompute) / its GPU's peak FLOP/s in its precision; NaN where ``target`` is not a tokens/s
    column, the row is not an LLM config or the GPU or its peak is unknown.

    >>> X = pd.DataFrame({"config.n_layers": [32], "config.hidden_dim": [4096], "config.n_heads": [32],
    ...                   "config.seq_len": [4096], "config.n_gpus": [8], "hardware.accelerator": ["H100"],
    ...                   "config.precision": ["bf16"]})
    >>> mfu, flops, peak = implied_mfu(X, np.array([9_000_000.0]), "metrics.throughput_per_device")
    >>> round(float(mfu[0]))
    381
    """
    n = len(X)
    mfu, flops, peak = np.full(n, np.nan), np.full(n, np.nan), np.full(n, np.nan)
    if target not in PER_DEVICE or n == 0:
        return mfu, flops, peak
    X = X.reset_index(drop=True)
    llm = np.zeros(n, dtype=bool)
    for spec, mask in claimed(X):
        if spec.name == "llm":
            llm |= mask
    if not llm.any():
        return mfu, flops, peak
    flops[llm] = np.asarray(flops_per_token(X.loc[llm], causal=True), dtype=float).reshape(-1)
    devices = pd.to_numeric(X.get("config.n_gpus", pd.Series(np.nan, index=X.index)), errors="coerce").to_numpy(float)
    per_gpu = np.asarray(measured, dtype=float) / (1.0 if PER_DEVICE[target] else devices)
    precision = X.get("config.precision", pd.Series(None, index=X.index))
    for i in np.flatnonzero(llm):
        with warnings.catch_warnings():  # an unknown accelerator is refused where it is priced
            warnings.simplefilter("ignore")
            found = accelerators.spec(X.at[i, "hardware.accelerator"]) if "hardware.accelerator" in X.columns else None
        if found is None or not found.peak_flops:
            continue
        stated = precision.iloc[i]
        peak[i] = max(found.peak_flops.values()) if is_missing(stated) else (found.peak(precision_format(stated)) or np.nan)
    with np.errstate(invalid="ignore", divide="ignore"):
        mfu = per_gpu * flops / peak
    return mfu, flops, peak


def refuse_faster_than_peak(X: pd.DataFrame, measured: np.ndarray, target: str | None, names: Sequence[str]) -> None:
    """Raise :class:`perfzoo.datasets.sources.DataError` naming the first run faster than its GPU's
    peak (:func:`implied_mfu` > 1), and how many more there are; nothing where ``target`` is None."""
    if target is None:
        return
    mfu, flops, peak = implied_mfu(X, measured, target)
    over = np.flatnonzero(np.nan_to_num(mfu) > 1)
    if over.size == 0:
        return
    i = over[0]
    unit = "per GPU" if PER_DEVICE[target] else "per job"
    more = f" ({over.size - 1} more runs too)" if over.size > 1 else ""
    raise DataError(f"{names[i]}: {measured[i]:,.0f} tokens/s {unit} is {mfu[i]:.3g}x what its GPU can do "
                    f"({peak[i] / 1e12:,.0f} TFLOP/s at {flops[i] / 1e9:,.1f} GFLOP per token){more}; no run beats "
                    "its device's peak: check the unit (tokens/s per GPU or per job), the model and the GPU count")


__all__ = ["FAR", "far_off", "implied_mfu", "refuse_faster_than_peak"]
