"""A user's measured runs as a CSV: one run per row, the config in the keys ``predict`` takes
(:mod:`perfzoo.llmconfig`: ``model``, ``seq_len``, ``n_gpus``, ``tp``, ..., ``accelerator``) and
its measured throughput, ``tokens_per_s_per_device`` (or ``tokens_per_sec_per_gpu``, or the
job's ``tokens_per_s``). What ``--calibrate`` reads besides published tables and record stores::

    model,seq_len,global_batch_size,micro_batch_size,n_gpus,tp,pp,precision,accelerator,tokens_per_s_per_device
    llama3-8b,8192,128,1,64,1,1,bf16,H100-SXM-80GB,9250

Each row passes the front door (:func:`perfzoo.llmconfig.check`); a row it refuses, or without a
positive measurement, is a :class:`~perfzoo.datasets.sources.DataError` naming its line: a run that cannot
be priced must not anchor anything. Records are rows of a table, as a published table's are
(``source="published"``: measured outside perfzoo's harness), dated by an optional ``date`` column.

>>> import tempfile, pathlib
>>> path = pathlib.Path(tempfile.mkdtemp()) / "runs.csv"
>>> _ = path.write_text("model,seq_len,n_gpus,accelerator,precision,tokens_per_s_per_device\\n"
...                     "llama3-8b,8192,8,H100-SXM-80GB,bf16,9000\\n")
>>> source = RunsSource()
>>> source.detect(path), source.read([path]).records[0].metrics.throughput_per_device
(True, 9000.0)
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Sequence

from perfzoo import llmconfig
from perfzoo.console import DataError
from perfzoo.datasets.sources._base import Load
from perfzoo.datasets.sources._csv import CsvSource, Row, header, is_null, read_table
from perfzoo.datasets.sources._llm import LLM_CONFIG_KEYS, RecordBuilder, llm_config
from perfzoo.records import JobRecord

PER_DEVICE = ("tokens_per_s_per_device", "tokens_per_sec_per_gpu")
GLOBAL = ("tokens_per_s",)
MEASURED = PER_DEVICE + GLOBAL


class RunsSource(CsvSource):
    """Measured runs in the front door's keys; target: tokens/s per device."""

    name = "runs"
    title = "runs"
    describe = f"a runs CSV (the keys predict takes: model or the shape, seq_len, n_gpus, accelerator, ...; and {MEASURED[0]})"
    columns = MEASURED
    target = "metrics.throughput_per_device"
    target_unit = "tokens/s"
    scale_column = "config.n_gpus"
    group_columns = ("config.model_name", "hardware.accelerator")

    def detect(self, path: Path) -> bool:
        if path.suffix.lower() != ".csv":
            return False
        found = set(header(path, "runs"))
        return bool(found & set(MEASURED)) and {"seq_len", "n_gpus", "accelerator"} <= found \
            and bool(found & {"model", "n_layers"})

    def read(self, paths: Sequence[Path]) -> Load:
        builder = RecordBuilder()
        return Load([record for path in paths for record in _records(path, builder)], [])


def _records(path: Path, builder: RecordBuilder) -> list[JobRecord]:
    frame = read_table(path, "runs")
    columns = [c for c in MEASURED if c in frame.columns]
    keys = [c for c in frame.columns if c not in MEASURED and c != "date"]
    records = []
    for line, cells in enumerate(frame.to_dict("records"), 2):  # line 1 is the header
        row = Row(path, line, cells)
        given = {k: cells[k].strip() for k in keys if not is_null(cells[k])}
        try:
            cfg = llmconfig.check(given)
        except llmconfig.ConfigError as exc:
            raise DataError(f"{row.where}: {exc}") from None
        measured = next((c for c in columns if not is_null(cells[c], numeric=True)), columns[0])
        value = row.number(measured, required=True)
        if value <= 0:
            raise row.error(measured, f"{value} is no measured throughput (a positive number)")
        per_device = value / cfg["n_gpus"] if measured in GLOBAL else value
        hardware = {k: cfg[k] for k in llmconfig.HARDWARE_KEYS if k in cfg}
        hardware.setdefault("accelerator_count", cfg["n_gpus"])
        spec = llmconfig.known_accelerator(cfg.get("accelerator"))
        nodes = math.ceil(cfg["n_gpus"] / spec.node_size) if spec is not None else None
        if "nodes" not in hardware and nodes and cfg["n_gpus"] % nodes == 0:  # as predict fills it (llmconfig.complete)
            hardware["nodes"] = nodes
        config = llm_config(**{k: cfg.get(k) for k in LLM_CONFIG_KEYS if k != "model_name"},
                            model_name=cfg.get("model_name"))
        config.update({k: v for k, v in cfg.items() if k not in config and k not in hardware and k != "model"})
        records.append(builder.record(
            row, config, hardware, provenance=f"runs file {path.name}, line {line}",
            started_at=row.date("date"), status="ok",
            metrics={"throughput": per_device * cfg["n_gpus"], "throughput_per_device": per_device,
                     "throughput_unit": "tokens/s", "throughput_stat": "reported"},
            annotations={"source": f"your runs ({path.name})", "file": path.name, "line": line}))
    return records

