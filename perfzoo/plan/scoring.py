"""How a plan prices a layout: the memory model decides whether it fits, a predictor how fast it runs.

:class:`Scorer` holds a fitted predictor (the leaderboard's best for ``published-llm`` by
default, any zoo member, or a :class:`~perfzoo.search.Formula`) and the memory rule: a layout
fits when the analytic estimate of its peak memory per GPU (``analytic.estimate``'s
``memory_bytes``) is at most ``1 - memory_margin`` of the device's memory; the margin
(:data:`MEMORY_MARGIN`, 10%) keeps room for what the memory model does not count (the CUDA
context, communication buffers, allocator fragmentation). :meth:`Scorer.score` turns a frame
of layouts into the plan's columns: memory and headroom per GPU, whether it fits, predicted
tokens/s per GPU and in all, step time, MFU and the predictor's interval where it has one.

:func:`fit_with_runs` refits a predictor on its training data plus a user's own measured runs
(``--calibrate runs.csv``).

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

import io
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

import numpy as np
import pandas as pd

from perfzoo import llmconfig, zoo
from perfzoo.dataset import Dataset
from perfzoo.analytic_features import estimates, host_paced, n_devices
from perfzoo.features import as_columns
from perfzoo.inputs import read_text
from perfzoo.search.objective import Model, input_columns

MEMORY_MARGIN = 0.10
GIB = float(2**30)
# what a runs file may call its measurement (tokens/s per GPU, or in all)
PER_DEVICE_COLUMNS = ("tokens_per_s_per_device", "tokens_per_sec_per_gpu")
GLOBAL_COLUMNS = ("tokens_per_s",)


@dataclass
class Scorer:
    """A predictor and the memory rule (see the module docstring).

    ``per_device``: whether the predictor's output is tokens/s per GPU (its training target
    ``metrics.throughput_per_device``) or for the whole job; ``columns``: its input columns
    (default: what it was fitted on; every column for a :class:`~perfzoo.search.Formula`).
    """

    predictor: Model
    per_device: bool = True
    memory_margin: float = MEMORY_MARGIN
    columns: Optional[Sequence[str]] = None

    def __post_init__(self):
        if not 0 <= self.memory_margin < 1:
            raise llmconfig.ConfigError(f"--memory-margin {self.memory_margin}: give a fraction of device memory "
                                        "in [0, 1), e.g. 0.1")
        if self.columns is None:
            self.columns = input_columns(self.predictor)

    @property
    def name(self) -> str:
        return getattr(self.predictor, "name", type(self.predictor).__name__)

    def memory(self, frame: pd.DataFrame) -> pd.DataFrame:
        """Per layout: ``memory_gib`` (the memory model's peak per GPU), ``device_memory_gib``,
        ``headroom_gib`` (device memory less that), ``fits`` (within ``1 - memory_margin``), and
        ``layer_pass_ms`` and ``host_paced`` (:func:`perfzoo.analytic_features.host_paced`)."""
        est = estimates(frame)
        mem = est["memory_bytes"] / GIB
        with np.errstate(divide="ignore", invalid="ignore"):
            device = mem / est["memory_fraction"]
        fits = np.isfinite(mem) & (mem <= (1.0 - self.memory_margin) * device)
        pass_s, paced = host_paced(est)
        return pd.DataFrame({"memory_gib": mem, "device_memory_gib": device, "headroom_gib": device - mem,
                             "fits": fits, "flops_per_token": est["flops_per_token"],
                             "tokens_per_step": est["tokens_per_step"], "layer_pass_ms": 1e3 * pass_s,
                             "host_paced": paced}, index=frame.index)

    def predict(self, frame: pd.DataFrame) -> tuple[np.ndarray, Optional[np.ndarray]]:
        """Predicted tokens/s per GPU of each layout, and its standard deviation (None without one)."""
        if isinstance(self.predictor, zoo.Predictor):  # the layouts' arrays, not copied
            X = as_columns(frame) if self.columns is None else as_columns(frame).reindex(self.columns)
        else:
            X = frame if self.columns is None else frame.reindex(columns=list(self.columns))
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
        out["mfu"] = per_dev * out["flops_per_token"].to_numpy() / bf16_peak(frame)
        if std is not None:
            out["range_low"] = per_dev - 2.0 * std
            out["range_high"] = per_dev + 2.0 * std
        return out


def bf16_peak(frame: pd.DataFrame) -> np.ndarray:
    """Each layout's accelerator's dense bf16 peak FLOP/s: MFU is quoted against it whatever the
    precision, as torchtitan and NVIDIA quote it."""
    names = frame["hardware.accelerator"].astype(str)
    peaks = {name: (llmconfig.accelerator_spec(name).flops("bf16") or np.nan) for name in names.unique()}
    return names.map(peaks).to_numpy(dtype=float)


def runs_frame(path: str | Path) -> tuple[pd.DataFrame, np.ndarray]:
    """A user's measured runs: a CSV with one run per row, its config keys (the front door's,
    :mod:`perfzoo.llmconfig`) and its measured ``tokens_per_s_per_device`` (or
    ``tokens_per_sec_per_gpu``, or the job's ``tokens_per_s``). Returns the predictor columns
    and the tokens/s per GPU; a row that is no config perfzoo can price, or has no measurement,
    is a :class:`~perfzoo.llmconfig.ConfigError` naming its line."""
    path = Path(path)
    if not path.is_file():
        raise llmconfig.ConfigError(f"--calibrate {path}: no such file")
    table = pd.read_csv(io.StringIO(read_text(path, "--calibrate")))
    measured_cols = [c for c in PER_DEVICE_COLUMNS + GLOBAL_COLUMNS if c in table.columns]
    if not measured_cols:
        raise llmconfig.ConfigError(f"--calibrate {path}: no measurement column; add one of "
                                    f"{', '.join(PER_DEVICE_COLUMNS + GLOBAL_COLUMNS)}")
    rows, measured = [], []
    for i, rec in enumerate(table.to_dict("records"), 2):  # line 1 is the header
        values = {c: rec.pop(c) for c in measured_cols}
        try:
            cfg = llmconfig.check(rec)
        except llmconfig.ConfigError as exc:
            raise llmconfig.ConfigError(f"--calibrate {path} line {i}: {exc}") from None
        col = measured_cols[0]
        value = pd.to_numeric(pd.Series([values[col]]), errors="coerce").iloc[0]
        if not np.isfinite(value) or value <= 0:
            raise llmconfig.ConfigError(f"--calibrate {path} line {i}: {col} = {values[col]!r} is no measured "
                                        "throughput (a positive number)")
        rows.append(llmconfig.as_columns(cfg))
        measured.append(value if col not in GLOBAL_COLUMNS else value / cfg["n_gpus"])
    if not rows:
        raise llmconfig.ConfigError(f"--calibrate {path}: the file holds no runs")
    return pd.DataFrame(rows), np.asarray(measured, dtype=float)


def fit_with_runs(member: str, training: Dataset, runs: str | Path) -> Model:
    """The zoo member ``member`` fitted on ``training``'s labelled successful jobs plus the
    measured runs in ``runs`` (:func:`runs_frame`), each run weighing as one job. The fitted
    predictor's ``n_calibration_runs_`` says how many runs joined."""
    X_runs, per_dev = runs_frame(runs)
    ok = training.labelled().ok()
    per_device_target = training.target.endswith("_per_device")
    y_runs = per_dev if per_device_target else per_dev * n_devices(X_runs)
    X = pd.concat([ok.X, X_runs.reindex(columns=ok.X.columns)], ignore_index=True)
    y = np.concatenate([ok.y, y_runs])
    model = zoo.make(member).fit(X, y, dataset=training.name)
    model.n_calibration_runs_ = len(X_runs)
    return model


__all__ = ["MEMORY_MARGIN", "Scorer", "bf16_peak", "fit_with_runs", "runs_frame"]
