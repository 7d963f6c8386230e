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
from typing import Iterable, Optional, Sequence, Union

import pandas as pd

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
                      "tokens_per_sec_per_gpu")
ARCH_COLUMNS = ("model_key", "aliases_in_csvs")
ARCH_FIELDS = ("n_params", "n_layers", "hidden_dim", "ffn_dim", "n_heads", "n_kv_heads",
               "vocab_size", "n_experts", "experts_per_token")
ARCHITECTURES_FILE = "model_architectures.csv"

# The LLM config vocabulary (docs/architecture.md), plus ``vp`` (virtual pipeline stages):
# every LLM record carries every key, None where unknown, so frames line up across sources.
LLM_CONFIG_KEYS = (
    "model_name", "n_layers", "hidden_dim", "ffn_dim", "n_heads", "n_kv_heads", "vocab_size",
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


_NUMBER = re.compile(r"\s*([-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)(\s*\(.*\)|\s+[^\d\s].*)?\s*")


def split_number(text: str) -> tuple[Optional[float], str]:
    """``(number, comment)`` for a cell: a number optionally followed by a comment.

    A blank cell gives ``(None, '')``; text that does not start with a number raises ValueError.

    >>> split_number("256 (doc text also says 512)"), split_number("33.71"), split_number("")
    ((256.0, '(doc text also says 512)'), (33.71, ''), (None, ''))
    >>> split_number("fast")
    Traceback (most recent call last):
    ValueError: 'fast' is not a number
    """
    if not text.strip():
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
    remembered in :attr:`raw`, so records keep the text they came from.
    """

    def __init__(self, path: Path, line: int, cells: dict[str, str]):
        self.path, self.line, self.cells = path, line, cells
        self.raw: dict[str, str] = {}

    @property
    def where(self) -> str:
        return f"{self.path}, line {self.line}"

    def error(self, column: str, problem: str) -> DataError:
        return DataError(f"{self.where}, column '{column}': {problem}")

    def text(self, column: str) -> Optional[str]:
        """The stripped cell text, None when blank or absent."""
        return self.cells.get(column, "").strip() or None

    def number(self, column: str, whole: bool = False, required: bool = False) -> Union[int, float, None]:
        """The cell as a number (int if ``whole``); None when blank unless ``required``."""
        text = self.cells.get(column, "")
        kind = "a whole number" if whole else "a number"
        try:
            value, comment = split_number(text)
        except ValueError:
            raise self.error(column, f"{text!r} is not {kind}; fix the cell, or leave it blank "
                                     "for unknown") from None
        if value is None:
            if required:
                raise self.error(column, "is blank; every row needs a value here")
            return None
        if comment:
            self.raw[column] = text.strip()
        if not whole:
            return value
        if not value.is_integer():
            raise self.error(column, f"{text!r} is not {kind}")
        return int(value)

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
_TEXT_ANNOTATIONS = ("source", "variant", "notes", "derived_fields", "date_basis", "task", "system",
                     "other_opts", "gpu_type")


def _published_record(row: Row, builder: _Builder, architectures: dict[str, dict]) -> JobRecord:
    n_gpus = row.number("n_gpus", whole=True, required=True)
    if n_gpus < 1:
        raise row.error("n_gpus", f"{n_gpus} is not a GPU count (>= 1)")
    gpu_type = row.text("gpu_type")
    if gpu_type is None:
        raise row.error("gpu_type", "is blank; every row needs the accelerator")

    def metric(column: str) -> Optional[float]:
        return None if (row.text(column) or "").upper() == "OOM" else row.number(column)

    oom = "OOM" in ((row.text("tokens_per_sec_per_gpu") or "").upper(), (row.text("variant") or "").upper())
    per_gpu = None if oom else row.number("tokens_per_sec_per_gpu")
    if per_gpu is None and not oom:
        raise row.error("tokens_per_sec_per_gpu", "is blank; give tokens/s per GPU, or OOM")
    config = llm_config(model_name=row.text("model_name"), n_gpus=n_gpus,
                        **{key: row.number(key, whole=True) for key in _WHOLE_COLUMNS},
                        **{key: row.category(key) for key in CATEGORICAL_RULES})
    arch = architectures.get(config["model_name"] or "", {})
    filled = [f for f in ARCH_FIELDS if config[f] is None and arch.get(f) is not None]
    config.update({f: arch[f] for f in filled})
    metrics = {"throughput": None if per_gpu is None else per_gpu * n_gpus,
               "throughput_per_device": per_gpu, "throughput_unit": "tokens/s",
               "throughput_stat": "reported", "mfu": metric("mfu"),
               "tflops_per_device": metric("tflops_per_gpu"), "peak_memory_gib": metric("peak_memory_gib")}
    annotations = {key: row.text(key) for key in _TEXT_ANNOTATIONS}
    annotations.update(global_batch_tokens=row.number("global_batch_tokens", whole=True),
                       arch_filled=",".join(filled) or None,
                       arch_key=arch["model_key"] if filled else None,
                       file=row.path.name, line=row.line)
    annotations.update({f"{column}_raw": text for column, text in row.raw.items()})  # after every parse
    return builder.record(
        row, config, accelerator_hardware(gpu_type, n_gpus),
        provenance=row.text("provenance") or row.where,
        started_at=_started_at(row),
        status="oom" if oom else "ok",
        failure={"kind": "oom", "message": row.text("notes") or "published as OOM"} if oom else None,
        metrics=metrics, annotations=annotations,
    )


def read_published(paths: Union[PathLike, Iterable[PathLike]],
                   architectures: Optional[dict[str, dict]] = None) -> list[JobRecord]:
    """Job records from one or more published-table CSVs (the schema of SOURCES.md).

    ``OOM`` in ``tokens_per_sec_per_gpu`` (or variant ``OOM``) gives a record with status
    ``oom``, a ``Failure(kind='oom')`` and no throughput. ``metrics.throughput_per_device`` is
    the published tokens/s per GPU and ``metrics.throughput`` that times ``n_gpus``. Free text
    is normalised to the config vocabulary (``'BF16 (mixed precision)'`` -> ``'bf16'``,
    ``'selective op'`` -> ``'selective'``, ``'256 (doc text ...)'`` -> 256; text no rule knows
    -> None) and the original kept in the annotations as ``<column>_raw``, next to
    ``variant``, ``notes``, ``derived_fields``, ``date_basis``, ``source`` and ``gpu_type``.
    Blank architecture fields are filled from ``architectures`` (default: the
    ``model_architectures.csv`` beside the first file, if there is one) and listed in
    ``annotations['arch_filled']``. Repeated configurations get distinct job ids.
    """
    paths = [Path(paths)] if isinstance(paths, (str, Path)) else [Path(p) for p in paths]
    if architectures is None:
        beside = paths[0].parent / ARCHITECTURES_FILE if paths else None
        architectures = read_architectures(beside) if beside and beside.exists() else {}
    builder, records = _Builder(), []
    for path in paths:
        frame = read_table(path, "published-table")
        require_columns(frame, path, PUBLISHED_REQUIRED, "published-table")
        records.extend(_published_record(row, builder, architectures) for row in iter_rows(frame, path))
    return records
