"""How a plan prices a layout: the memory model decides whether it fits, a predictor how fast it runs.

:class:`Scorer` holds a fitted predictor (the leaderboard's best for ``published-llm`` by
default, any zoo member, or a :class:`~perfzoo.search.Formula`) and the memory rule
(:class:`perfzoo.analytic.memory.MemoryRule`, the one ``predict`` applies too): a layout fits when
its predicted peak allocated times the memory model's error at a stated risk, plus the allocator's,
CUDA context's and NCCL's overheads, is within the device's memory; ``memory_margin`` (a fraction
of the device kept free of the whole estimate) replaces that rule where given. :meth:`Scorer.score` turns a frame of layouts into the plan's columns: the peak allocated
(``peak_allocated_gib``, what ``torch.cuda.max_memory_allocated`` reports), memory needed and
headroom per GPU, whether it fits, predicted tokens/s per GPU and in all, step time, MFU and the
predictor's interval where it has one.

:func:`perfzoo.zoo.calibrate.calibrated` anchors the predictor on a user's own measured runs and
refits it with them (``--calibrate runs.csv``); the scorer takes what it returns like any predictor.

>>> import pandas as pd
>>> from perfzoo.search import Formula
>>> scorer = Scorer(Formula(lambda X: np.full(len(X), 1000.0)))   # 1,000 tokens/s per GPU
>>> layout = pd.DataFrame([{"config.n_layers": 32, "config.hidden_dim": 4096, "config.n_heads": 32,
...                         "config.vocab_size": 128256, "config.seq_len": 8192, "config.global_batch_size": 64,
...                         "config.micro_batch_size": 1, "config.n_gpus": 8, "config.tp": 1,
...                         "config.fsdp": "full_shard", "config.activation_checkpointing": "full",
...                         "hardware.accelerator": "H100-SXM-80GB"}])
>>> row = scorer.score(layout).iloc[0]
>>> bool(row["fits"]), float(row["predicted_tokens_per_s"]), round(float(row["step_time_s"]), 3)
(True, 8000.0, 65.536)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np
import pandas as pd

from perfzoo import llmconfig, zoo
from perfzoo.analytic.memory import MemoryRule
from perfzoo.records.columns import Columns
from perfzoo.records.vocabulary import precision_format
from perfzoo.search.objective import Model
from perfzoo.zoo.analytic_features import estimates, host_paced, n_devices
from perfzoo.zoo.base import input_columns
from perfzoo.zoo.features import as_columns
from perfzoo.zoo.interval import LayoutUncertain, Uncertain

GIB = float(2**30)


@dataclass
class Scorer:
    """A predictor and the memory rule (see the module docstring).

    ``per_device``: whether the predictor's output is tokens/s per GPU (its training target
    ``metrics.throughput_per_device``) or for the whole job; ``columns``: its input columns
    (default: what it was fitted on; every column for a :class:`~perfzoo.search.Formula`); ``note``:
    how it was fitted where that is not the default (shown beside its name).
    """

    predictor: Model
    per_device: bool = True
    memory_margin: Optional[float] = None
    columns: Optional[Sequence[str]] = None
    note: str = ""  # how the predictor was fitted, where the plan refitted it (shown beside its name)

    def __post_init__(self):
        try:
            MemoryRule(self.memory_margin)  # its check, said once
        except ValueError as exc:
            raise llmconfig.ConfigError(str(exc)) from None
        if self.columns is None:
            self.columns = input_columns(self.predictor)

    @property
    def rule(self) -> MemoryRule:
        """The memory rule: ``memory_margin``'s where given, else the one derived from measured peaks."""
        return MemoryRule(self.memory_margin)

    @property
    def name(self) -> str:
        return getattr(self.predictor, "name", type(self.predictor).__name__)

    def memory(self, frame: pd.DataFrame) -> pd.DataFrame:
        """Per layout: ``peak_allocated_gib`` (the memory model's peak allocated per GPU),
        ``memory_gib`` (that plus the overheads: what the GPU needs), ``device_memory_gib``,
        ``headroom_gib`` (device memory less that), ``fits`` (:attr:`rule`), and
        ``layer_pass_ms`` and ``host_paced`` (:func:`perfzoo.zoo.analytic_features.host_paced`)."""
        est = estimates(frame)
        mem = est["memory_bytes"] / GIB
        with np.errstate(divide="ignore", invalid="ignore"):
            device = mem / est["memory_fraction"]
        pass_s, paced = host_paced(est)
        return pd.DataFrame({"peak_allocated_gib": est["peak_allocated_bytes"] / GIB, "memory_gib": mem,
                             "device_memory_gib": device, "headroom_gib": device - mem,
                             "fits": self.rule.fits(est["peak_allocated_bytes"], est["memory_bytes"], device * GIB), "flops_per_token": est["flops_per_token"],
                             "tokens_per_step": est["tokens_per_step"], "layer_pass_ms": 1e3 * pass_s,
                             "host_paced": paced}, index=frame.index)

    def _inputs(self, frame: pd.DataFrame):
        if isinstance(self.predictor, zoo.Predictor):  # the layouts' arrays, not copied
            return as_columns(frame) if self.columns is None else as_columns(frame).reindex(self.columns)
        if isinstance(frame, Columns):  # a formula or a calibrated predictor reads a frame
            frame = frame.to_frame()
        return frame if self.columns is None else frame.reindex(columns=list(self.columns))

    def relative(self) -> Optional[tuple[float, float]]:
        """The predictor's error between two layouts of one model, as ``(low, high)`` factors
        (:meth:`perfzoo.zoo.interval.Interval.relative`); None for a predictor that does not know it
        (:class:`~perfzoo.zoo.interval.LayoutUncertain`)."""
        if not isinstance(self.predictor, LayoutUncertain):
            return None
        low, high = self.predictor.relative()
        return (low, high) if 0 < low and np.isfinite(high) else None  # too few training rows for a finite one

    def interval(self, frame: pd.DataFrame) -> Optional[tuple[np.ndarray, np.ndarray, str]]:
        """``(low, high, what)`` in tokens/s per GPU for each layout of ``frame``: the predictor's
        80% interval where it has one (:class:`~perfzoo.zoo.interval.Uncertain`), else plus or minus
        two standard deviations; None for a predictor that gives neither."""
        if not isinstance(self.predictor, Uncertain):
            if not getattr(self.predictor, "has_std", False):
                return None
            pred, std = self.predict(frame)
            return pred - 2.0 * std, pred + 2.0 * std, "range of +-2 standard deviations"
        low, high = (np.asarray(v, dtype=float).reshape(-1) for v in self.predictor.predict_interval(self._inputs(frame)))
        if not self.per_device:
            low, high = low / n_devices(frame), high / n_devices(frame)
        return low, high, "80% interval"

    def predict(self, frame: pd.DataFrame) -> tuple[np.ndarray, Optional[np.ndarray]]:
        """Predicted tokens/s per GPU of each layout, and its standard deviation (None without one)."""
        X = self._inputs(frame)
        pred = np.asarray(self.predictor.predict(X), dtype=float).reshape(-1)
        std = None
        if getattr(self.predictor, "has_std", False):
            std = np.asarray(self.predictor.predict_std(X), dtype=float).reshape(-1)
        if not self.per_device:
            n = n_devices(frame)
            pred = pred / n
            std = None if std is None else std / n
        return pred, std

    def score(self, frame: pd.DataFrame, memory: Optional[pd.DataFrame] = None) -> pd.DataFrame:
        """The plan's columns for every layout of ``frame`` (see the module docstring); layouts
        that do not fit are predicted too (the plot shows them), ``fits`` tells them apart."""
        memory = self.memory(frame) if memory is None else memory
        per_dev, std = self.predict(frame)
        n = n_devices(frame)
        out = memory.copy()
        out["predicted_tokens_per_s_per_device"] = per_dev
        out["predicted_tokens_per_s"] = per_dev * n
        with np.errstate(divide="ignore", invalid="ignore"):
            out["step_time_s"] = out["tokens_per_step"].to_numpy() / out["predicted_tokens_per_s"].to_numpy()
        out["mfu"] = per_dev * out["flops_per_token"].to_numpy() / precision_peak(frame)
        if std is not None:
            out["range_low"] = per_dev - 2.0 * std
            out["range_high"] = per_dev + 2.0 * std
        return out


def precision_peak(frame: pd.DataFrame) -> np.ndarray:
    """Each layout's accelerator's dense peak FLOP/s in the layout's own precision
    (``config.precision``; bf16 where it gives none): MFU is quoted against it, as NVIDIA's recipes
    quote it (an FP8 layout over the FP8 peak), so an FP8 layout's MFU is never over its BF16 share.

    >>> frame = pd.DataFrame({"hardware.accelerator": ["H100-SXM-80GB"] * 2, "config.precision": ["bf16", "fp8"]})
    >>> (precision_peak(frame) / 1e12).round().tolist()
    [989.0, 1979.0]
    """
    n = len(frame)
    names = np.broadcast_to(np.asarray(frame["hardware.accelerator"].astype(str), dtype=object), n)
    stated = frame["config.precision"] if "config.precision" in frame else pd.Series(["bf16"])
    formats = np.broadcast_to(np.asarray(stated.map(precision_format), dtype=object), n)
    peaks = {(name, fmt): (llmconfig.accelerator_spec(name).peak(fmt) or np.nan)
             for name, fmt in set(zip(names, formats))}
    return np.fromiter((peaks[pair] for pair in zip(names, formats)), dtype=float, count=n)


__all__ = ["Scorer", "precision_peak"]
