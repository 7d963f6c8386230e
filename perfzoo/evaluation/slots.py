"""Slots: one model's layouts on one cluster, the choice ``plan`` makes, and how a predictor orders them.

A *slot* is every job of one model (its shape), on one accelerator and GPU count, at one
sequence length, global batch, task and framework: what stays fixed while ``plan`` varies the
layout (precision, TP, PP, VP, CP, EP, micro-batch, sharding, recompute: :data:`LAYOUT_COLUMNS`). Repeats of
one layout (other releases, other runs) are one layout, at the median of their measurements and
predictions. Inside a slot a predictor is judged on three things (:func:`slot_scores`):

* ``kendall``: tau-b between measured and predicted throughput (slots with at least
  :data:`MIN_LAYOUTS` layouts measured apart; fewer leave nothing worth ordering; a predictor that
  prices them all alike scores 0);
* ``spread``: (predicted max / min) / (measured max / min), 1 when the predictor prices the
  layouts as far apart as they ran (below 1: it prices them alike, so noise picks);
* ``regret``: 1 - measured throughput of the predicted best / the best measured
  (:func:`~perfzoo.evaluation.metrics.top_k_regret`).

>>> import pandas as pd
>>> X = pd.DataFrame({"config.n_layers": 32, "config.hidden_dim": 4096, "config.seq_len": 8192,
...                   "config.n_gpus": 8, "config.global_batch_size": 64, "config.tp": [1, 2, 4, 8]})
>>> slots, layouts = slot_labels(X), layout_labels(X)
>>> len(set(slots)), len(set(layouts))
(1, 4)
>>> s = slot_scores([400, 380, 330, 250], [420, 390, 300, 260], slots, layouts)
>>> round(float(s["kendall"].iloc[0]), 3), round(float(s["spread"].iloc[0]), 3), float(s["regret"].iloc[0])
(1.0, 1.01, 0.0)
>>> summary(s)["slots"]
1
"""

from __future__ import annotations

from typing import Iterable, Optional, Sequence

import numpy as np
import pandas as pd

from perfzoo.console import DataError
from perfzoo.evaluation.metrics import kendall, top_k_regret

MIN_LAYOUTS = 3  # distinct measured layouts a slot needs to be scored
# what a scored split holds about its slots (:func:`slot_metrics`): the mean Kendall, the median spread, the
# median regret inside them, and how many there were
SLOT_METRICS = ("slot_kendall", "slot_spread", "slot_regret", "slots")
# what a slot holds fixed: the model's shape, the cluster, the sequence, the batch, the task, the framework
SLOT_COLUMNS = ("config.model_name", "config.n_layers", "config.hidden_dim", "config.ffn_dim", "config.n_heads",
                "config.n_kv_heads", "config.n_experts", "config.vocab_size", "hardware.accelerator",
                "config.n_gpus", "config.seq_len", "config.global_batch_size", "config.task", "config.framework")
# what plan varies inside a slot
LAYOUT_COLUMNS = ("config.precision", "config.tp", "config.pp", "config.vp", "config.cp", "config.ep", "config.etp",
                  "config.dp", "config.micro_batch_size", "config.grad_accum", "config.activation_checkpointing",
                  "config.fsdp", "config.zero_stage", "config.sequence_parallel", "config.tp_comm_overlap",
                  "config.compile", "config.fp8_param_gather", "config.local_batch_size",
                  "config.reshard_after_forward")


def of_frame(frame: pd.DataFrame) -> Optional[tuple[np.ndarray, np.ndarray]]:
    """``(slot labels, layout labels)`` of a dataset's frame, or None where its rows are no layouts of
    a model on a cluster (no ``config.n_gpus`` or ``config.global_batch_size``: the fsdp workload's)."""
    if not {"config.n_gpus", "config.global_batch_size"} <= set(frame.columns):
        return None
    return slot_labels(frame), layout_labels(frame)


def slot_metrics(y_true: Iterable[float], y_pred: Iterable[float], slots: Iterable, layouts: Iterable,
                 absolute: bool = True) -> dict:
    """:data:`SLOT_METRICS` of one scored split (``absolute`` False: predictions are scores, whose
    spread means nothing: NaN)."""
    s = summary(slot_scores(y_true, y_pred, slots, layouts))
    return {"slot_kendall": s["kendall"], "slot_spread": s["spread"] if absolute else float("nan"),
            "slot_regret": s["regret"], "slots": float(s["slots"])}


def slot_labels(X: pd.DataFrame) -> np.ndarray:
    """One label per row naming its slot (the :data:`SLOT_COLUMNS` it has; a missing value is its own value)."""
    return _labels(X, SLOT_COLUMNS)


def layout_labels(X: pd.DataFrame) -> np.ndarray:
    """One label per row naming its layout inside its slot (the :data:`LAYOUT_COLUMNS` it has)."""
    return _labels(X, LAYOUT_COLUMNS)


def _labels(X: pd.DataFrame, columns: Sequence[str]) -> np.ndarray:
    cols = [c for c in columns if c in X.columns]
    if not cols:
        raise DataError(f"no column of {', '.join(columns)} in the frame: it cannot be cut into slots")
    parts = X[cols].astype(object).where(X[cols].notna(), "<na>").astype(str)
    return parts.agg("|".join, axis=1).to_numpy()


def slot_scores(y_true: Iterable[float], y_pred: Iterable[float], slots: Iterable, layouts: Iterable) -> pd.DataFrame:
    """Per slot with at least :data:`MIN_LAYOUTS` layouts measured apart: ``slot``, ``layouts``,
    ``kendall``, ``spread`` and ``regret`` (module docstring). Rows without a finite prediction
    are left out (a predictor that cannot price a layout is not scored on it)."""
    frame = pd.DataFrame({"t": np.asarray(y_true, dtype=float), "p": np.asarray(y_pred, dtype=float),
                          "slot": np.asarray(list(slots), dtype=object),
                          "layout": np.asarray(list(layouts), dtype=object)})
    frame = frame[np.isfinite(frame["t"]) & np.isfinite(frame["p"]) & (frame["p"] > 0) & (frame["t"] > 0)]
    rows = []
    for slot, g in frame.groupby("slot", sort=False):
        g = g.groupby("layout")[["t", "p"]].median()  # repeats of a layout: one layout
        tg, pg = g["t"].to_numpy(), g["p"].to_numpy()
        if np.unique(tg).size < MIN_LAYOUTS:
            continue
        tau = 0.0 if np.ptp(pg) == 0 else kendall(tg, pg)
        rows.append({"slot": slot, "layouts": len(g), "kendall": tau,
                     "spread": float((pg.max() / pg.min()) / (tg.max() / tg.min())),
                     "regret": top_k_regret(tg, pg, 1)})
    return pd.DataFrame(rows, columns=["slot", "layouts", "kendall", "spread", "regret"])


def summary(scores: pd.DataFrame) -> dict:
    """``slots``, mean ``kendall``, median ``spread`` and median ``regret`` over scored slots (NaN without any)."""
    if scores.empty:
        return {"slots": 0, "kendall": float("nan"), "spread": float("nan"), "regret": float("nan")}
    return {"slots": int(len(scores)), "kendall": float(scores["kendall"].mean()),
            "spread": float(scores["spread"].median()), "regret": float(scores["regret"].median())}


__all__ = ["LAYOUT_COLUMNS", "MIN_LAYOUTS", "SLOT_COLUMNS", "SLOT_METRICS", "layout_labels", "of_frame", "slot_labels",
           "slot_metrics", "slot_scores", "summary"]
