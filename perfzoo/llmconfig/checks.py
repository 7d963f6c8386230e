"""The checks of an LLM config as a whole, and model presets by name: what refuses a config perfzoo
cannot price (one line each, naming the key and the fix) instead of answering from fallback values.
:func:`check` (named by the package: ``llmconfig.check``) returns the config typed and completed (the
model preset fills the keys it leaves out), or raises :class:`~perfzoo.llmconfig.keys.ConfigError`:

* a key not in :data:`~perfzoo.llmconfig.keys.KEYS` is refused with the close names (``seq_lenn`` ->
  ``seq_len``);
* each value is type- and range-checked (``tp=0``, ``n_gpus=-8``, ``seq_len=abc``), counts from
  above too (``n_gpus=1e9``, ``seq_len=1e12``: past the keys' ``MAX_DEVICES``, ``MAX_TOKENS``,
  ``MAX_SEQUENCES``; ``zero_stage`` 0-3);
* parallel degrees are checked against the device count (``tp=3 dp=8 n_gpus=8``), the heads,
  the experts and the batch (fewer sequences than data-parallel ranks, ``global_batch_size=32`` on
  64 of them, is refused); ``zero_stage`` and ``fsdp`` must name one sharding;
* a mixture of experts must say how many experts each token visits (``experts_per_token``);
* the accelerator must be in the accelerator table (:mod:`perfzoo.hardware.accelerators`; the error
  lists the known names) and have the config's precision (``fp8`` on an A100 is refused);
* a config that gives no shape, sequence length, device count or accelerator cannot be
  priced: the error says what is missing (``REQUIRED``).

What a framework runs (its sharding, precision, layer split) is checked once the layout is complete
(:func:`perfzoo.llmconfig.layout_defaults.complete`, the framework's bundle: :func:`perfzoo.frameworks.refusal`).

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

import math
import warnings
from typing import Any, Mapping, Optional

from perfzoo import frameworks
from perfzoo.hardware import accelerators
from perfzoo.llmconfig import catalog
from perfzoo.llmconfig.keys import KEYS, REQUIRED, ConfigError, typed, unknown_key_error
from perfzoo.records.vocabulary import is_missing, normalize_precision, precision_format


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
        given[key] = typed(KEYS[key], value)
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
    mixers = {k: cfg[k] for k in ("n_linear_layers", "n_mamba_layers", "n_attention_layers") if cfg.get(k)}
    if L is not None and sum(mixers.values()) > L:
        raise ConfigError(f"{' + '.join(f'{k} = {v}' for k, v in mixers.items())} is more than the model's "
                          f"n_layers = {L}: each layer has one mixer")
    if cfg.get("n_linear_layers") and not (cfg.get("linear_key_heads") and cfg.get("linear_key_head_dim")):
        raise ConfigError(f"n_linear_layers = {cfg['n_linear_layers']} needs the linear attention's "
                          "linear_key_heads and linear_key_head_dim (and its value heads' where they differ)")


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
    if frameworks.get(cfg.get("framework")).runs.partial_microbatches and None not in (B, dp):
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




__all__ = ["ZERO_STAGES", "accelerator_spec", "check", "check_precision", "cp_splits", "known_accelerator", "preset"]
