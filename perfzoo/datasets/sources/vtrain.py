"""The vTrain ground-truth layout: ``ground_truth_single.csv`` and ``ground_truth_multi.csv``
(the same columns after a leading ``Parameters (billion)``), one row per configuration of
Megatron-DeepSpeed GPT training on A100s. Records are ``source="published"``,
``workload="llm"``, config in the LLM vocabulary of ``docs/architecture.md``.

Example
-------
>>> from perfzoo.datasets import external_data_dir
>>> records = read_vtrain(external_data_dir() / "vtrain_ground_truth_single.csv")
>>> len(records), records[0].metrics.throughput == 16 * 1024 / 0.372160408
(1440, True)
"""

from __future__ import annotations

import math
from datetime import datetime, timezone
from pathlib import Path
from typing import Sequence

from perfzoo.datasets.sources._base import Load
from perfzoo.datasets.sources._csv import CsvSource, iter_rows, read_table, require_columns
from perfzoo.datasets.sources._llm import RecordBuilder, llm_config
from perfzoo.records import JobRecord

VTRAIN_PARAMS = "Parameters (billion)"
VTRAIN_TIME = "iteration time (ms)"
VTRAIN_CONFIG = {  # vTrain header -> config key
    "# GPUs": "n_gpus",
    "global batch": "global_batch_size",
    "micro batch": "micro_batch_size",
    "hidden size": "hidden_dim",
    "attention heads": "n_heads",
    "# layers": "n_layers",
    "sequence length": "seq_len",
    "tensor parallelism": "tp",
    "data parallelism": "dp",
    "pipeline parallelism": "pp",
}
VTRAIN_COLUMNS = (*VTRAIN_CONFIG, VTRAIN_TIME)
VTRAIN_SOURCE = "vTrain (VIA Research Group, KAIST)"
VTRAIN_DATE = datetime(2024, 9, 26, tzinfo=timezone.utc)  # commit f8dda8473a48


class VTrainSource(CsvSource):
    """vTrain ground-truth CSVs; target: tokens/s of the whole job."""

    name = "vtrain"
    title = "vTrain"
    describe = f"the vTrain layout ({', '.join(VTRAIN_COLUMNS)})"
    columns = VTRAIN_COLUMNS
    target = "metrics.throughput"
    target_unit = "tokens/s"
    scale_column = "config.n_gpus"
    group_columns = ("config.model_name",)

    def read(self, paths: Sequence[Path]) -> Load:
        builder = RecordBuilder()
        return Load([record for path in paths for record in _records(path, builder, VTRAIN_DATE)], [])


def read_vtrain(path: Path, published_at: datetime = VTRAIN_DATE) -> list[JobRecord]:
    """Job records from a vTrain ground-truth CSV, single-node or multi-node layout.

    Throughput is global batch x sequence length / (iteration time / 1000), in tokens/s.
    ``published_at`` is every record's ``started_at`` (default: the vTrain commit date,
    2024-09-26). Shapes vTrain does not state follow GPT: ``ffn_dim = 4 * hidden_dim``,
    ``n_kv_heads = n_heads``; ``n_params`` comes from ``Parameters (billion)`` when present.
    """
    return _records(path, RecordBuilder(), published_at)


def _records(path: Path, builder: RecordBuilder, published_at: datetime) -> list[JobRecord]:
    """The records of one file; ``builder`` keeps job ids distinct across the files of one read."""
    frame = read_table(path, "vTrain")
    require_columns(frame, path, VTRAIN_COLUMNS, f"vTrain (optionally led by {VTRAIN_PARAMS!r})")
    records = []
    for row in iter_rows(frame, path):
        shape = {key: row.number(column, whole=True, required=True) for column, key in VTRAIN_CONFIG.items()}
        for column, key in VTRAIN_CONFIG.items():
            if shape[key] < 1:
                raise row.error(column, f"{shape[key]} is not a positive count")
        if shape["tp"] * shape["pp"] * shape["dp"] != shape["n_gpus"]:
            raise row.error("# GPUs", f"{shape['n_gpus']} GPUs but tensor x pipeline x data parallelism = "
                                      f"{shape['tp']} x {shape['pp']} x {shape['dp']} = "
                                      f"{shape['tp'] * shape['pp'] * shape['dp']}; the degrees must multiply "
                                      "to the GPU count")
        step_ms = row.number(VTRAIN_TIME, required=True)
        if step_ms <= 0:
            raise row.error(VTRAIN_TIME, f"{step_ms} is not a positive time")
        billions = row.number(VTRAIN_PARAMS)
        grad_accum = shape["global_batch_size"] / (shape["micro_batch_size"] * shape["dp"])
        config = llm_config(
            **shape,
            model_name=f"gpt-{shape['n_layers']}L-{shape['hidden_dim']}h",
            ffn_dim=4 * shape["hidden_dim"], n_kv_heads=shape["n_heads"],
            n_params=None if billions is None else round(billions * 1e9),
            grad_accum=int(grad_accum) if grad_accum.is_integer() else grad_accum,
            cp=1, fsdp="none",
        )
        n_gpus = shape["n_gpus"]
        throughput = shape["global_batch_size"] * shape["seq_len"] / (step_ms / 1000)
        records.append(builder.record(
            row, config,
            {"accelerator": "A100", "accelerator_count": n_gpus, "nodes": math.ceil(n_gpus / 8)},
            provenance=f"vTrain ground truth {path.name}, line {row.line}",
            started_at=published_at, status="ok",
            metrics={"throughput": throughput, "throughput_per_device": throughput / n_gpus,
                     "throughput_unit": "tokens/s", "throughput_stat": "reported",
                     "step_time_mean_s": step_ms / 1000},
            annotations={"source": VTRAIN_SOURCE, "file": path.name, "line": row.line},
        ))
    return records
