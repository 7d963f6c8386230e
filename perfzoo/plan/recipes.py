"""Published layouts of a model on a cluster: what the shared tables measured, the plan's baseline.

:func:`published_layouts` finds, in a dataset of published tables (``published-llm``), the
measured layouts of the same job: the same model (by catalog name, :mod:`perfzoo.llmconfig.catalog`),
on as many GPUs of the same accelerator, at the same sequence length and global batch, of the
same task (pre-training, fine-tuning, adapters) in one of the plan's precisions. The plan prices
each as it prices its own layouts (:func:`perfzoo.plan.planner.plan`) and says where it ranks and
what the plan's pick would gain over it; :func:`slot_mask` marks every published run of the model
on that cluster at that sequence, which the plan's predictor is refitted without
(:func:`perfzoo.pricing.refit_without`), so a baseline's prediction never saw its measurement.

>>> task_kind("Pre-Training"), task_kind(None), task_kind("LoRA"), task_kind("SFT")
('pre-training', 'pre-training', 'adapters', 'sft')
"""

from __future__ import annotations

import re
from typing import Optional, Sequence

import numpy as np
import pandas as pd

from perfzoo import llmconfig
from perfzoo.records.vocabulary import is_adapter_tuning
from perfzoo.datasets.dataset import Dataset
from perfzoo.llmconfig import catalog
from perfzoo.plan.layouts import Cluster

def catalog_name(name: object) -> Optional[str]:
    """The catalog's name for a model a table names (``LLAMA3_70B`` -> ``llama3-70b``), or None."""
    found = catalog.lookup(str(name)) if isinstance(name, str) else None
    return None if found is None else found["model_name"]


def accelerator_name(name: object) -> Optional[str]:
    """The accelerator table's name for a table's accelerator text, or None."""
    found = llmconfig.known_accelerator(name)
    return None if found is None else found.name


def task_kind(task: object) -> str:
    """What kind of training a task names: ``pre-training`` (also where none is named), ``adapters``
    (LoRA, PEFT) or the name itself, lower case (``sft``)."""
    if not isinstance(task, str) or not task.strip():
        return "pre-training"
    text = re.sub(r"[^a-z0-9]", "", task.lower())
    if text.startswith("pretrain"):
        return "pre-training"
    return "adapters" if is_adapter_tuning(task) else task.strip().lower()


def slot_mask(tables: Dataset, model_name: str, cluster: Cluster, seq_len: int) -> pd.Series:
    """The rows of ``tables`` that ran ``model_name`` (a catalog name) on ``cluster`` at ``seq_len``."""
    frame = tables.frame
    if "config.model_name" not in frame:
        return pd.Series(False, index=frame.index)
    names = frame["config.model_name"].map(catalog_name)
    accel = frame["hardware.accelerator"].map(accelerator_name)
    gpus = pd.to_numeric(frame.get("config.n_gpus"), errors="coerce")
    seq = pd.to_numeric(frame.get("config.seq_len"), errors="coerce")
    return (names == model_name) & (accel == cluster.spec.name) & (gpus == cluster.gpus) & (seq == seq_len)


def published_layouts(tables: Dataset, model_name: str, cluster: Cluster, seq_len: int, global_batch: int,
                      precisions: Sequence[str], task: object = None) -> pd.DataFrame:
    """The rows of ``tables`` that measured the plan's job (the module docstring): one per layout
    (repeats of one configuration: the latest), by measured tokens/s per GPU, best first. Columns:
    the frame's, plus ``measured_tokens_per_s_per_device`` (NaN for an OOM row) and ``label``
    (where it was published)."""
    frame = tables.frame
    mask = slot_mask(tables, model_name, cluster, seq_len) & frame["status"].isin(["ok", "oom"])
    batch = pd.to_numeric(frame.get("config.global_batch_size"), errors="coerce")
    mask &= batch == global_batch
    mask &= frame.get("config.precision", pd.Series(None, index=frame.index)).isin(list(precisions))
    mask &= frame.get("config.task", pd.Series(None, index=frame.index)).map(task_kind) == task_kind(task)
    rows = frame[mask].copy()
    if rows.empty:
        return rows
    per_dev = pd.to_numeric(rows.get("metrics.throughput_per_device"), errors="coerce")
    if tables.target == "metrics.throughput":  # a global target: per GPU is that over the GPUs
        per_dev = pd.to_numeric(rows["metrics.throughput"], errors="coerce") / cluster.gpus
    rows["measured_tokens_per_s_per_device"] = np.where(rows["status"] == "ok", per_dev, np.nan)
    rows = rows.sort_values("started_at", ascending=False, na_position="last")
    rows = rows.drop_duplicates("config_key", keep="first")
    rows["label"] = [_label(r) for r in rows.to_dict("records")]
    return rows.sort_values("measured_tokens_per_s_per_device", ascending=False, na_position="last")


def _label(row: dict) -> str:
    source = row.get("annotations.source") or row.get("source") or "published"
    where = row.get("annotations.notes") or ""
    return f"{source}" + (f", {where}" if isinstance(where, str) and where else "")


__all__ = ["accelerator_name", "catalog_name", "published_layouts", "slot_mask", "task_kind"]
