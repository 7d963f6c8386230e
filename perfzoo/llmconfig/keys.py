"""The keys of an LLM config: every key ``predict``, ``plan`` and ``search`` accept, with
its unit and range, model presets by name, and the checks that refuse a config perfzoo cannot
price (one line each, naming the key and the fix) instead of answering from fallback values.

A config is a flat dict of the vocabulary of ``docs/architecture.md`` plus the hardware keys
(``accelerator``, ``accelerator_count``, ...) and ``model``, a name from the model catalog
(:mod:`perfzoo.llmconfig.catalog`) whose shape fills the keys the config leaves out. :func:`check` returns
the config typed and completed, or raises :class:`ConfigError`:

* a key not in :data:`KEYS` is refused with the close names (``seq_lenn`` -> ``seq_len``);
* each value is type- and range-checked (``tp=0``, ``n_gpus=-8``, ``seq_len=abc``), counts from
  above too (``n_gpus=1e9``, ``seq_len=1e12``: past :data:`MAX_DEVICES`, :data:`MAX_TOKENS`,
  :data:`MAX_SEQUENCES`; ``zero_stage`` 0-3);
* parallel degrees are checked against the device count (``tp=3 dp=8 n_gpus=8``), the heads,
  the experts and the batch (fewer sequences than data-parallel ranks, ``global_batch_size=32`` on
  64 of them, is refused); ``zero_stage`` and ``fsdp`` must name one sharding;
* a mixture of experts must say how many experts each token visits (``experts_per_token``);
* the accelerator must be in the accelerator table (:mod:`perfzoo.hardware.accelerators`; the error
  lists the known names) and have the config's precision (``fp8`` on an A100 is refused);
* a config that gives no shape, sequence length, device count or accelerator cannot be
  priced: the error says what is missing (:data:`REQUIRED`).

>>> cfg = check({"model": "llama3-70b", "seq_len": 8192, "n_gpus": 64, "tp": 8, "pp": 4,
...              "accelerator": "H100-SXM-80GB"})
>>> cfg["n_layers"], cfg["dp"], cfg["model_name"]
(80, 2, 'llama3-70b')
>>> check({"model": "llama3-70b", "seq_lenn": 8192})
Traceback (most recent call last):
...
perfzoo.llmconfig.keys.ConfigError: unknown key 'seq_lenn' (did you mean seq_len?); the accepted keys are listed by python -m perfzoo.predict --help
>>> check({"model": "llama3-8b", "seq_len": 4096, "n_gpus": 8, "tp": 3, "dp": 8, "accelerator": "H100"})
Traceback (most recent call last):
...
perfzoo.llmconfig.keys.ConfigError: tp x pp x cp x dp = 3 x 1 x 1 x 8 = 24 but n_gpus = 8: the parallel degrees must multiply to the device count
"""

from __future__ import annotations

import difflib
import math
import warnings
from dataclasses import dataclass
from typing import Any, Mapping, Optional

from perfzoo.console import UsageError
from perfzoo.hardware import accelerators
from perfzoo.llmconfig import catalog
from perfzoo.records.vocabulary import FRAMEWORKS, is_missing, normalize_precision, precision_format


class ConfigError(UsageError, ValueError):
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
    family: Optional[str] = None  # a kind of model's keys (moe, mla, mamba, window, mtp): see applies()
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


def _typed(key: Key, value: Any) -> Any:
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


def known_accelerator(name: Any) -> Optional[accelerators.AcceleratorSpec]:
    """The accelerator table's row for ``name``, or None, without the unknown-name warning (for
    reading tables, where an unknown name is reported elsewhere)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", accelerators.UnknownAcceleratorWarning)
        return accelerators.spec(name)


def accelerator_spec(name: str) -> accelerators.AcceleratorSpec:
    """The accelerator table's row for ``name``; a :class:`ConfigError` lists the known names."""
    found = known_accelerator(name)
    if found is None:
        raise ConfigError(f"unknown accelerator {name!r}: perfzoo has no peak FLOP/s or bandwidths for it; "
                          f"known: {', '.join(accelerators.names())} (add a row to perfzoo/hardware/accelerators.csv)")
    return found


def check_precision(precision: str, spec: accelerators.AcceleratorSpec) -> None:
    """A :class:`ConfigError` unless ``spec``'s matrix units run ``precision``: its class needs a
    peak in the accelerator table (fp8: fp8 tensor cores) and its format a place in the row's
    ``formats`` (mxfp8 and nvfp4: Blackwell; AMD's CDNA 4 runs mxfp8 and mxfp4, not nvfp4); bf16
    needs a device whose row names no other 16-bit format (V100 runs fp16 only)."""
    cls, fmt = normalize_precision(precision), precision_format(precision)
    sixteen = sorted(spec.formats & {"fp16", "bf16"})
    if cls == "bf16" and sixteen and fmt not in sixteen:  # the table names the one 16-bit format it runs
        raise ConfigError(f"precision={precision}: {spec.name}'s matrix units run {sixteen[0]} only (16-bit), "
                          f"not {fmt}; choose precision={sixteen[0]}")
    if cls not in spec.peak_flops:
        has = ", ".join(p for p in accelerators.PRECISIONS if p in spec.peak_flops)
        raise ConfigError(f"precision={precision}: {spec.name} has no {cls} peak in the accelerator table "
                          f"(it lists {has}); choose a precision it runs")
    if spec.peak(fmt) is None:
        runs = ", ".join(sorted(spec.formats - {"fp16", "bf16"})) or "none"
        raise ConfigError(f"precision={precision}: {spec.name}'s matrix units do not run {fmt} (its low-precision "
                          f"formats in the accelerator table: {runs}); choose a precision it runs")


def preset(name: str) -> dict[str, Any]:
    """The shape keys of catalog model ``name``; a :class:`ConfigError` names close ones."""
    try:
        return catalog.get(name)
    except catalog.UnknownModelError as exc:
        raise ConfigError(str(exc)) from None


def _strip(key: str) -> str:
    for prefix in ("config.", "hardware."):
        if key.startswith(prefix):
            return key[len(prefix):]
    return key


# shape keys that, changed from a preset's, make its stated parameter count another model's
RESHAPING = ("n_layers", "hidden_dim", "ffn_dim", "n_heads", "n_kv_heads", "vocab_size", "n_experts",
             "experts_per_token", "moe_ffn_dim")


def check(config: Mapping[str, Any], require: bool = True) -> dict[str, Any]:
    """``config`` typed, checked and completed (see the module docstring): the model preset
    fills the keys it leaves out, ``dp`` and ``n_gpus`` / ``accelerator_count`` are filled from
    each other, and the accelerator is given its table name. ``require=False`` skips the
    :data:`REQUIRED` check (a partial config, e.g. what a plan adds layouts to).

    Keys may carry their ``config.`` / ``hardware.`` prefix; missing values (None, NaN, blank)
    count as not given.
    """
    given: dict[str, Any] = {}
    for raw_key, value in config.items():
        key = _strip(str(raw_key))
        if key not in KEYS:
            raise unknown_key_error(key)
        if is_missing(value):
            continue
        given[key] = _typed(KEYS[key], value)
    name = given.pop("model", None)
    filled: dict[str, Any] = {}
    if name is not None:
        filled = preset(name)
    elif "model_name" in given:
        filled = catalog.lookup(given["model_name"]) or {}
    out = {**filled, **given}
    if "n_params" in filled and "n_params" not in given and any(
            k in given and given[k] != filled.get(k) for k in RESHAPING):
        del out["n_params"]  # the preset's count is another shape's: this one is counted from its own
    if name is not None and "model_name" not in given:
        out["model_name"] = filled["model_name"]
    _check_hardware(out)
    _check_shape(out)
    layout_stated = "dp" in out or {"tp", "pp"} <= set(out)  # else dp is a guess from the device count
    _check_degrees(out)
    _check_sequence(out)
    _check_batch(out, layout_stated)
    _check_sharding(out)
    if require:
        missing = [k for k in REQUIRED if k not in out]
        if out.get("n_experts", 1) > 1 and "experts_per_token" not in out and not missing:
            raise ConfigError(f"cannot price this config: a mixture of {out['n_experts']} experts gives no "
                              "experts_per_token (experts): each token's compute and traffic scale with it; add "
                              "experts_per_token=...")
        if missing:
            what = ", ".join(f"{k} ({KEYS[k].unit})" for k in missing)
            shape = " or model=NAME for the shape" if set(missing) & {"n_layers", "hidden_dim", "n_heads",
                                                                       "vocab_size"} else ""
            raise ConfigError(f"cannot price this config: it gives no {what}; add {missing[0]}=...{shape}")
    return out


def _check_hardware(cfg: dict) -> None:
    if "accelerator" in cfg:
        spec = accelerator_spec(cfg["accelerator"])
        cfg["accelerator"] = spec.name
        if "precision" in cfg:
            check_precision(cfg["precision"], spec)
    n, count = cfg.get("n_gpus"), cfg.get("accelerator_count")
    if n is not None and count is not None and n != count:
        raise ConfigError(f"n_gpus = {n} but accelerator_count = {count}: give one device count")
    n = n if n is not None else count
    if n is not None:
        cfg["n_gpus"] = cfg["accelerator_count"] = n
        nodes = cfg.get("nodes")
        if nodes is not None and n % nodes:
            raise ConfigError(f"n_gpus = {n} is not divisible by nodes = {nodes}: every node holds as many devices")


def _check_shape(cfg: dict) -> None:
    a, k, d = cfg.get("n_heads"), cfg.get("n_kv_heads"), cfg.get("hidden_dim")
    if a is not None and k is not None and (k > a or a % k):
        raise ConfigError(f"n_heads = {a} is not divisible by n_kv_heads = {k}")
    if a is not None and d is not None and "head_dim" not in cfg and d % a:
        raise ConfigError(f"hidden_dim = {d} is not divisible by n_heads = {a}; give head_dim if the heads are "
                          "narrower")
    E, K = cfg.get("n_experts"), cfg.get("experts_per_token")
    if K is not None and (E is None or K > E):
        raise ConfigError(f"experts_per_token = {K} needs n_experts >= {K} (got {E})")
    L, kept = cfg.get("n_layers"), cfg.get("bf16_layers")
    if kept is not None and L is not None and kept > L:
        raise ConfigError(f"bf16_layers = {kept} is more than the model's n_layers = {L}")


def _check_degrees(cfg: dict) -> None:
    tp, pp, cp = (cfg.get(k, 1) for k in ("tp", "pp", "cp"))
    n = cfg.get("n_gpus")
    if cfg.get("vp", 1) > 1 and pp == 1:
        raise ConfigError(f"vp = {cfg['vp']} needs pipeline parallelism (pp > 1); drop vp or set pp")
    if n is not None:
        model = tp * pp * cp
        if "dp" in cfg:
            if model * cfg["dp"] != n:
                raise ConfigError(f"tp x pp x cp x dp = {tp} x {pp} x {cp} x {cfg['dp']} = {model * cfg['dp']} but "
                                  f"n_gpus = {n}: the parallel degrees must multiply to the device count")
        elif n % model:
            raise ConfigError(f"tp x pp x cp = {tp} x {pp} x {cp} = {model} does not divide n_gpus = {n}")
        else:
            cfg["dp"] = n // model
    a, kv = cfg.get("n_heads"), cfg.get("n_kv_heads")
    if a is not None and a % tp:
        raise ConfigError(f"n_heads = {a} is not divisible by tp = {tp}: tensor parallelism splits the heads")
    if kv is not None and kv % tp and tp % kv:
        raise ConfigError(f"n_kv_heads = {kv} and tp = {tp}: one must divide the other")
    ep, etp, E = cfg.get("ep", 1), cfg.get("etp", 1), cfg.get("n_experts")
    if ep > 1 or etp > 1:
        if E is None or E < 2:
            key, value = ("ep", ep) if ep > 1 else ("etp", etp)
            raise ConfigError(f"{key} = {value} needs a mixture-of-experts model (n_experts > 1)")
        if E % ep:
            raise ConfigError(f"n_experts = {E} is not divisible by ep = {ep}")
        # Megatron-Core's MoE parallel folding: the expert layers lay their ep x etp ranks (times the
        # expert-data-parallel degree) over the tp x cp x dp ranks of a pipeline stage
        if "dp" in cfg and (tp * cp * cfg["dp"]) % (ep * etp):
            raise ConfigError(f"ep x etp = {ep} x {etp} does not divide tp x cp x dp = {tp} x {cp} x {cfg['dp']}: "
                              "the expert layers fold their ranks into a pipeline stage's")
    L = cfg.get("n_layers")
    if L is not None and pp > L:
        raise ConfigError(f"pp = {pp} is more than the {L} layers")


# trainers that cut each device's share of the global batch into micro-batches of the given size,
# the last one partial: Composer's ``device_train_microbatch_size`` (llm-foundry's tables: MPT-13b,
# 8 GPUs, batch 2048, micro batch 12 -> 22 micro-batches of 256 sequences per device)
PARTIAL_MICROBATCH_FRAMEWORKS = ("llm-foundry",)


def cp_splits(seq_len: int, cp: int) -> bool:
    """Whether context parallelism over ``cp`` ranks can cut a ``seq_len``-token sequence into
    ``2 x cp`` equal chunks, two per rank, so that causal attention's work balances (Megatron-Core
    and Transformer Engine, PyTorch's context_parallel).

    >>> cp_splits(8192, 4), cp_splits(8190, 2)
    (True, False)
    """
    return cp <= 1 or seq_len % (2 * cp) == 0


def _check_sequence(cfg: dict) -> None:
    S, s, cp = cfg.get("packed_sample_len"), cfg.get("seq_len"), cfg.get("cp", 1)
    if s is not None and not cp_splits(s, cp):
        raise ConfigError(f"seq_len = {s} is not divisible by 2 x cp = {2 * cp}: context parallelism cuts each "
                          "sequence into 2 x cp chunks, two per rank, so that causal attention's work balances "
                          "(Megatron-Core and Transformer Engine, PyTorch's context_parallel)")
    if None not in (S, s) and S > s:
        raise ConfigError(f"packed_sample_len = {S} exceeds seq_len = {s}: samples packed into a sequence are no "
                          "longer than it; leave packed_sample_len out for one sample per sequence")


def _check_batch(cfg: dict, layout_stated: bool = True) -> None:
    """The batch against the data-parallel ranks; the whole-sequences-per-rank rules only where
    ``layout_stated`` (a table's row that gives no tp and pp has no known dp to hold them to)."""
    B, b, m, dp = (cfg.get(k) for k in ("global_batch_size", "micro_batch_size", "grad_accum", "dp"))
    if None not in (B, dp) and layout_stated and B < dp:
        raise ConfigError(f"global_batch_size = {B} is fewer sequences than the dp = {dp} data-parallel ranks: every "
                          f"rank takes at least one sequence a step; give global_batch_size >= {dp} or fewer ranks")
    if cfg.get("framework") in PARTIAL_MICROBATCH_FRAMEWORKS and None not in (B, dp):
        if B % dp:
            raise ConfigError(f"global_batch_size = {B} is not divisible by dp = {dp}: every device takes as many "
                              "sequences")
        if None not in (b, m) and m != math.ceil(B // dp / b):
            raise ConfigError(f"grad_accum = {m} but {B // dp} sequences per device in micro-batches of {b} take "
                              f"{math.ceil(B // dp / b)}")
        return
    if None not in (B, b, m, dp) and b * m * dp != B:
        raise ConfigError(f"micro_batch_size x grad_accum x dp = {b} x {m} x {dp} = {b * m * dp} but "
                          f"global_batch_size = {B}")
    if None not in (B, dp) and layout_stated and B % dp:
        raise ConfigError(f"global_batch_size = {B} is not divisible by dp = {dp}: every data-parallel rank takes as "
                          "many sequences")
    if None not in (B, b, dp) and B % (b * dp):
        raise ConfigError(f"global_batch_size = {B} is not divisible by micro_batch_size x dp = {b} x {dp}")


# ZeRO stages as fsdp names them (stage 3 within a node is hybrid_shard)
ZERO_STAGES = {0: "no_shard", 1: "zero1", 2: "shard_grad_op", 3: "full_shard"}


def _check_sharding(cfg: dict) -> None:
    z, f = cfg.get("zero_stage"), cfg.get("fsdp")
    if None not in (z, f) and f != ZERO_STAGES[z] and not (z == 3 and f == "hybrid_shard"):
        raise ConfigError(f"zero_stage = {z} and fsdp = {f} name different shardings (zero_stage {z} is "
                          f"fsdp={ZERO_STAGES[z]}): give one of them")


def as_columns(cfg: Mapping[str, Any]) -> dict[str, Any]:
    """A checked config as predictor columns: ``hardware.<key>`` for hardware keys, else ``config.<key>``."""
    return {(f"hardware.{k}" if k in HARDWARE_KEYS else f"config.{k}"): v for k, v in cfg.items()}


__all__ = ["DEGREES", "FAMILIES", "HARDWARE_KEYS", "KEYS", "MAX_DEVICES", "MAX_SEQUENCES", "MAX_TOKENS",
           "PARTIAL_MICROBATCH_FRAMEWORKS", "REQUIRED", "ZERO_STAGES", "ConfigError", "Key", "accelerator_spec",
           "applies", "as_columns", "check", "check_precision", "cp_splits", "help_text", "known_accelerator", "preset",
           "unknown_key_error"]
