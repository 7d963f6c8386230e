"""The keys of an LLM config: every key ``predict``, ``plan`` and ``search`` accept, with its unit,
type and range (:data:`KEYS`), read and typed one at a time (a value of the wrong type or out of
range is a :class:`ConfigError` naming the key and the fix), and the keys that mean something only
for one kind of model (:func:`applies`). The checks of a config as a whole are :mod:`.checks`.

A config is a flat dict of the vocabulary of ``docs/architecture.md`` plus the hardware keys
(``accelerator``, ``accelerator_count``, ...) and ``model``, a name from the model catalog
(:mod:`perfzoo.llmconfig.catalog`) whose shape fills the keys the config leaves out.

>>> KEYS["seq_len"].unit, KEYS["fsdp"].choices[:3]
('tokens', ('none', 'no_shard', 'zero1'))
>>> typed(KEYS["moe_recompute"], "layernorm, moe_act"), typed(KEYS["moe_recompute"], "none")
('moe_act,layernorm', 'none')
>>> str(unknown_key_error("seq_lenn"))
"unknown key 'seq_lenn' (did you mean seq_len?); the accepted keys are listed by python -m perfzoo.predict --help"
"""

from __future__ import annotations

import difflib
import math
from dataclasses import dataclass
from typing import Any, Mapping, Optional

from perfzoo.console import InputError
from perfzoo.records.vocabulary import FRAMEWORKS, is_missing


class ConfigError(InputError):
    """A config perfzoo cannot price as given (exit status 2); the message names the key and the fix."""


@dataclass(frozen=True)
class Key:
    """One accepted key: its type (``int``, ``float``, ``bool``, ``str`` or ``choice``), unit,
    smallest allowed value (numbers), allowed values (``choice``) and what it means."""

    name: str
    kind: str
    unit: str
    doc: str
    low: Optional[float] = None
    choices: tuple = ()
    hardware: bool = False  # a hardware.* column, not a config.* one
    family: Optional[str] = None  # a kind of model's keys (moe, mla, mamba, linear, window, mtp): see applies()
    high: Optional[float] = None  # the largest allowed value (numbers)


# the largest counts perfzoo prices: beyond any cluster built or model trained, so a value past them is a typo
# (n_gpus=1e9), not a question the cost model can answer
MAX_DEVICES = 2**20  # 1,048,576 devices (the largest clusters are ~1e5)
MAX_TOKENS = 2**24  # 16,777,216 tokens per sequence (the longest published training context: 1,048,576)
MAX_SEQUENCES = 2**24  # sequences per step or micro-batch
MAX_WIDTH = 2**20  # features, heads, experts, layers, vocabulary entries


def _k(name, kind, unit, doc, low=None, choices=(), hardware=False, family=None, high=None) -> tuple[str, Key]:
    if high is None and kind == "int":
        high = MAX_WIDTH
    return name, Key(name, kind, unit, doc, low, tuple(choices), hardware, family, high)


PRECISION_VALUES = ("fp32", "fp16", "bf16", "fp8", "mxfp8", "nvfp4", "mxfp4")
CHECKPOINTING_VALUES = ("none", "selective", "full")
SHARDING_VALUES = ("none", "no_shard", "zero1", "shard_grad_op", "full_shard", "hybrid_shard")
DISPATCHERS = ("alltoall", "allgather", "flex", "deepep")  # MoE token dispatchers (frameworks.Runs.dispatchers)
MOE_RECOMPUTE = ("moe_act", "shared_experts", "layernorm", "mla_up_proj", "moe")  # in Megatron's order of cost

KEYS: dict[str, Key] = dict([
    _k("model", "str", "name", "a model of the catalog (python -m perfzoo.plan --list-models): fills the shape keys"),
    _k("model_name", "str", "name", "the model's name as published (a catalog name also fills the shape)"),
    _k("n_params", "float", "parameters", "total parameter count", low=1, high=1e15),
    _k("n_layers", "int", "layers", "transformer blocks", low=1),
    _k("hidden_dim", "int", "features", "model width d", low=1),
    _k("ffn_dim", "int", "features", "dense MLP width (default 4 x hidden_dim)", low=1),
    _k("n_heads", "int", "heads", "attention heads", low=1),
    _k("n_kv_heads", "int", "heads", "key/value heads (grouped-query attention; default n_heads)", low=1),
    _k("head_dim", "int", "features", "width of one head (default hidden_dim / n_heads)", low=1),
    _k("vocab_size", "int", "tokens", "vocabulary size", low=1),
    _k("gated_mlp", "bool", "yes/no", "SwiGLU-style 3-matrix MLP"),
    _k("tie_embeddings", "bool", "yes/no", "the LM head shares the input embedding"),
    _k("n_experts", "int", "experts", "routed experts per MoE layer (MoE models)", low=1, family="moe"),
    _k("experts_per_token", "int", "experts", "experts each token is routed to", low=1, family="moe"),
    _k("moe_ffn_dim", "int", "features", "one expert's MLP width", low=1, family="moe"),
    _k("n_shared_experts", "int", "experts", "experts every token passes through", low=0, family="moe"),
    _k("n_dense_layers", "int", "layers", "leading layers with a dense MLP in an MoE model", low=0, family="moe"),
    _k("shared_ffn_dim", "int", "features", "the shared experts' MLP width (default moe_ffn_dim)", low=1, family="moe"),
    _k("moe_capacity_factor", "float", "x", "tokens the busiest expert rank computes over the balanced share "
       "(default 1: balanced)", low=1, family="moe"),
    _k("moe_token_drop", "bool", "yes/no", "tokens over an expert's capacity are dropped (not dropless)", family="moe"),
    _k("etp", "int", "devices", "tensor-parallel degree inside the experts (default 1)", low=1, family="moe"),
    _k("moe_dispatcher", "choice", "", "how tokens reach their experts' ranks: all-to-all, all-gather, flex "
       "(Megatron-Core's flex dispatcher over HybridEP) or deepep (DeepEP's kernels; under Megatron-Core the flex "
       "dispatcher's DeepEP backend); the framework's bundle says which it runs", choices=DISPATCHERS, family="moe"),
    _k("moe_recompute", "modules", "", "MoE modules recomputed in the backward, comma-separated (Megatron's "
       "--recompute-modules names; none: only what activation_checkpointing recomputes)", choices=MOE_RECOMPUTE,
       family="moe"),
    _k("moe_a2a_overlap", "bool", "yes/no", "one micro-batch's token dispatch runs under another's compute "
       "(Megatron-Core's --overlap-moe-expert-parallel-comm; default: the framework's, off)", family="moe"),
    _k("moe_shared_expert_overlap", "bool", "yes/no", "the shared experts compute while the tokens are dispatched "
       "(Megatron-Core's --moe-shared-expert-overlap; default: the framework's, off)", family="moe"),
    _k("q_lora_rank", "int", "features", "MLA: the query's low-rank width", low=1, family="mla"),
    _k("kv_lora_rank", "int", "features", "MLA: the compressed key/value width", low=1, family="mla"),
    _k("qk_nope_head_dim", "int", "features", "MLA: a head's query/key width without rotary part", low=1, family="mla"),
    _k("qk_rope_head_dim", "int", "features", "MLA: a head's rotary query/key width", low=1, family="mla"),
    _k("v_head_dim", "int", "features", "MLA: a head's value width", low=1, family="mla"),
    _k("mtp_layers", "int", "layers", "multi-token-prediction blocks after the last layer", low=0, family="mtp"),
    _k("sliding_window", "int", "tokens", "attention window of the sliding-window layers", low=1, family="window"),
    _k("n_sliding_layers", "int", "layers", "layers with sliding-window attention", low=0, family="window"),
    _k("n_attention_layers", "int", "layers", "hybrid models: layers with attention", low=0, family="mamba"),
    _k("n_mamba_layers", "int", "layers", "hybrid models: Mamba-2 layers", low=0, family="mamba"),
    _k("mamba_heads", "int", "heads", "Mamba-2 heads", low=1, family="mamba"),
    _k("mamba_head_dim", "int", "features", "width of one Mamba-2 head", low=1, family="mamba"),
    _k("mamba_state_dim", "int", "features", "Mamba-2 state size", low=1, family="mamba"),
    _k("mamba_groups", "int", "groups", "Mamba-2 groups", low=1, family="mamba"),
    _k("n_linear_layers", "int", "layers", "hybrid models: layers whose mixer is linear attention (gated delta-net) "
       "instead of softmax attention", low=0, family="linear"),
    _k("linear_key_heads", "int", "heads", "linear attention: query/key heads", low=1, family="linear"),
    _k("linear_value_heads", "int", "heads", "linear attention: value heads (default linear_key_heads)", low=1,
       family="linear"),
    _k("linear_key_head_dim", "int", "features", "linear attention: width of one query/key head", low=1,
       family="linear"),
    _k("linear_value_head_dim", "int", "features", "linear attention: width of one value head", low=1,
       family="linear"),
    _k("linear_conv_kernel", "int", "tokens", "linear attention: the short causal convolution's width (default 4)",
       low=1, family="linear"),
    _k("task", "str", "name", "pre-training (default), SFT, or LoRA / PEFT (adapter tuning)"),
    _k("seq_len", "int", "tokens", "tokens per sequence", low=1, high=MAX_TOKENS),
    _k("packed_sample_len", "int", "tokens", "mean tokens per sample where shorter samples are packed into each "
       "sequence and attend within themselves (variable-length attention; default: a sequence is one sample)", low=1,
       high=MAX_TOKENS),
    _k("global_batch_size", "int", "sequences", "sequences per optimizer step, all ranks together", low=1,
       high=MAX_SEQUENCES),
    _k("micro_batch_size", "int", "sequences", "sequences per forward/backward on one data-parallel rank", low=1,
       high=MAX_SEQUENCES),
    _k("grad_accum", "int", "micro-batches", "micro-batches per optimizer step", low=1, high=MAX_SEQUENCES),
    _k("n_gpus", "int", "devices", "devices in the job", low=1, high=MAX_DEVICES),
    _k("tp", "int", "devices", "tensor-parallel degree", low=1, high=MAX_DEVICES),
    _k("pp", "int", "stages", "pipeline-parallel degree", low=1, high=MAX_DEVICES),
    _k("vp", "int", "stages", "virtual pipeline stages per pipeline rank (interleaving; needs pp > 1)", low=1),
    _k("cp", "int", "devices", "context-parallel degree", low=1, high=MAX_DEVICES),
    _k("dp", "int", "devices", "data-parallel degree (default n_gpus / (tp x pp x cp))", low=1,
       high=MAX_DEVICES),
    _k("ep", "int", "devices", "expert-parallel degree (MoE models)", low=1, family="moe",
       high=MAX_DEVICES),
    _k("fsdp", "choice", "", "data-parallel sharding (zero1: optimizer, shard_grad_op: ZeRO-2, full_shard: ZeRO-3)",
       choices=SHARDING_VALUES),
    _k("shard_group", "int", "devices", "hybrid_shard: the data-parallel ranks one shard group spans (default a "
       "node's)", low=1, high=MAX_DEVICES),
    _k("zero_stage", "int", "stage", "ZeRO stage 0-3 (instead of fsdp: 0 no_shard, 1 zero1, 2 shard_grad_op, 3 full_shard)",
       low=0, high=3),
    _k("precision", "choice", "", "training precision of the matmuls", choices=PRECISION_VALUES),
    _k("bf16_layers", "int", "layers", "decoder layers whose linear layers stay in BF16 in a low-precision run "
       "(default 0)", low=0),
    _k("low_precision_backward", "bool", "yes/no", "a low-precision run's backward GEMMs are low precision too "
       "(default yes: Transformer Engine, torchao; no in perfzoo's llm workload, whose FP8 linears quantize the "
       "forward GEMM only)"),
    _k("activation_checkpointing", "choice", "", "recompute activations", choices=CHECKPOINTING_VALUES),
    _k("sequence_parallel", "bool", "yes/no", "Megatron sequence parallelism with tp"),
    _k("flash_attention", "bool", "yes/no", "fused attention (no s x s scores kept)"),
    _k("tp_comm_overlap", "bool", "yes/no", "TP communication overlapped with the GEMMs (default: on for NeMo and "
       "Megatron-Bridge with tp > 1)"),
    _k("fp8_param_gather", "bool", "yes/no", "FSDP gathers the FP8 linears' weights in FP8 (torchao's float8 "
       "all-gather; default: on for torchtitan's FP8 with tensorwise scales, its presets' setting)"),
    _k("compile", "bool", "yes/no", "torch.compile"),
    _k("fused_loss", "bool", "yes/no", "the cross entropy runs as fused kernels, no fp32 copy of the logits (default: "
       "yes where compile is unknown, the fused-kernel frameworks; no in PyTorch)"),
    _k("framework", "choice", "", "the training framework (what a step keeps and moves in memory, its attention kernel, "
       "whether TP traffic overlaps)",
       choices=FRAMEWORKS),
    _k("release", "str", "YYYY-MM or YY.MM", "the release of your framework (e.g. 2026-06, or a NeMo container's "
       "25.04): predict says how much newer it is than the training data and what the data's release-to-release "
       "speed-ups suggest (perfzoo.datasets.drift)"),
    _k("accelerator", "str", "name", "device model, a row of the accelerator table (e.g. H100-SXM-80GB)",
       hardware=True),
    _k("accelerator_count", "int", "devices", "devices in the job (same as n_gpus)", low=1, hardware=True,
       high=MAX_DEVICES),
    _k("accelerator_memory_gib", "float", "GiB", "memory per device (default: the accelerator table's)",
       low=1e-9, hardware=True),
    _k("nodes", "int", "nodes", "nodes the job spans (devices per node = n_gpus / nodes)", low=1, hardware=True,
       high=MAX_DEVICES),
    _k("interconnect", "str", "name", "network between nodes (free text)", hardware=True),
])
HARDWARE_KEYS = tuple(k for k, spec in KEYS.items() if spec.hardware)
FAMILIES = {f: tuple(k for k, spec in KEYS.items() if spec.family == f) for f in dict.fromkeys(
    spec.family for spec in KEYS.values() if spec.family)}


def applies(name: str, config: Mapping[str, Any]) -> bool:
    """Whether key ``name`` means something for ``config``: a key of one kind of model (its
    ``family``: mixture of experts, MLA, Mamba hybrids, sliding windows, MTP) only where the config
    gives some key of that kind; a dense model has no expert keys to leave out.

    >>> applies("experts_per_token", {"n_layers": 32}), applies("experts_per_token", {"n_experts": 8}), applies("tp", {})
    (False, True, True)
    """
    spec = KEYS.get(name)
    return spec is None or spec.family is None or any(not is_missing(config.get(k)) for k in FAMILIES[spec.family])

# what a config must give (directly or through a model preset) to be priced
REQUIRED = ("n_layers", "hidden_dim", "n_heads", "vocab_size", "seq_len", "n_gpus", "accelerator")
DEGREES = ("tp", "pp", "cp", "dp", "ep", "vp")


def help_text() -> str:
    """The accepted keys with their units, for a command's ``--help``."""
    lines = ["LLM config keys (KEY=VALUE; model=NAME fills the shape from the catalog):"]
    for key in KEYS.values():
        unit = f" [{key.unit}]" if key.unit else ""
        choices = f" ({', '.join(key.choices)})" if key.choices else ""
        lines.append(f"  {key.name}{unit}: {key.doc}{choices}")
    lines.append("required: " + ", ".join(REQUIRED) + " (the shape keys from model=NAME)")
    return "\n".join(lines)


def typed(key: Key, value: Any) -> Any:
    """``value`` as ``key``'s type, range-checked; a :class:`ConfigError` names the key."""
    name = key.name
    if key.kind == "bool":
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in ("true", "1", "yes", "on"):
            return True
        if text in ("false", "0", "no", "off"):
            return False
        raise ConfigError(f"{name}={value!r}: expected true or false")
    if key.kind == "modules":  # a comma-separated set of choices, in their declared order; "none" for none
        if isinstance(value, (dict, bool)):
            raise ConfigError(f"{name}={value!r}: expected none or some of {', '.join(key.choices)}, comma-separated")
        words = value if isinstance(value, (list, tuple)) else str(value).replace(" ", ",").split(",")
        given = {str(w).strip().lower() for w in words} - {"", "none"}
        wrong = sorted(given - set(key.choices))
        if wrong:
            close = difflib.get_close_matches(wrong[0], key.choices, n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            raise ConfigError(f"{name}={value!r}: {wrong[0]} is no module perfzoo knows{hint}; give none or some of "
                              f"{', '.join(key.choices)}, comma-separated")
        return ",".join(c for c in key.choices if c in given) or "none"
    if key.kind in ("str", "choice"):
        if isinstance(value, (dict, list)) or isinstance(value, bool):
            raise ConfigError(f"{name}={value!r}: expected a {'name' if key.kind == 'str' else 'value'}")
        text = str(value).strip()
        if key.kind == "choice":
            lowered = text.lower()
            if lowered not in key.choices:
                close = difflib.get_close_matches(lowered, key.choices, n=1)
                hint = f" (did you mean {close[0]}?)" if close else ""
                raise ConfigError(f"{name}={value!r}: choose one of {', '.join(key.choices)}{hint}")
            return lowered
        if not text:
            raise ConfigError(f"{name} is empty: give a {key.unit}")
        return text
    what = "a whole number" if key.kind == "int" else "a number"
    unit = f" of {key.unit}" if key.unit else ""
    if isinstance(value, bool):
        raise ConfigError(f"{name}={value!r}: expected {what}{unit}")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{name}={value!r}: expected {what}{unit}") from None
    if not math.isfinite(number):
        raise ConfigError(f"{name}={value!r}: expected a finite number{unit}")
    if key.kind == "int":
        if not number.is_integer():
            raise ConfigError(f"{name}={value!r}: expected {what}{unit}")
        number = int(number)
    if key.low is not None and number < key.low:
        least = f"{key.low:g} or more" if key.low > 0 and key.kind == "int" else (
            "positive" if key.low > 0 else "0 or more")
        raise ConfigError(f"{name}={value!r}: must be {least}" + (f" ({key.unit})" if key.unit else ""))
    if key.high is not None and number > key.high:
        most = f"{int(key.high):,}" if float(key.high).is_integer() and key.high < 1e12 else f"{key.high:g}"
        raise ConfigError(f"{name}={value!r}: must be at most {most}" + (f" ({key.unit})" if key.unit else "")
                          + ("" if key.name == "zero_stage" else ": more than any job perfzoo can price; check the value"))
    return number


def unknown_key_error(name: str, known=KEYS, listed: str = "listed by python -m perfzoo.predict --help") -> ConfigError:
    """The error for a key perfzoo does not read: the close names, and where the list is."""
    close = difflib.get_close_matches(name, sorted(known), n=3, cutoff=0.6)
    hint = f" (did you mean {', '.join(close)}?)" if close else ""
    return ConfigError(f"unknown key {name!r}{hint}; the accepted keys are {listed}")


def as_columns(cfg: Mapping[str, Any]) -> dict[str, Any]:
    """A checked config as predictor columns: ``hardware.<key>`` for hardware keys, else ``config.<key>``."""
    return {(f"hardware.{k}" if k in HARDWARE_KEYS else f"config.{k}"): v for k, v in cfg.items()}


__all__ = ["CHECKPOINTING_VALUES", "ConfigError", "DEGREES", "DISPATCHERS", "MOE_RECOMPUTE", "FAMILIES", "HARDWARE_KEYS", "KEYS", "Key", "MAX_DEVICES",
           "MAX_SEQUENCES", "MAX_TOKENS", "PRECISION_VALUES", "REQUIRED", "SHARDING_VALUES", "applies", "as_columns",
           "help_text", "typed", "unknown_key_error"]
