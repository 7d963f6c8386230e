"""Published layouts of a model on a cluster: what the shared tables measured, the plan's baseline.

:func:`published_layouts` finds, in a dataset of published tables (``published-llm``), the
measured layouts of the same model (by catalog name, :mod:`perfzoo.llmconfig.catalog`), on as many GPUs of
the same accelerator, at the same sequence length; the plan prices each with its own scorer and
says where it ranks and what the plan's pick would gain over it.
"""

from __future__ import annotations

from typing import Optional

import numpy as np
import pandas as pd

from perfzoo import llmconfig
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


def published_layouts(tables: Dataset, model_name: str, cluster: Cluster, seq_len: int,
                      global_batch: Optional[int] = None) -> pd.DataFrame:
    """The rows of ``tables`` that measured ``model_name`` (a catalog name) on ``cluster`` at
    ``seq_len``: one per layout (repeats of one configuration: the latest), those at
    ``global_batch`` first, then by measured tokens/s per GPU, best first. Columns: the
    frame's, plus ``measured_tokens_per_s_per_device`` (NaN for an OOM row), ``same_batch`` and
    ``label`` (where it was published)."""
    frame = tables.frame
    names = frame["config.model_name"].map(catalog_name) if "config.model_name" in frame else None
    if names is None:
        return frame.iloc[:0]
    accel = frame["hardware.accelerator"].map(accelerator_name)
    gpus = pd.to_numeric(frame.get("config.n_gpus"), errors="coerce")
    seq = pd.to_numeric(frame.get("config.seq_len"), errors="coerce")
    mask = (names == model_name) & (accel == cluster.spec.name) & (gpus == cluster.gpus) & (seq == seq_len)
    mask &= frame["status"].isin(["ok", "oom"])
    rows = frame[mask].copy()
    if rows.empty:
        return rows
    per_dev = pd.to_numeric(rows.get("metrics.throughput_per_device"), errors="coerce")
    if tables.target == "metrics.throughput":  # a global target: per GPU is that over the GPUs
        per_dev = pd.to_numeric(rows["metrics.throughput"], errors="coerce") / cluster.gpus
    rows["measured_tokens_per_s_per_device"] = np.where(rows["status"] == "ok", per_dev, np.nan)
    batch = pd.to_numeric(rows.get("config.global_batch_size"), errors="coerce")
    rows["same_batch"] = (batch == global_batch) if global_batch is not None else True
    rows = rows.sort_values("started_at", ascending=False, na_position="last")
    rows = rows.drop_duplicates("config_key", keep="first")
    rows["label"] = [_label(r) for r in rows.to_dict("records")]
    return rows.sort_values(["same_batch", "measured_tokens_per_s_per_device"], ascending=[False, False],
                            na_position="last")


def _label(row: dict) -> str:
    source = row.get("annotations.source") or row.get("source") or "published"
    where = row.get("annotations.notes") or ""
    return f"{source}" + (f", {where}" if isinstance(where, str) and where else "")


__all__ = ["accelerator_name", "catalog_name", "published_layouts"]
