"""Loaders for training-throughput tables other people published, read in place.

Two CSV layouts become lists of :class:`~perfzoo.records.JobRecord` (``source="published"``,
``workload="llm"``, config in the LLM vocabulary of ``docs/architecture.md``):

* the **vTrain** ground-truth layout, :func:`read_vtrain`: ``ground_truth_single.csv`` and
  ``ground_truth_multi.csv`` (the same columns after a leading ``Parameters (billion)``);
* the **published-table** schema of ``../shared/external/SOURCES.md``, :func:`read_published`,
  with missing architecture fields filled from ``model_architectures.csv``
  (:func:`read_architectures`).

:func:`detect_layout` tells the two apart by the header. Loaders only read: nothing is ever
written next to the data. A file that does not fit raises :class:`DataError` naming the file,
the line, the column and the value.

Example
-------
>>> from perfzoo.datasets import external_data_dir
>>> records = read_vtrain(external_data_dir() / "vtrain_ground_truth_single.csv")
>>> len(records), records[0].metrics.throughput == 16 * 1024 / 0.372160408
(1440, True)
"""

from __future__ import annotations

import math
import re
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path
from dataclasses import dataclass, field
from typing import Iterable, NamedTuple, Optional, Sequence, Union

import numpy as np
import pandas as pd

from perfzoo import analytic
from perfzoo.accelerators import spec as accelerator_spec
from perfzoo.records import SCHEMA_VERSION, JobRecord, job_id_for, parse_record

PathLike = Union[str, Path]


class DataError(ValueError):
    """A data file cannot be read as the layout it is in: says which file, line, column and value."""


# --- the layouts --------------------------------------------------------------------------

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

PUBLISHED_COLUMNS = (
    "source", "date", "date_basis", "model_name", "task", "n_params", "n_layers", "hidden_dim",
    "ffn_dim", "n_heads", "n_kv_heads", "vocab_size", "seq_len", "global_batch_size",
    "global_batch_tokens", "micro_batch_size", "grad_accum", "n_gpus", "gpu_type", "system",
    "tp", "pp", "cp", "dp", "ep", "vp", "fsdp", "precision", "activation_checkpointing",
    "compile", "other_opts", "tokens_per_sec_per_gpu", "tflops_per_gpu", "mfu",
    "peak_memory_gib", "variant", "derived_fields", "notes", "provenance",
)
PUBLISHED_REQUIRED = ("source", "date", "model_name", "seq_len", "n_gpus", "gpu_type",
                      "tokens_per_sec_per_gpu")  # columns every file has; a row's cells may be unknown
ARCH_COLUMNS = ("model_key", "aliases_in_csvs")
ARCH_FIELDS = ("n_params", "n_layers", "hidden_dim", "ffn_dim", "n_heads", "n_kv_heads",
               "vocab_size", "n_experts", "experts_per_token")
ARCHITECTURES_FILE = "model_architectures.csv"

# The LLM config vocabulary (docs/architecture.md), plus ``vp`` (virtual pipeline stages):
# every LLM record carries every key, None where unknown, so frames line up across sources.
LLM_CONFIG_KEYS = (
    "model_name", "task", "n_layers", "hidden_dim", "ffn_dim", "n_heads", "n_kv_heads", "vocab_size",
    "n_params", "n_experts", "experts_per_token", "seq_len", "global_batch_size",
    "micro_batch_size", "grad_accum", "n_gpus", "tp", "pp", "cp", "dp", "ep", "vp", "fsdp",
    "precision", "activation_checkpointing", "compile",
)

LAYOUTS = {"vtrain": VTRAIN_COLUMNS, "published": PUBLISHED_COLUMNS}


# --- reading CSV text ---------------------------------------------------------------------

def read_table(path: PathLike, what: str, header_only: bool = False) -> pd.DataFrame:
    """Every cell of a CSV as text ('' when blank), header stripped, byte-order mark dropped.

    ``what`` names the layout in error messages. Raises :class:`DataError` for an empty file,
    a file with a header but no rows, or text that is not CSV; ``FileNotFoundError`` and
    ``PermissionError`` name the path. ``header_only`` reads just the header line.
    """
    path = Path(path)
    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False, encoding="utf-8-sig",
                            skipinitialspace=True, nrows=0 if header_only else None)
    except FileNotFoundError:
        raise FileNotFoundError(f"{path}: no such file") from None
    except PermissionError:
        raise PermissionError(f"{path}: not readable (permission denied); check its permissions") from None
    except IsADirectoryError:
        raise DataError(f"{path}: is a directory, expected a {what} CSV file") from None
    except pd.errors.EmptyDataError:
        raise DataError(f"{path}: the file is empty; a {what} CSV needs a header line and rows") from None
    except (pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise DataError(f"{path}: not a readable CSV file ({str(exc).strip()})") from None
    frame.columns = [str(c).strip() for c in frame.columns]
    if frame.empty and not header_only:
        raise DataError(f"{path}: has a header but no rows; a {what} CSV needs at least one row")
    return frame


def detect_layout(path: PathLike) -> str:
    """``'vtrain'`` or ``'published'``: the layout whose columns the header holds most of.

    >>> from perfzoo.datasets import external_data_dir
    >>> detect_layout(external_data_dir() / "torchtitan_benchmarks.csv")
    'published'
    """
    header = read_table(path, "data", header_only=True).columns
    share = {name: sum(c in header for c in cols) / len(cols) for name, cols in LAYOUTS.items()}
    best = max(share, key=share.get)
    if share[best] < 0.5:
        raise DataError(
            f"{path}: not a known CSV layout (header: {', '.join(header)}). perfzoo reads "
            f"the vTrain layout ({', '.join(VTRAIN_COLUMNS)}) and the published-table schema "
            f"({', '.join(PUBLISHED_COLUMNS[:6])}, ...; see SOURCES.md)")
    return best


def require_columns(frame: pd.DataFrame, path: PathLike, required: Sequence[str], what: str) -> None:
    """Raise :class:`DataError` naming every required column the file lacks."""
    missing = [c for c in required if c not in frame.columns]
    if missing:
        raise DataError(
            f"{path}: missing column{'s' if len(missing) > 1 else ''} "
            f"{', '.join(repr(c) for c in missing)}; the {what} layout needs the columns "
            f"{', '.join(required)}")


# Spellings of "unknown" that published tables use; such a cell reads as blank. ``none`` is
# not among them for categorical columns (activation checkpointing "none" is a value).
NULL_SPELLINGS = frozenset({"", "n/a", "na", "n.a.", "nan", "null", "-", "--", "\u2014", "\u2013", "?",
                            "unknown", "tbd", "not stated", "not available", "not reported"})
NUMERIC_NULL_SPELLINGS = NULL_SPELLINGS | {"none"}


def is_null(text: Optional[str], numeric: bool = False) -> bool:
    """True when a cell's text spells an unknown value (blank, ``n/a``, ``N/A``, ``-``, ``\u2014``, ...).

    >>> [is_null(t) for t in ("", " N/A ", "\u2014", "none", "8")], is_null("none", numeric=True)
    ([True, True, True, False, False], True)
    """
    return (text or "").strip().lower() in (NUMERIC_NULL_SPELLINGS if numeric else NULL_SPELLINGS)


_NUMBER = re.compile(r"\s*([-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)(\s*\(.*\)|\s+[^\d\s].*)?\s*")


def split_number(text: str) -> tuple[Optional[float], str]:
    """``(number, comment)`` for a cell: a number optionally followed by a comment.

    A blank cell, or a null spelling (:func:`is_null`: ``n/a``, ``-``, ...), gives ``(None, '')``;
    text that does not start with a number raises ValueError.

    >>> split_number("256 (doc text also says 512)"), split_number("33.71"), split_number("n/a")
    ((256.0, '(doc text also says 512)'), (33.71, ''), (None, ''))
    >>> split_number("fast")
    Traceback (most recent call last):
    ValueError: 'fast' is not a number
    """
    if is_null(text, numeric=True):
        return None, ""
    match = _NUMBER.fullmatch(text)
    if not match:
        raise ValueError(f"{text!r} is not a number")
    return float(match.group(1)), (match.group(2) or "").strip()


def phrase_rules(text: str, rules: tuple[tuple[object, tuple[str, ...]], ...]) -> object:
    """The value of the first rule one of whose phrases occurs, as whole words, in ``text``.

    Case, punctuation and underscores are ignored; None when no rule matches.

    >>> phrase_rules("FP8 (Float8 linears) + BF16", PRECISION_RULES), phrase_rules("amp_bf16", PRECISION_RULES)
    ('fp8', 'bf16')
    """
    words = " " + " ".join(re.findall(r"[a-z0-9]+", text.lower())) + " "
    for value, phrases in rules:
        if any(f" {p} " in words for p in phrases):
            return value
    return None


PRECISION_RULES = (
    ("nvfp4", ("nvfp4",)), ("mxfp8", ("mxfp8",)), ("fp8", ("fp8", "float8")),
    ("bf16", ("bf16", "bfloat16")), ("fp16", ("fp16", "float16")), ("fp32", ("fp32", "float32")),
)
FSDP_RULES = (
    ("shard_grad_op", ("shard grad op", "zero2")), ("no_shard", ("no shard",)),
    ("hybrid_shard", ("hybrid shard", "hsdp")),
    ("full_shard", ("full shard", "fsdp", "fsdp2", "dp shard", "zero3")), ("none", ("none", "ddp")),
)
CHECKPOINTING_RULES = (
    ("selective", ("selective",)), ("full", ("full", "true")), ("none", ("none", "false", "off")),
)
COMPILE_RULES = ((True, ("true", "yes", "on")), (False, ("false", "no", "off")))
CATEGORICAL_RULES = {"precision": PRECISION_RULES, "fsdp": FSDP_RULES,
                     "activation_checkpointing": CHECKPOINTING_RULES, "compile": COMPILE_RULES}


class Row:
    """Typed access to the text cells of one CSV row; errors name file, line, column and value.

    Cells whose text was normalised (a number with a comment, a categorical spelling) are
    remembered in :attr:`raw`, so records keep the text they came from. Null spellings
    (:func:`is_null`) read as unknown and are listed in :attr:`nulls`; with ``lenient=True`` a
    cell that holds no number is unknown too, listed in :attr:`unreadable` (and kept in ``raw``).
    """

    def __init__(self, path: Path, line: int, cells: dict[str, str]):
        self.path, self.line, self.cells = path, line, cells
        self.raw: dict[str, str] = {}
        self.nulls: list[str] = []
        self.unreadable: list[str] = []

    @property
    def where(self) -> str:
        return f"{self.path}, line {self.line}"

    def error(self, column: str, problem: str) -> DataError:
        return DataError(f"{self.where}, column '{column}': {problem}")

    def _cell(self, column: str, numeric: bool) -> str:
        """The cell text, '' for a null spelling (noted in :attr:`nulls` unless blank)."""
        text = self.cells.get(column, "")
        if is_null(text, numeric):
            if text.strip():
                self.nulls.append(column)
            return ""
        return text

    def text(self, column: str) -> Optional[str]:
        """The stripped cell text, None when blank, absent or a null spelling."""
        return self._cell(column, numeric=False).strip() or None

    def number(self, column: str, whole: bool = False, required: bool = False,
               lenient: bool = False) -> Union[int, float, None]:
        """The cell as a number (int if ``whole``); None when unknown unless ``required``."""
        text = self._cell(column, numeric=True)
        kind = "a whole number" if whole else "a number"
        try:
            value, comment = split_number(text)
            if value is not None and whole and not value.is_integer():
                raise ValueError(text)
        except ValueError:
            if lenient and not required:
                self.unreadable.append(column)
                self.raw[column] = text.strip()
                return None
            raise self.error(column, f"{text!r} is not {kind}; fix the cell, or leave it blank "
                                     "for unknown") from None
        if value is None:
            if required:
                raise self.error(column, "is blank; every row needs a value here")
            return None
        if comment:
            self.raw[column] = text.strip()
        return int(value) if whole else value

    def category(self, column: str) -> object:
        """The cell mapped to the config vocabulary by :data:`CATEGORICAL_RULES` (None if no rule fits)."""
        text = self.text(column)
        if text is None:
            return None
        value = phrase_rules(text, CATEGORICAL_RULES[column])
        if str(value).lower() != text.lower():
            self.raw[column] = text
        return value


def iter_rows(frame: pd.DataFrame, path: Path) -> Iterable[Row]:
    """One :class:`Row` per data row; line numbers count the header as line 1."""
    for index, cells in enumerate(frame.to_dict("records")):
        yield Row(path, index + 2, cells)


# --- building records ---------------------------------------------------------------------

def llm_config(**values) -> dict:
    """A config with every key of :data:`LLM_CONFIG_KEYS`, in that order (None where not given)."""
    unknown = set(values) - set(LLM_CONFIG_KEYS)
    if unknown:
        raise ValueError(f"not LLM config keys: {sorted(unknown)}")
    return {key: values.get(key) for key in LLM_CONFIG_KEYS}


def config_key(workload: str, config: dict, accelerator: str, accelerator_count: int, repeat: int = 0) -> str:
    """The key equal for jobs that measure the same configuration on the same hardware.

    It is the job id of the configuration's first measurement (``repeat=0``); later copies of
    a published row get job ids with ``repeat=1, 2, ...`` and the same key.

    >>> config_key("llm", {"tp": 2}, "A100", 8) == config_key("llm", {"tp": 2}, "A100", 8)
    True
    """
    hardware = {"accelerator": accelerator, "accelerator_count": accelerator_count}
    return job_id_for(workload, config, hardware, repeat)


class _Builder:
    """Turns rows into published LLM records; repeated configurations get distinct job ids."""

    def __init__(self):
        self.seen: Counter = Counter()

    def record(self, row: Row, config: dict, hardware: dict, **fields) -> JobRecord:
        key = config_key("llm", config, hardware["accelerator"], hardware["accelerator_count"])
        repeat, self.seen[key] = self.seen[key], self.seen[key] + 1
        job_id = key if repeat == 0 else config_key(
            "llm", config, hardware["accelerator"], hardware["accelerator_count"], repeat)
        data = {"schema_version": SCHEMA_VERSION, "record_id": job_id, "job_id": job_id,
                "source": "published", "workload": "llm", "config": config, "hardware": hardware,
                "software": {}, **fields}
        return parse_record(data, where=f"{row.where}: ")


def read_vtrain(path: PathLike, published_at: datetime = VTRAIN_DATE) -> list[JobRecord]:
    """Job records from a vTrain ground-truth CSV, single-node or multi-node layout.

    Throughput is global batch x sequence length / (iteration time / 1000), in tokens/s.
    ``published_at`` is every record's ``started_at`` (default: the vTrain commit date,
    2024-09-26). Shapes vTrain does not state follow GPT: ``ffn_dim = 4 * hidden_dim``,
    ``n_kv_heads = n_heads``; ``n_params`` comes from ``Parameters (billion)`` when present.
    """
    path = Path(path)
    frame = read_table(path, "vTrain")
    require_columns(frame, path, VTRAIN_COLUMNS, f"vTrain (optionally led by {VTRAIN_PARAMS!r})")
    builder, records = _Builder(), []
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


def read_architectures(path: PathLike) -> dict[str, dict]:
    """Architecture fields by model name, from ``model_architectures.csv``.

    Each pipe-separated alias in ``aliases_in_csvs`` maps to that row's ``model_key`` and
    numeric fields of :data:`ARCH_FIELDS`. Cells holding no number (``MLA``, ``see n_params
    column in CSV``) are unknown; a number followed by a comment counts as the number.
    """
    path = Path(path)
    frame = read_table(path, "model-architecture")
    require_columns(frame, path, ARCH_COLUMNS, "model-architecture")
    lookup = {}
    for row in iter_rows(frame, path):
        key = row.text("model_key")
        if key is None or key.startswith("("):  # "(unlisted)": names with no architecture
            continue
        fields: dict = {"model_key": key}
        for field in ARCH_FIELDS:
            try:
                value = split_number(row.cells.get(field, ""))[0]
            except ValueError:
                value = None
            fields[field] = None if value is None else round(value)
        for alias in (row.text("aliases_in_csvs") or "").split("|"):
            if alias.strip():
                lookup[alias.strip()] = fields
    return lookup


_FAMILY = re.compile(r"\b(GB\d{3}|[ABH]\d{2,3}|MI\d{3}X?|L40S?|V100|Blackwell|TPU ?v\d\w*)", re.IGNORECASE)
_MEMORY = re.compile(r"(\d+(?:\.\d+)?)\s*Gi?B\b")


def accelerator_hardware(gpu_type: str, count: int) -> dict:
    """Hardware fields from a free-text GPU description.

    The name is the GPU family plus the memory stated before any parenthesis; nodes assume 8
    GPUs a node (4 for GB200 trays).

    >>> accelerator_hardware("H100-SXM-96GB-HBM2e (lower TDP)", 16)["accelerator"]
    'H100-96GB'
    """
    head = gpu_type.split("(")[0]
    family, head_memory, memory = _FAMILY.search(head), _MEMORY.search(head), _MEMORY.search(gpu_type)
    name = family.group(1) if family else head.strip()
    if family and head_memory:
        name += f"-{head_memory.group(1)}GB"
    per_node = 4 if name.upper().startswith("GB") else 8
    return {"accelerator": name, "accelerator_count": count,
            "accelerator_memory_gib": float(memory.group(1)) if memory else None,
            "nodes": math.ceil(count / per_node)}


def _started_at(row: Row) -> datetime:
    text = row.text("date")
    if text is None:
        raise row.error("date", "is blank; every row needs the publication date (YYYY-MM-DD)")
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise row.error("date", f"{text!r} is not a date (expected YYYY-MM-DD)") from None
    return when if when.tzinfo else when.replace(tzinfo=timezone.utc)


_WHOLE_COLUMNS = ("n_params", "n_layers", "hidden_dim", "ffn_dim", "n_heads", "n_kv_heads", "vocab_size",
                  "seq_len", "global_batch_size", "micro_batch_size", "grad_accum", "tp", "pp", "cp",
                  "dp", "ep", "vp")
_TEXT_ANNOTATIONS = ("source", "variant", "notes", "derived_fields", "date_basis", "system",
                     "other_opts", "gpu_type")
# variants that mark a figure a later document replaced (SOURCES.md); they stay in the data,
# grouped with their configuration, and are counted in the load report
SUPERSEDED = re.compile(r"superseded|removed_in_later|earlier_version|previous_version", re.IGNORECASE)
# a row whose FLOP figures count activation recomputation (hardware FLOPs, "HFU-like")
_HARDWARE_FLOPS = re.compile(r"HFU-like|includes activation recomputation|recompute FLOPs counted", re.IGNORECASE)


@dataclass
class LoadReport:
    """What reading one published-table file did with each of its rows.

    Every row is exactly one of ``labelled`` (a tokens/s target, published or derived),
    ``unlabelled`` (a configuration without a usable target: kept for prediction, left out of
    scoring), ``oom`` or ``skipped`` (cannot be a job: no GPU count, no accelerator; each with
    its line and reason). ``derived`` counts what was computed rather than read, by kind;
    ``superseded`` counts rows a later document version replaced; ``null_cells`` and
    ``unreadable_cells`` count, per column, cells read as unknown. ``derivation_check`` is the
    median of derived / published tokens/s over the rows that publish both (None without).
    """

    file: str
    rows: int = 0
    labelled: int = 0
    unlabelled: int = 0
    oom: int = 0
    superseded: int = 0
    derived: Counter = field(default_factory=Counter)
    skipped: list[tuple[int, str]] = field(default_factory=list)
    null_cells: Counter = field(default_factory=Counter)
    unreadable_cells: Counter = field(default_factory=Counter)
    flop_convention: str = ""
    derivation_ratios: list[float] = field(default_factory=list, repr=False)

    @property
    def derivation_check(self) -> Optional[float]:
        return float(pd.Series(self.derivation_ratios).median()) if self.derivation_ratios else None

    def to_dict(self) -> dict:
        """JSON-ready counts (``skipped`` as ``{line: reason}``)."""
        return {"file": self.file, "rows": self.rows, "labelled": self.labelled,
                "unlabelled": self.unlabelled, "oom": self.oom, "skipped": len(self.skipped),
                "superseded": self.superseded, "derived": dict(self.derived),
                "skipped_rows": {str(line): why for line, why in self.skipped},
                "null_cells": dict(self.null_cells), "unreadable_cells": dict(self.unreadable_cells),
                "flop_convention": self.flop_convention, "derivation_check": self.derivation_check}

    def __str__(self) -> str:
        parts = [f"{self.file}: {self.rows} rows read: {self.labelled} labelled "
                 f"({sum(v for k, v in self.derived.items() if k.startswith('tokens/s'))} of them derived), "
                 f"{self.unlabelled} unlabelled, {self.oom} OOM, {len(self.skipped)} skipped; "
                 f"{self.superseded} superseded variants"]
        if self.derived:
            parts.append("derived: " + ", ".join(f"{k} {v}" for k, v in sorted(self.derived.items())))
        if self.flop_convention:
            parts.append(f"FLOP convention: {self.flop_convention}")
        if self.derivation_check is not None:
            parts.append(f"derived/published tokens/s on rows giving both: median {self.derivation_check:.3f}")
        for line, why in self.skipped:
            parts.append(f"skipped line {line}: {why}")
        if self.null_cells:
            parts.append("read as unknown: " + ", ".join(f"{c} {n}" for c, n in sorted(self.null_cells.items())))
        if self.unreadable_cells:
            parts.append("not numbers, kept as text only: " + ", ".join(
                f"{c} {n}" for c, n in sorted(self.unreadable_cells.items())))
        return "\n  ".join(parts)


class PublishedLoad(NamedTuple):
    """The records read from published-table files, and one :class:`LoadReport` per file."""

    records: list[JobRecord]
    reports: list[LoadReport]


def flops_per_token_published(configs: Sequence[dict]) -> list[dict[bool, tuple[Optional[float], str]]]:
    """Training FLOPs per token of published rows, computed for all rows at once, and the
    convention used (for the record), keyed by whether the source counts hardware FLOPs.

    ``6N + 12*L*d*s`` (:func:`perfzoo.analytic.flops_per_token`), plus the recomputed forward
    for hardware FLOPs (full recompute unless the row says selective); ``6N`` (``8N``) alone when
    only ``n_params`` is known; None when neither the shape nor ``n_params`` is.

    >>> cfg = llm_config(n_layers=24, hidden_dim=1024, n_heads=16, seq_len=1024)
    >>> flops_per_token_published([cfg])[0][False]
    (2113929216.0, 'model FLOPs 6N+12Lds')
    """
    frame = pd.DataFrame(list(configs))
    checkpointing = frame["activation_checkpointing"]
    recomputed = frame.assign(activation_checkpointing=checkpointing.where(
        checkpointing.notna() & (checkpointing != "none"), "full"))
    shaped = frame[["n_layers", "hidden_dim", "seq_len"]].notna().all(axis=1).to_numpy()  # nothing guessed
    model = np.where(shaped, analytic.flops_per_token(frame).to_numpy(float), np.nan)
    hardware = np.where(shaped, analytic.flops_per_token(recomputed, recompute=True).to_numpy(float), np.nan)
    params = pd.to_numeric(frame["n_params"], errors="coerce").to_numpy(float)
    return [{False: _with_convention(m, n, False), True: _with_convention(h, n, True)}
            for m, h, n in zip(model, hardware, params)]


def _with_convention(value: float, n_params: float, hardware: bool) -> tuple[Optional[float], str]:
    kind = "hardware FLOPs" if hardware else "model FLOPs"
    if not math.isnan(value):
        return float(value), f"{kind} 6N+12Lds" + ("+recompute" if hardware else "")
    if not math.isnan(n_params) and n_params > 0:
        return (8.0 if hardware else 6.0) * float(n_params), f"{kind} {'8N' if hardware else '6N'} (shape unknown)"
    return None, ""


def _gpu_count(row: Row) -> tuple[Optional[int], bool, Optional[str]]:
    """(n_gpus, derived?, reason when unknown): as published, else tp*pp*cp*dp when those are given."""
    n_gpus = row.number("n_gpus", whole=True)
    if n_gpus is not None:
        if n_gpus < 1:
            raise row.error("n_gpus", f"{n_gpus} is not a GPU count (>= 1)")
        return n_gpus, False, None
    degrees = [row.number(c, whole=True, lenient=True) for c in ("tp", "pp", "dp")]
    cp = row.number("cp", whole=True, lenient=True) or 1
    if None in degrees:
        return None, False, "no GPU count (n_gpus blank, and tp, pp, dp not all given)"
    return math.prod(degrees) * cp, True, None


@dataclass
class _Parsed:
    """One published row read into config and hardware, before its target is settled."""

    row: Row
    config: dict
    hardware: dict
    per_gpu: Optional[float]
    oom: bool
    tflops: Optional[float]
    mfu: Optional[float]
    derived: list[str]
    filled: list[str]
    arch_key: Optional[str]
    flops_by_convention: dict = field(default_factory=dict)  # flops_per_token_published, per file

    def flops(self, hardware_flops: bool) -> tuple[Optional[float], str]:
        return self.flops_by_convention[hardware_flops]


def _parse_row(row: Row, architectures: dict[str, dict], report: LoadReport) -> Optional[_Parsed]:
    """The row read, or None when it cannot be a job (counted as skipped in ``report``)."""
    n_gpus, from_degrees, why = _gpu_count(row)
    gpu_type = row.text("gpu_type")
    if n_gpus is None or gpu_type is None:
        report.skipped.append((row.line, why or "no accelerator (gpu_type blank)"))
        return None
    derived = ["n_gpus=tp*pp*cp*dp"] if from_degrees else []
    if from_degrees:
        report.derived["n_gpus from tp*pp*cp*dp"] += 1
    oom = "OOM" in ((row.text("tokens_per_sec_per_gpu") or "").upper(), (row.text("variant") or "").upper())
    config = llm_config(model_name=row.text("model_name"), task=row.text("task"), n_gpus=n_gpus,
                        **{key: row.number(key, whole=True, lenient=True) for key in _WHOLE_COLUMNS},
                        **{key: row.category(key) for key in CATEGORICAL_RULES})
    arch = architectures.get(config["model_name"] or "", {})
    filled = [f for f in ARCH_FIELDS if config[f] is None and arch.get(f) is not None]
    config.update({f: arch[f] for f in filled})

    def metric(column: str) -> Optional[float]:
        return None if (row.text(column) or "").upper() == "OOM" else row.number(column, lenient=True)

    return _Parsed(row, config, accelerator_hardware(gpu_type, n_gpus),
                   None if oom else metric("tokens_per_sec_per_gpu"), oom,
                   metric("tflops_per_gpu"), metric("mfu"), derived, filled,
                   arch["model_key"] if filled else None)


def file_flop_convention(rows: Sequence[_Parsed]) -> tuple[bool, str]:
    """Whether a file's FLOP figures count recompute (hardware FLOPs), and why.

    Read off the rows that publish both tokens/s and TFLOP/s: the FLOPs per token they imply,
    over the model FLOPs ``6N+12Lds``, sit near 1 for model FLOPs and near 4/3 for hardware
    FLOPs with full recompute. Without such rows: model FLOPs (a row can still say ``HFU-like``).
    """
    ratios = []
    for p in rows:
        flops, _ = p.flops(False)
        if p.per_gpu and p.tflops and flops:
            ratios.append(p.tflops * 1e12 / p.per_gpu / flops)
    if not ratios:
        return False, "model FLOPs (no row gives both tokens/s and TFLOP/s to tell)"
    median = float(pd.Series(ratios).median())
    hardware = median > (1 + 4 / 3) / 2
    return hardware, (f"{'hardware' if hardware else 'model'} FLOPs: on {len(ratios)} rows giving both, "
                      f"the implied FLOPs per token are {median:.2f}x 6N+12Lds")


def _derive_target(p: _Parsed, hardware_flops: bool) -> tuple[Optional[float], Optional[str], str]:
    """(tokens/s per GPU, kind, how) from TFLOP/s per GPU, else MFU; (None, None, why not)."""
    if p.tflops is None and p.mfu is None:
        return None, None, "no tokens/s, TFLOP/s or MFU"
    # a row that says its figures count recompute does; one that publishes MFU counts model
    # FLOPs (MFU's definition); any other row follows its file's convention
    basis = " ".join(p.row.text(c) or "" for c in ("derived_fields", "notes", "other_opts"))
    hardware_flops = bool(_HARDWARE_FLOPS.search(basis)) or (hardware_flops and p.mfu is None)
    flops, convention = p.flops(hardware_flops)
    if flops is None:
        return None, None, "architecture unknown (no shape, no n_params): FLOPs per token unknown"
    if p.tflops is not None:
        return p.tflops * 1e12 / flops, "tokens/s from TFLOP/s", (
            f"tokens_per_sec_per_gpu=tflops_per_gpu*1e12/flops_per_token ({convention}, {flops:.4g})")
    spec = accelerator_spec(p.hardware["accelerator"])
    peak = None if spec is None else spec.peak_flops.get("bf16")
    if peak is None:
        return None, None, f"MFU given but the peak FLOP/s of {p.hardware['accelerator']!r} is unknown"
    return p.mfu * peak / flops, "tokens/s from MFU", (
        f"tokens_per_sec_per_gpu=mfu*peak/flops_per_token (dense bf16 peak of {spec.name}, "
        f"{peak / 1e12:g} TFLOP/s; {convention}, {flops:.4g})")


def _published_record(p: _Parsed, builder: _Builder, hardware_flops: bool, convention: str,
                      report: LoadReport) -> JobRecord:
    row, per_gpu, derived, label = p.row, p.per_gpu, list(p.derived), "published"
    if not p.oom:
        value, kind, how = _derive_target(p, hardware_flops)
        if per_gpu is None and value is not None:
            per_gpu, label = value, kind
            report.derived[kind] += 1
            derived.append(f"{how}; file convention: {convention}")
        elif per_gpu is None:
            label = f"unlabelled: {how}"
        elif value is not None and per_gpu > 0:
            report.derivation_ratios.append(value / per_gpu)
    report.oom += p.oom
    report.labelled += per_gpu is not None
    report.unlabelled += not p.oom and per_gpu is None
    report.superseded += bool(SUPERSEDED.search(row.text("variant") or ""))
    n_gpus = p.hardware["accelerator_count"]
    metrics = {"throughput": None if per_gpu is None else per_gpu * n_gpus,
               "throughput_per_device": per_gpu, "throughput_unit": "tokens/s",
               "throughput_stat": "reported", "mfu": p.mfu, "tflops_per_device": p.tflops,
               "peak_memory_gib": row.number("peak_memory_gib", lenient=True)}
    annotations = {key: row.text(key) for key in _TEXT_ANNOTATIONS}
    annotations.update(global_batch_tokens=row.number("global_batch_tokens", whole=True, lenient=True),
                       arch_filled=",".join(p.filled) or None, arch_key=p.arch_key,
                       label=label, perfzoo_derived="; ".join(derived) or None,
                       file=row.path.name, line=row.line)
    annotations.update({f"{column}_raw": text for column, text in row.raw.items()})  # after every parse
    report.null_cells.update(row.nulls)
    report.unreadable_cells.update(row.unreadable)
    return builder.record(
        row, p.config, p.hardware,
        provenance=row.text("provenance") or row.where,
        started_at=_started_at(row),
        status="oom" if p.oom else "ok",
        failure={"kind": "oom", "message": row.text("notes") or "published as OOM"} if p.oom else None,
        metrics=metrics, annotations=annotations,
    )


def read_published(paths: Union[PathLike, Iterable[PathLike]],
                   architectures: Optional[dict[str, dict]] = None) -> PublishedLoad:
    """Job records from one or more published-table CSVs (the schema of SOURCES.md), with a
    :class:`LoadReport` per file that accounts for every row.

    * ``OOM`` in ``tokens_per_sec_per_gpu`` (or variant ``OOM``) gives a record with status
      ``oom``, a ``Failure(kind='oom')`` and no throughput.
    * ``metrics.throughput_per_device`` is the published tokens/s per GPU and
      ``metrics.throughput`` that times ``n_gpus``. Where tokens/s is not published it is
      derived from TFLOP/s per GPU, else from MFU (against the dense bf16 peak), over the
      training FLOPs per token of :func:`flops_per_token_published`; the formula and the FLOP
      convention go to ``annotations['perfzoo_derived']`` and ``annotations['label']`` says
      ``published``, ``tokens/s from TFLOP/s`` or ``tokens/s from MFU``. A row with none of
      these stays an unlabelled configuration (status ``ok``, no throughput; ``label`` says why).
    * Null spellings (``n/a``, ``NA``, ``-``, ``—``, ...) are unknown values; free text is
      normalised to the config vocabulary (``'BF16 (mixed precision)'`` -> ``'bf16'``,
      ``'selective op'`` -> ``'selective'``, ``'256 (doc text ...)'`` -> 256; text no rule
      knows -> None) and the original kept as ``annotations['<column>_raw']``.
    * A row without a GPU count (``n_gpus`` blank and not ``tp*pp*cp*dp``) or an accelerator
      cannot be a job: it is skipped and listed, with its line, in the report.
    * Blank architecture fields are filled from ``architectures`` (default: the
      ``model_architectures.csv`` beside the first file, if there is one) and listed in
      ``annotations['arch_filled']``. Repeated configurations get distinct job ids.

    A structurally broken file (missing columns, not CSV, a non-number where a row must have
    one, a bad date) raises :class:`DataError` naming the file, line and column.

    >>> from perfzoo.datasets import external_data_dir
    >>> load = read_published(external_data_dir() / "megatron_lm_readme_scaling.csv")
    >>> r = load.reports[0]; r.rows == r.labelled + r.unlabelled + r.oom + len(r.skipped)
    True
    """
    paths = [Path(paths)] if isinstance(paths, (str, Path)) else [Path(p) for p in paths]
    if architectures is None:
        beside = paths[0].parent / ARCHITECTURES_FILE if paths else None
        architectures = read_architectures(beside) if beside and beside.exists() else {}
    builder, records, reports = _Builder(), [], []
    for path in paths:
        frame = read_table(path, "published-table")
        require_columns(frame, path, PUBLISHED_REQUIRED, "published-table")
        report = LoadReport(file=path.name, rows=len(frame))
        parsed = [p for row in iter_rows(frame, path) if (p := _parse_row(row, architectures, report))]
        if parsed:
            for p, flops in zip(parsed, flops_per_token_published([p.config for p in parsed])):
                p.flops_by_convention = flops
        hardware_flops, report.flop_convention = file_flop_convention(parsed)
        records.extend(_published_record(p, builder, hardware_flops, report.flop_convention, report)
                       for p in parsed)
        reports.append(report)
    return PublishedLoad(records, reports)
