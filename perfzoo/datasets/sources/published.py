"""The published-table layout: the schema of ``../shared/external/SOURCES.md``, one row per
published training-throughput figure, read into job records (``source="published"``,
``workload="llm"``, config in the LLM vocabulary of ``docs/architecture.md``) with a
:class:`~perfzoo.datasets.sources.LoadReport` per file that accounts for every row. Missing
architecture fields are filled from the shared ``model_architectures.csv`` first
(:func:`read_architectures`), then from perfzoo's model catalog (:mod:`perfzoo.llmconfig.catalog`: the keys
the shared table has no column for, e.g. MoE expert widths, MLA ranks, MTP, and the models it
lacks, e.g. Kimi-K2 and Nemotron-3 Nano); a variant in parentheses after the model name
(``(tokendrop)``, ``(w/o MTP)``) sets its config keys (:func:`perfzoo.records.vocabulary.model_variant`).

Example
-------
>>> from perfzoo.datasets import external_data_dir
>>> load = read_published(external_data_dir() / "torchtitan_benchmarks.csv")
>>> len(load.records), load.reports[0].oom
(60, 2)
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Optional, Sequence

from perfzoo import frameworks, llmconfig
from perfzoo.datasets.sources._base import Load, LoadReport
from perfzoo.datasets.sources._csv import CsvSource, Row, iter_rows, read_table, require_columns, split_number
from perfzoo.datasets.sources._flops import (MOE_UNPRICED, file_flop_convention, flops_per_token_published,
                                             read_mfu_peak, read_packing)
from perfzoo.datasets.sources._llm import RecordBuilder, llm_config
from perfzoo.datasets.sources._options import (read_expert_tp, read_framework, read_fsdp_group, read_local_batch,
                                               read_recipe, read_virtual_stages)
from perfzoo.datasets.sources._refuse import refusal
from perfzoo.hardware.accelerators import spec as accelerator_spec
from perfzoo.llmconfig import catalog
from perfzoo.records import JobRecord
from perfzoo.records.vocabulary import CATEGORICAL_RULES, TP_OVERLAP_RULES, model_variant, params_from_name, phrase_rules

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
               "vocab_size", "n_experts", "experts_per_token", "moe_ffn_dim")
ARCHITECTURES_FILE = "model_architectures.csv"
# what a model's proxy cut to fewer layers does not share with it: its totals and per-layer counts
WHOLE_MODEL_KEYS = ("n_params", "n_dense_layers", "n_sliding_layers", "n_attention_layers", "n_mamba_layers",
                    "n_linear_layers")


class PublishedSource(CsvSource):
    """Published-table CSVs; target: tokens/s per GPU (publishers quote it per GPU)."""

    name = "published"
    title = "published-table"
    describe = f"the published-table schema ({', '.join(PUBLISHED_COLUMNS[:6])}, ...; see SOURCES.md)"
    columns = PUBLISHED_COLUMNS
    target = "metrics.throughput_per_device"
    target_unit = "tokens/s"
    scale_column = "config.n_gpus"
    group_columns = ("config.model_name", "hardware.accelerator", "annotations.file")  # one file, one publisher

    def read(self, paths: Sequence[Path]) -> Load:
        return read_published(*paths)


def read_architectures(path: Path) -> dict[str, dict]:
    """Architecture fields by model name, from ``model_architectures.csv``.

    Each pipe-separated alias in ``aliases_in_csvs`` maps to that row's ``model_key`` and
    numeric fields of :data:`ARCH_FIELDS`. Cells holding no number (``MLA``, ``see n_params
    column in CSV``) are unknown; a number followed by a comment counts as the number.
    """
    frame = read_table(path, "model-architecture")
    require_columns(frame, path, ARCH_COLUMNS, "model-architecture")
    lookup = {}
    for row in iter_rows(frame, path):
        key = row.text("model_key")
        if key is None or key.startswith("("):  # "(unlisted)": names with no architecture
            continue
        fields: dict = {"model_key": key}
        for name in ARCH_FIELDS:
            try:
                value = split_number(row.cells.get(name, ""))[0]
            except ValueError:
                value = None
            fields[name] = None if value is None else round(value)
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


def _started_at(row: Row, report: LoadReport) -> Optional[datetime]:
    """The row's publication date as its ``started_at``; a blank date is unknown (None), and the
    row is counted in ``report.undated`` (such rows are left out of temporal splits only)."""
    when = row.date("date")
    if when is None:
        report.undated.append(row.line)
    return when


_WHOLE_COLUMNS = ("n_params", "n_layers", "hidden_dim", "ffn_dim", "n_heads", "n_kv_heads", "vocab_size",
                  "seq_len", "global_batch_size", "micro_batch_size", "grad_accum", "tp", "pp", "cp",
                  "dp", "ep", "vp")
_TEXT_ANNOTATIONS = ("source", "variant", "notes", "derived_fields", "date_basis", "system",
                     "other_opts", "gpu_type")
# variants that mark a figure a later document replaced (SOURCES.md); they stay in the data,
# grouped with their configuration, and are counted in the load report
SUPERSEDED = re.compile(r"superseded|removed_in_later|earlier_version|previous_version", re.IGNORECASE)
_LOCAL_BATCH = re.compile(r"local batch", re.IGNORECASE)
# a row whose FLOP figures count activation recomputation (hardware FLOPs, "HFU-like")
_HARDWARE_FLOPS = re.compile(r"HFU-like|includes activation recomputation|recompute FLOPs counted", re.IGNORECASE)


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
    from_catalog: list[str] = field(default_factory=list)
    catalog_model: Optional[str] = None
    flops_by_convention: dict = field(default_factory=dict)  # flops_per_token_published, per file
    mfu_peak: str = "bf16"  # the precision class whose dense peak the file's MFU is over (_flops.read_mfu_peak)

    def flops(self, hardware_flops: bool, causal: bool = False) -> tuple[Optional[float], str]:
        return self.flops_by_convention[hardware_flops, causal]


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
    options = row.text("other_opts") or ""
    framework = read_framework(row.text("source") or "", options, derived, report)  # the publisher's framework
    config = llm_config(model_name=row.text("model_name"), task=row.text("task"), n_gpus=n_gpus,
                        **{key: row.number(key, whole=True, lenient=True) for key in _WHOLE_COLUMNS},
                        **{key: row.category(key) for key in CATEGORICAL_RULES}, framework=framework)
    read_fsdp_group(config, row.text("fsdp"), derived, report)
    read_virtual_stages(config, row.raw, derived, report)
    read_expert_tp(config, options, derived, report)
    overlap = phrase_rules(options, TP_OVERLAP_RULES)
    if overlap is not None:
        config["tp_comm_overlap"] = overlap
        derived.append(f"tp_comm_overlap={overlap} (from other_opts)")
        report.derived["tp_comm_overlap from other_opts"] += 1
    for key, value in frameworks.get(framework).recipe.defaults:
        if config.get(key) is None:
            config[key] = value
            derived.append(f"{key}={value} ({framework}'s default; the row does not say)")
            report.derived[f"{key} from the framework's default"] += 1
    if _LOCAL_BATCH.search(row.text("micro_batch_size") or ""):  # a rank's batch, which a pipeline splits
        read_local_batch(config, options, derived, report)
    name, variant = model_variant(config["model_name"])
    # a proxy cut to fewer layers has the full model's widths; its totals and layer counts are not the model's
    whole_model = WHOLE_MODEL_KEYS if "n_layers" in variant else ()
    arch = architectures.get(config["model_name"] or "") or architectures.get(name, {})
    filled = [f for f in ARCH_FIELDS if config.get(f) is None and arch.get(f) is not None and f not in whole_model]
    config.update({f: arch[f] for f in filled})
    preset = catalog.lookup(name) if name else None
    from_catalog = [k for k in catalog.SHAPE_KEYS
                    if preset and config.get(k) is None and k in preset and k not in whole_model]
    config.update({k: preset[k] for k in from_catalog})
    if whole_model:
        left = [k for k in whole_model if (preset or {}).get(k) is not None or arch.get(k) is not None]
        stated = config.get("n_layers")
        derived.append(f"a proxy of {name} cut to {variant['n_layers']} layers (the model name; the n_layers cell "
                       f"says {stated}): the full model's widths" + (
                           f", not its {', '.join(left)}, which count its layers" if left else ""))
        report.derived["proxy models: the full model's widths, the stated layer count"] += 1
    config.update(variant)
    read_recipe(config, row, derived, report)
    refused = refusal(config)
    if refused is not None:  # as predict refuses the same config (_refuse)
        report.skipped.append((row.line, refused))
        return None
    if filled:
        report.derived["architecture from model_architectures.csv"] += 1
    if from_catalog:
        report.derived["architecture from perfzoo's model catalog"] += 1

    def metric(column: str) -> Optional[float]:
        return None if (row.text(column) or "").upper() == "OOM" else row.number(column, lenient=True)

    return _Parsed(row, config, accelerator_hardware(gpu_type, n_gpus),
                   None if oom else metric("tokens_per_sec_per_gpu"), oom,
                   metric("tflops_per_gpu"), metric("mfu"), derived, filled,
                   arch["model_key"] if filled else None, from_catalog,
                   preset["model_name"] if from_catalog else None)


def _derive_target(p: _Parsed, convention_of_file: tuple[bool, bool]) -> tuple[Optional[float], Optional[str], str, bool]:
    """(tokens/s per GPU, kind, how, whether the figures count recomputed FLOPs) from TFLOP/s per
    GPU, else MFU; (None, None, why not, False)."""
    if p.tflops is None and p.mfu is None:
        return None, None, "no tokens/s, TFLOP/s or MFU", False
    # a row that says its figures count recompute does; one that publishes MFU counts model
    # FLOPs (MFU's definition); any other row follows its file's convention
    basis = " ".join(p.row.text(c) or "" for c in ("derived_fields", "notes", "other_opts"))
    hardware_flops, causal = convention_of_file
    hardware_flops = bool(_HARDWARE_FLOPS.search(basis)) or (hardware_flops and p.mfu is None)
    flops, convention = p.flops(hardware_flops, causal)
    if flops is None:
        return None, None, "architecture unknown (no shape, no n_params): FLOPs per token unknown", False
    if p.tflops is not None:
        return p.tflops * 1e12 / flops, "tokens/s from TFLOP/s", (
            f"tokens_per_sec_per_gpu=tflops_per_gpu*1e12/flops_per_token ({convention}, {flops:.4g})"), hardware_flops
    spec = accelerator_spec(p.hardware["accelerator"])
    peak = None if spec is None else spec.flops(p.mfu_peak)
    if peak is None:
        return None, None, f"MFU given but the {p.mfu_peak} peak FLOP/s of {p.hardware['accelerator']!r} is unknown", False
    return p.mfu * peak / flops, "tokens/s from MFU", (
        f"tokens_per_sec_per_gpu=mfu*peak/flops_per_token (dense {p.mfu_peak} peak of {spec.name}, "
        f"{peak / 1e12:g} TFLOP/s; {convention}, {flops:.4g})"), hardware_flops


def _contradiction(config: dict, hardware: dict) -> Optional[str]:
    """Why the row's layout or batch contradict themselves by the rules ``predict`` checks a config
    with (:func:`perfzoo.llmconfig.check`: degrees that do not multiply to the GPU count, a batch
    the micro-batches do not make, experts that do not fold into a pipeline stage), or None."""
    # the shape is filled in already: no catalog lookup of the model's name
    given = {k: v for k, v in {**config, **hardware}.items() if k in llmconfig.KEYS and k != "model_name"}
    try:
        llmconfig.check(given, require=False)
    except llmconfig.ConfigError as err:
        return str(err)
    return None


def _published_record(p: _Parsed, builder: RecordBuilder, file_convention: tuple[bool, bool], convention: str,
                      report: LoadReport) -> JobRecord:
    row, per_gpu, derived, label = p.row, p.per_gpu, list(p.derived), "published"
    if not p.oom:
        value, kind, how, recomputed = _derive_target(p, file_convention)
        if per_gpu is None and value is not None:
            per_gpu, label = value, kind
            report.derived[kind] += 1
            if (p.config.get("n_experts") or 1) > 1:
                report.derived[f"{kind}: MoE rows over their active FLOPs per token at the row's sequence"] += 1
            derived.append(f"{how}; file convention: {convention}")
            if recomputed and p.config["activation_checkpointing"] is None:
                # figures that count recomputed FLOPs come from runs that recompute: the job did
                p.config["activation_checkpointing"] = "full"
                derived.append("activation_checkpointing=full (the figures count recomputed FLOPs)")
                report.derived["activation checkpointing full (figures count recompute)"] += 1
        elif per_gpu is None:
            label = f"unlabelled: {how}"
        elif value is not None and per_gpu > 0:
            report.derivation_ratios.append(value / per_gpu)
    config = p.config
    stated = params_from_name(model_variant(config["model_name"])[0])
    sizeless = config["n_params"] is None and (config["n_layers"] is None or config["hidden_dim"] is None)
    published = None
    if sizeless and not math.isnan(stated):
        config["n_params"] = stated  # the size the name states (GPT3-5B), for predictors that see no name
        derived.append(f"n_params={stated:.4g} (from the model name)")
        report.derived["n_params from the model name"] += 1
    elif sizeless and per_gpu is not None:
        # a model perfzoo cannot describe is no example of what a config runs at: kept, not scored
        published, per_gpu = per_gpu, None
        label = ("unlabelled: model unknown (no shape, no n_params), so its tokens/s cannot be priced; "
                 "the published figure is kept in published_tokens_per_gpu")
    if not sizeless:  # a model with no shape is reported as such (above)
        contradiction = _contradiction(config, p.hardware)
        if contradiction is not None:
            report.contradictions.append((row.line, contradiction))
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
                       arch_catalog=",".join(p.from_catalog) or None, catalog_model=p.catalog_model,
                       label=label, perfzoo_derived="; ".join(derived) or None, published_tokens_per_gpu=published,
                       file=row.path.name, line=row.line)
    annotations.update({f"{column}_raw": text for column, text in row.raw.items()})  # after every parse
    report.null_cells.update(row.nulls)
    report.unreadable_cells.update(row.unreadable)
    return builder.record(
        row, p.config, p.hardware,
        provenance=row.text("provenance") or row.where,
        started_at=_started_at(row, report),
        status="oom" if p.oom else "ok",
        failure={"kind": "oom", "message": row.text("notes") or "published as OOM"} if p.oom else None,
        metrics=metrics, annotations=annotations,
    )


def read_published(*paths: Path, architectures: Optional[dict[str, dict]] = None) -> Load:
    """Job records from one or more published-table CSVs (the schema of SOURCES.md), with a
    :class:`~perfzoo.datasets.sources.LoadReport` per file that accounts for every row.

    * ``OOM`` in ``tokens_per_sec_per_gpu`` (or variant ``OOM``) gives a record with status
      ``oom``, a ``Failure(kind='oom')`` and no throughput.
    * ``metrics.throughput_per_device`` is the published tokens/s per GPU and
      ``metrics.throughput`` that times ``n_gpus``. Where tokens/s is not published it is
      derived from TFLOP/s per GPU, else from MFU (against the dense bf16 peak), over the
      training FLOPs per token of :func:`flops_per_token_published`; the formula and the FLOP
      convention go to ``annotations['perfzoo_derived']`` and ``annotations['label']`` says
      ``published``, ``tokens/s from TFLOP/s`` or ``tokens/s from MFU``. A row with none of
      these stays an unlabelled configuration (status ``ok``, no throughput; ``label`` says why),
      and so does a row whose model has no shape and no ``n_params`` (nor a size in its name): no
      predictor can price it (``dense model (unspecified)``); its published figure is kept in
      ``annotations['published_tokens_per_gpu']``.
    * Null spellings (``n/a``, ``NA``, ``-``, ``—``, ...) are unknown values; free text is
      normalised to the config vocabulary (``'BF16 (mixed precision)'`` -> ``'bf16'``,
      ``'selective op'`` -> ``'selective'``, ``'256 (doc text ...)'`` -> 256; text no rule
      knows -> None) and the original kept as ``annotations['<column>_raw']``.
    * A row without a GPU count (``n_gpus`` blank and not ``tp*pp*cp*dp``) or an accelerator
      cannot be a job: it is skipped and listed, with its line, in the report; so is a row
      ``predict`` would refuse (:mod:`perfzoo.datasets.sources._refuse`: expert parallelism on a
      model read as dense, a mixture of experts without its expert count, a hybrid stack without
      its layer counts), and an MoE row that gives only TFLOP/s or MFU where its active FLOPs per
      token are unknown (no sequence length or no shape: never ``6N`` of its total parameters).
    * ``config.framework`` is read off the ``source`` column (``NVIDIA Megatron-Bridge performance
      summary`` -> ``megatron-bridge``; :data:`perfzoo.records.vocabulary.FRAMEWORK_RULES`): what the
      memory model needs to know about the framework's recipes (:mod:`perfzoo.analytic.memory`).
    * ``config.tp_comm_overlap`` is read off ``other_opts`` where a row names Megatron's
      ``tp-comm-overlap`` (:data:`perfzoo.records.vocabulary.TP_OVERLAP_RULES`; Megatron-LM's README rows):
      the analytic estimate then hides the TP traffic under the GEMMs (:mod:`perfzoo.analytic.llm`).
    * A torchtitan row dated from 2025-04-02 that compiles runs a compiled, fused loss (``fused_loss``:
      torchtitan compiles its cross entropy with the model since then; before, it did not).
    * A precision cell that names a ``bf16 tail`` under torchtitan sets ``bf16_layers``: its NVFP4
      recipe converts the leading 85% of the decoder layers (rounded down) and keeps the rest in BF16.
    * A torchtitan FP8 row's precision cell sets ``fp8_param_gather``
      (:data:`perfzoo.records.vocabulary.FP8_GATHER_RULES`): Float8Linear with tensorwise scales gathers its
      weights in FP8 under FSDP (the presets' float8 all-gather), rowwise scales do not.
    * A ``micro_batch_size`` cell that gives a rank's local batch (``32 (local batch)``) is no micro
      batch: under torchtitan it is split into ``pp`` micro-batches, two stages per rank when
      ``other_opts`` names an interleaved schedule (torchtitan's defaults); elsewhere it is unknown.
    * A row that gives tokens/s and TFLOP/s whose FLOPs per token fall short of its sequence's by
      what its attention costs, down to what a short sample's would, while the file's other rows of
      the model count the whole sequence, trained on short samples packed into each sequence:
      ``packed_sample_len`` (:func:`perfzoo.datasets.sources._flops.packed_sample_len`; NeMo's SFT and LoRA
      rows, 20-173 tokens per sample).
    * A model known by neither table nor catalog, whose name states its size (``GPT3-5B``), gets
      ``n_params`` from the name once its target is settled (listed in ``perfzoo_derived``):
      predictors see no model name.
    * Blank architecture fields are filled from ``architectures`` (default: the
      ``model_architectures.csv`` beside the first file, if there is one) and listed in
      ``annotations['arch_filled']``; then the keys still blank that perfzoo's model catalog
      knows for the model (:mod:`perfzoo.llmconfig.catalog`), listed in ``annotations['arch_catalog']``; the
      report counts the rows each filled. Repeated configurations get distinct job ids.

    * A row with a blank ``date`` is kept with ``started_at`` unknown and its line listed in the
      report (``undated``): the temporal split leaves it out, every other split keeps it.

    A structurally broken file (missing columns, not CSV, a non-number where a row must have
    one, a date that is not a date) raises :class:`~perfzoo.datasets.sources.DataError` naming the file, line
    and column.

    >>> from perfzoo.datasets import external_data_dir
    >>> load = read_published(external_data_dir() / "megatron_lm_readme_scaling.csv")
    >>> r = load.reports[0]; r.rows == r.labelled + r.unlabelled + r.oom + len(r.skipped)
    True
    """
    if architectures is None:
        beside = paths[0].parent / ARCHITECTURES_FILE if paths else None
        architectures = read_architectures(beside) if beside and beside.exists() else {}
    builder, records, reports = RecordBuilder(), [], []
    for path in paths:
        frame = read_table(path, "published-table")
        require_columns(frame, path, PUBLISHED_REQUIRED, "published-table")
        report = LoadReport(file=path.name, rows=len(frame))
        parsed = [p for row in iter_rows(frame, path) if (p := _parse_row(row, architectures, report))]
        if parsed:
            for p, flops in zip(parsed, flops_per_token_published([p.config for p in parsed])):
                p.flops_by_convention = flops
            # an MoE row to convert from TFLOP/s or MFU whose active FLOPs per token are unknown
            unpriced = [p for p in parsed if p.per_gpu is None and not p.oom and (p.tflops or p.mfu)
                        and p.flops(False)[1] == MOE_UNPRICED]
            report.skipped.extend((p.row.line, MOE_UNPRICED) for p in unpriced)
            parsed = [p for p in parsed if all(p is not q for q in unpriced)]
        file_convention, report.flop_convention = file_flop_convention(parsed)
        read_packing(parsed, file_convention, report)
        read_mfu_peak(parsed, file_convention, report)
        records.extend(_published_record(p, builder, file_convention, report.flop_convention, report)
                       for p in parsed)
        reports.append(report)
    return Load(records, reports)
