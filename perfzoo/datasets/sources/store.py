"""Record stores as datasets: a folder holding ``records.jsonl`` (:class:`perfzoo.records.store.RecordStore`),
optionally ``dataset.json`` (metadata, :func:`read_metadata`) and ``README.md`` (the card).

>>> from perfzoo.datasets import bundled_dir
>>> source = RecordStoreSource()
>>> folder = [bundled_dir() / "llm-cpu"]
>>> source.detect(folder[0]), len(source.read(folder).records), source.metadata(folder)["name"]
(True, 329, 'llm-cpu')
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any, Sequence

from perfzoo import workloads
from perfzoo.console import DataError
from perfzoo.datasets.sources._base import Load, Source
from perfzoo.records import JobRecord
from perfzoo.records.store import RECORDS_FILE, RecordStore

METADATA_FILE = "dataset.json"
CARD_FILE = "README.md"


class RecordStoreSource(Source):
    """A record-store folder (or its ``records.jsonl``); what is not in its ``dataset.json`` is
    inferred from the frame."""

    name = "store"
    title = "record-store"
    describe = f"a record-store folder, or its {RECORDS_FILE}"

    def detect(self, path: Path) -> bool:
        return path.is_dir() or path.name == RECORDS_FILE

    def read(self, paths: Sequence[Path]) -> Load:
        directory = _folder(paths)
        if not (directory / RECORDS_FILE).is_file():
            raise FileNotFoundError(
                f"{directory}: no {RECORDS_FILE}; a record-store dataset folder holds {RECORDS_FILE} "
                f"(and optionally {METADATA_FILE} and {CARD_FILE})")
        records = RecordStore(directory, create=False).records()
        if not records:
            raise DataError(f"{directory / RECORDS_FILE}: holds no job records")
        return Load([with_implied(r) for r in records], [])

    def metadata(self, paths: Sequence[Path]) -> dict[str, Any]:
        """The fields of ``dataset.json``, the card, and by default the folder's name and
        ``record store <folder>`` as provenance."""
        directory = _folder(paths)
        card_file = directory / CARD_FILE
        return {"name": directory.name, "provenance": f"record store {directory}",
                "card": card_file.read_text(encoding="utf-8") if card_file.is_file() else "",
                **read_metadata(directory / METADATA_FILE)}


def with_implied(record: JobRecord) -> JobRecord:
    """A measured record with the config keys its workload's harness implies (``WorkloadSpec.implied``)
    that it predates: a copy, the stored line unchanged.

    >>> from perfzoo.datasets import bundled_dir
    >>> r = next(r for r in RecordStore(bundled_dir() / "llm-h100", create=False) if r.config["precision"] == "fp8")
    >>> "low_precision_backward" in r.config, with_implied(r).config["low_precision_backward"]
    (False, False)
    """
    implied = _implied(record.workload)
    if record.source != "measured" or implied is None:
        return record
    missing = {k: v for k, v in implied(record.config).items() if k not in record.config}
    return record.model_copy(update={"config": {**record.config, **missing}}) if missing else record


@lru_cache(maxsize=None)
def _implied(workload: str):
    """The workload's ``implied`` hook, looked up once per workload name (None for an unknown one)."""
    return workloads.get(workload).implied if workload in workloads.names() else None


def _folder(paths: Sequence[Path]) -> Path:
    """The one store folder ``paths`` names (the folder or its ``records.jsonl``)."""
    if len(paths) != 1:
        raise DataError(f"a record-store dataset is one folder, got {len(paths)} paths")
    return paths[0] if paths[0].is_dir() else paths[0].parent


_METADATA_TYPES = {"name": str, "target": str, "target_unit": str, "time_column": str,
                   "scale_column": str, "scale_threshold": (int, float), "group_columns": list,
                   "feature_columns": list, "provenance": str}


def read_metadata(path: Path) -> dict[str, Any]:
    """The known fields of a ``dataset.json`` ({} when there is none), type-checked."""
    if not path.is_file():
        return {}
    try:
        metadata = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise DataError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})") from None
    if not isinstance(metadata, dict):
        raise DataError(f"{path}: expected a JSON object of dataset metadata, got {type(metadata).__name__}")
    for key, kind in _METADATA_TYPES.items():
        value = metadata.get(key)
        bad_list = kind is list and isinstance(value, list) and not all(isinstance(v, str) for v in value)
        if value is not None and (not isinstance(value, kind) or isinstance(value, bool) or bad_list):
            expected = "a list of column names" if kind is list else getattr(kind, "__name__", "a number")
            raise DataError(f"{path}: field '{key}' = {value!r}: expected {expected}")
    return {key: metadata[key] for key in _METADATA_TYPES if metadata.get(key) is not None}
