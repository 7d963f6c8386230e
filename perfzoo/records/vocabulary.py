"""The config vocabulary's categorical values, read leniently.

Published tables and user records spell one setting many ways (``amp_bf16``, ``BF16``,
``FP8 (Float8 linears) + BF16``; ``FULL_SHARD``, ``zero3``, ``FSDP2 (dp_shard=8)``). Two
readings live here, one per use:

* loading a table (:mod:`perfzoo.datasets.sources`): :func:`phrase_rules` with :data:`CATEGORICAL_RULES`
  turns a cell into the vocabulary's value of ``docs/architecture.md`` (``mxfp8`` stays
  ``mxfp8``), or None when no rule matches, so the loader can report the cell;
* costing a config (:mod:`perfzoo.analytic`): ``normalize_*`` map any value onto the few
  classes the cost models use (``mxfp8`` is ``fp8``); they never raise, and what they cannot
  read gets the documented default.

The framework codes (:data:`FRAMEWORKS`) and the phrases that name each in a cell
(:data:`FRAMEWORK_RULES`) are the frameworks' registry's (:mod:`perfzoo.frameworks`): each bundle
declares its own.

>>> normalize_precision("amp_bf16"), normalize_sharding(3), normalize_checkpointing(True)
('bf16', 'full_shard', 'full')
>>> precision_format("FP8-MX"), precision_format("NVFP4 (bf16 tail)"), precision_format("FP8-CS")
('mxfp8', 'nvfp4', 'fp8')
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np
import pandas as pd

from perfzoo import frameworks

PRECISIONS = ("fp32", "bf16", "fp8", "fp4")
# precision formats: what the matrix units must support (perfzoo.hardware.accelerators); fp8 is FP8 with
# per-tensor (delayed or current), per-row or blockwise scales, mxfp8 / nvfp4 / mxfp4 hardware block scaling
FORMATS = ("fp32", "bf16", "fp16", "fp8", "mxfp8", "nvfp4", "mxfp4")
CHECKPOINTING = ("none", "selective", "full")
SHARDINGS = ("none", "no_shard", "zero1", "shard_grad_op", "full_shard", "hybrid_shard")
# the training framework, where it changes what a step keeps or moves: one bundle each (perfzoo.frameworks,
# whose declarations the cost model reads); the first, "unknown", costs a config by its other keys alone
FRAMEWORKS = frameworks.CODES


def is_missing(v: Any) -> bool:
    """``None``, NaN, ``pd.NA`` or a blank string."""
    return v is None or (isinstance(v, float) and np.isnan(v)) or v is pd.NA or (isinstance(v, str) and not v.strip())


def given(v: Any) -> Any:
    """``v``, or None where it :func:`is_missing` (a table's blank cell read as "not given").

    >>> given(8), given(float("nan")), given("")
    (8, None, None)
    """
    return None if is_missing(v) else v


def normalize_precision(v: Any) -> str:
    """Precision class: ``fp32``, ``bf16`` (also fp16 / amp), ``fp8`` (fp8, mxfp8), ``fp4``.

    Unknown or missing -> ``bf16`` (mixed precision, the usual GPU default).

    >>> [normalize_precision(x) for x in ["amp_bf16", "FP8 (Float8 linears) + BF16", "fp32", None]]
    ['bf16', 'fp8', 'fp32', 'bf16']
    """
    if is_missing(v):
        return "bf16"
    s = str(v).lower()
    if "fp4" in s or "nvfp4" in s or "mxfp4" in s:
        return "fp4"
    if "fp8" in s or "float8" in s:
        return "fp8"
    if "bf16" in s or "bfloat16" in s or "fp16" in s or "float16" in s or "half" in s or "amp" in s:
        return "bf16"
    if "fp32" in s or "float32" in s or "tf32" in s:
        return "fp32"
    return "bf16"


def precision_format(v: Any) -> str:
    """Precision format, one of :data:`FORMATS`: what a device's matrix units must run
    (``mxfp8`` needs Blackwell, ``fp8`` Hopper or Ada, ``nvfp4`` Blackwell). Unknown or missing -> ``bf16``.

    >>> [precision_format(x) for x in ["mxfp8_cublas", "amp_fp8", "fp16", "Float8 rowwise", None]]
    ['mxfp8', 'fp8', 'fp16', 'fp8', 'bf16']
    """
    if is_missing(v):
        return "bf16"
    text = str(v)
    found = phrase_rules(text, PRECISION_RULES)
    if found is not None:
        return str(found)
    return {"fp4": "nvfp4", "fp8": "fp8", "fp32": "fp32"}.get(normalize_precision(text), "bf16")


def normalize_sharding(v: Any) -> str:
    """Data-parallel sharding: ``none`` (DDP / Megatron DP), ``no_shard``, ``zero1``,
    ``shard_grad_op`` (ZeRO-2), ``full_shard`` (ZeRO-3) or ``hybrid_shard``.

    Accepts FSDP names in any case, ZeRO stages (``0..3`` / ``'zero3'``) and FSDP2
    phrases (``'FSDP2 (dp_shard=8)'`` -> ``full_shard``). Missing -> ``none``.

    >>> [normalize_sharding(x) for x in ["FULL_SHARD", "SHARD_GRAD_OP", 2, "FSDP2", None]]
    ['full_shard', 'shard_grad_op', 'shard_grad_op', 'full_shard', 'none']
    """
    if is_missing(v) or v is False:
        return "none"
    if isinstance(v, (int, np.integer, float)) and not isinstance(v, bool):
        return {0: "none", 1: "zero1", 2: "shard_grad_op", 3: "full_shard"}.get(int(v), "none")
    s = str(v).lower().replace("-", "_").replace(" ", "_")
    if "hybrid" in s or "hsdp" in s:
        return "hybrid_shard"
    if "grad_op" in s or "zero2" in s or "zero_2" in s or s == "2":
        return "shard_grad_op"
    if "no_shard" in s or "noshard" in s or "replicate" in s or s in ("ddp", "zero0", "0"):
        return "no_shard"
    if "zero1" in s or "zero_1" in s or s == "1":
        return "zero1"
    if "full" in s or "fsdp" in s or "zero3" in s or "zero_3" in s or s in ("true", "3"):
        return "full_shard"
    return "none"


def normalize_checkpointing(v: Any) -> str:
    """Activation checkpointing: ``none``, ``selective`` or ``full`` (``True`` -> full).

    >>> [normalize_checkpointing(x) for x in [True, False, "selective op", "full", None]]
    ['full', 'none', 'selective', 'full', 'none']
    """
    if is_missing(v) or v is False:
        return "none"
    if v is True:
        return "full"
    s = str(v).lower()
    if "selective" in s:
        return "selective"
    if "full" in s or s in ("true", "1", "yes", "on"):
        return "full"
    return "none"


def normalize_framework(v: Any) -> str:
    """The training framework, one of :data:`FRAMEWORKS` (a known name in any spelling, else ``unknown``).

    >>> [normalize_framework(x) for x in ["Megatron-Bridge", "torchtitan", "NeMo 2.0", None]]
    ['megatron-bridge', 'torchtitan', 'nemo', 'unknown']
    """
    found = None if is_missing(v) else phrase_rules(str(v), FRAMEWORK_RULES)
    return frameworks.UNKNOWN if found is None else str(found)


def to_bool(v: Any) -> float:
    """A yes/no value as ``1.0`` / ``0.0``; ``NaN`` when missing or unreadable.

    >>> to_bool("on"), to_bool(False), to_bool("maybe")
    (1.0, 0.0, nan)
    """
    if is_missing(v):
        return np.nan
    if isinstance(v, (bool, np.bool_)):
        return float(v)
    s = str(v).strip().lower()
    if s in ("true", "1", "yes", "on"):
        return 1.0
    if s in ("false", "0", "no", "off"):
        return 0.0
    return np.nan


def is_adapter_tuning(task: Any) -> float:
    """1.0 when a task trains adapters over frozen weights (LoRA, QLoRA, PEFT), else 0.0.

    >>> is_adapter_tuning("LoRA"), is_adapter_tuning("Pre-Training"), is_adapter_tuning(None)
    (1.0, 0.0, 0.0)
    """
    if is_missing(task):
        return 0.0
    return 1.0 if re.search(r"lora|peft|adapter", str(task), re.IGNORECASE) else 0.0


_SIZE = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)\s*([MBT])(?![a-zA-Z])")
_SIZE_UNITS = {"M": 1e6, "B": 1e9, "T": 1e12}
# experts x size (8x7B), an active size (A3B, a22B), or the word MoE
_MOE_NAME = re.compile(r"\d+\s*x\s*\d|(?<![a-z])a\d+(?:\.\d+)?[mbt](?![a-z])|(?<![a-z])moe(?![a-z])", re.IGNORECASE)


def params_from_name(name: Any) -> float:
    """The parameter count a model name states (``GPT3-5B`` -> 5e9, ``Nemotron-340B`` ->
    3.4e11, ``125M`` -> 1.25e8; the last size in the name wins); ``NaN`` when it states none.
    A name that says the model is a mixture of experts gives ``NaN``: its total and active
    counts differ and the name does not give the shape that prices them (``8x7B``, an active
    size ``80B-A3B``, ``MoE``).

    >>> params_from_name("GPT3-20B"), params_from_name("LLAMA3-8B"), params_from_name("Mixtral-8x7B")
    (20000000000.0, 8000000000.0, nan)
    >>> params_from_name("Qwen3-Next-80B-A3B"), params_from_name("Some MoE 132B")
    (nan, nan)
    """
    if is_missing(name) or _MOE_NAME.search(str(name)):
        return math.nan
    sizes = _SIZE.findall(str(name))
    if not sizes:
        return math.nan
    number, unit = sizes[-1]
    return float(number) * _SIZE_UNITS[unit]


_VARIANT = re.compile(r"\s*\(([^)]*)\)\s*$")
_PROXY = re.compile(r"proxy,?(\d+)layers?")  # a variant tag, spaces removed: "proxy, 16 layers"


def model_variant(name: Any) -> tuple[str, dict[str, Any]]:
    """A published model name without its trailing ``(variant)``, and the config keys the variant
    states: ``tokendrop`` / ``dropless`` (``moe_token_drop``), ``w/o MTP`` (``mtp_layers = 0``),
    ``proxy, N layers`` (the model cut to ``N`` layers, every width kept: ``n_layers = N``; NVIDIA's
    DGX Cloud recipes run such proxies on few GPUs).

    >>> model_variant("DeepSeekV3 (tokendrop)"), model_variant("DeepSeekV3 (w/o MTP)")[1]
    (('DeepSeekV3', {'moe_token_drop': True}), {'mtp_layers': 0})
    >>> model_variant("Grok-1 (proxy, 16 layers)")
    ('Grok-1', {'n_layers': 16})
    >>> model_variant("Llama 3 8B")
    ('Llama 3 8B', {})
    """
    if is_missing(name):
        return "", {}
    text = str(name)
    found = _VARIANT.search(text)
    if found is None:
        return text, {}
    tag = re.sub(r"[\s_\-]", "", found.group(1).lower())
    keys: dict[str, Any] = {}
    proxy = _PROXY.fullmatch(tag)
    if proxy:
        keys["n_layers"] = int(proxy.group(1))
    elif tag in ("tokendrop", "tokendropping"):
        keys["moe_token_drop"] = True
    elif tag == "dropless":
        keys["moe_token_drop"] = False
    elif tag in ("w/omtp", "withoutmtp", "nomtp"):
        keys["mtp_layers"] = 0
    elif tag not in ("w/mtp", "withmtp"):
        return text, {}  # a parenthesis that names no variant is part of the name
    return text[:found.start()].strip(), keys


# ----------------------------------------------------------------------------------------
# loading a table: a cell -> the vocabulary's value
# ----------------------------------------------------------------------------------------


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
    ("nvfp4", ("nvfp4",)), ("mxfp4", ("mxfp4",)), ("mxfp8", ("mxfp8", "fp8 mx")), ("fp8", ("fp8", "float8")),
    ("bf16", ("bf16", "bfloat16")), ("fp16", ("fp16", "float16")), ("fp32", ("fp32", "float32")),
)
FSDP_RULES = (
    ("none", ("fsdp col 0",)),  # Megatron-Bridge's "fsdp_col=0": no FSDP (Megatron DP)
    ("shard_grad_op", ("shard grad op", "zero2")), ("no_shard", ("no shard",)),
    ("hybrid_shard", ("hybrid shard", "hsdp")),
    ("full_shard", ("full shard", "fsdp", "fsdp2", "dp shard", "zero3")), ("none", ("none", "ddp")),
)
CHECKPOINTING_RULES = (
    ("selective", ("selective",)), ("full", ("full", "true")), ("none", ("none", "false", "off")),
)
COMPILE_RULES = ((True, ("true", "yes", "on")), (False, ("false", "no", "off")))
# the phrases that name each framework in a cell, most specific first (the registry's READ_ORDER:
# "pytorch/torchtitan" is torchtitan, "Megatron-Bridge" is not Megatron-LM)
FRAMEWORK_RULES = tuple((f.name, f.phrases) for f in frameworks.READ_ORDER if f.phrases)
# training frameworks a table's options column names that the cost model has no bundle for: left unknown, and said
UNPRICED_FRAMEWORK_RULES = frameworks.UNPRICED
# TP traffic overlapped with the GEMMs, as a table's options column says it: Megatron's --tp-comm-overlap
# (Transformer Engine's userbuffers, what perfzoo.analytic.llm prices as tp_comm_overlap). torchtitan's
# "async TP" is not read as it: its published pairs gain 4-16% where hiding the TP time would gain 29-41%
TP_OVERLAP_RULES = ((True, ("tp comm overlap",)),)
# FSDP's parameter all-gather in FP8, as a precision cell says it: torchao's float8 all-gather casts the
# Float8Linear weights before FSDP gathers them (torchtitan's llama3 presets set
# float8.enable_fsdp_float8_all_gather; docs/float8.md), for tensorwise scales only: rowwise has none
FP8_GATHER_RULES = ((False, ("rowwise",)), (True, ("fsdp all gather", "tensorwise", "float8 linears")))
# a pipeline schedule with several stages per rank, as a table's options column names it
INTERLEAVED_RULES = ((True, ("interleaved",)),)
# a low-precision recipe that keeps its last layers in BF16, as a precision cell names it ("NVFP4 (bf16
# tail)"); the share a framework converts is its recipe's (perfzoo.frameworks.Recipe.low_precision_share)
BF16_TAIL_RULES = ((True, ("bf16 tail",)),)
CATEGORICAL_RULES = {"precision": PRECISION_RULES, "fsdp": FSDP_RULES,
                     "activation_checkpointing": CHECKPOINTING_RULES, "compile": COMPILE_RULES}
