"""What a layout means where a config leaves a knob out: said once, for ``predict`` and ``plan``.

``predict`` prices a config and ``plan`` its baselines the way ``plan`` generates its own layouts, so
one layout gets one answer whichever command prices it. :func:`complete` takes a checked config
(:func:`perfzoo.llmconfig.check`) and fills each layout knob it leaves out with what a plan's
layout runs, and reports each value it filled:

=============================  =====================================================================
``tp pp cp vp ep``              1
``micro_batch_size``           1, and ``grad_accum`` the global batch over ``micro_batch_size x dp``
``activation_checkpointing``   the least recompute under which it fits: ``none``, else ``selective``,
                               else ``full`` (:func:`perfzoo.analytic.least_recompute`; ``none``
                               where the accelerator is not known)
``fsdp``                       the framework's data parallelism with more than one data-parallel rank
                               (``dp x cp``; its bundle's ``data_parallel``: ``zero1``, torchtitan's
                               ``full_shard``), else ``none``
``precision``                  ``bf16`` (``fp16`` on a device whose 16-bit format it is: V100)
``sequence_parallel``          on with ``tp > 1``; ``flash_attention`` on
``nodes``                      the devices over the accelerator table's node size
=============================  =====================================================================

Sharding names say what they mean: with more than one data-parallel rank, Megatron's data
parallelism with the distributed optimizer is ``zero1`` and plain DDP (every rank a full copy of the
optimizer) is ``no_shard``. ``fsdp=none`` with more than one rank names neither, and is read as the
framework's data parallelism (``zero1``: what Megatron, NeMo and Megatron-Bridge run, and the published
tables' ``none`` rows measured; torchtitan's FSDP2 ``full_shard``) and said; ``zero_stage`` is read as
its ``fsdp`` name (0 ``no_shard``, 1 ``zero1``, 2 ``shard_grad_op``, 3 ``full_shard``). The training
framework is not filled: ``framework`` given or not, :func:`framework_note` says what was priced. The
completed layout must be one the framework runs (:meth:`perfzoo.frameworks.Framework.refuses`: its
shardings, precisions, layer split, interleaving), else a :class:`~perfzoo.llmconfig.ConfigError` says
its rule.

>>> from perfzoo import llmconfig
>>> done = complete(llmconfig.check({"model": "llama3-70b", "seq_len": 8192, "global_batch_size": 1024,
...                                  "n_gpus": 256, "tp": 4, "pp": 4, "fsdp": "none",
...                                  "accelerator": "H100-SXM-80GB"}))
>>> done.config["fsdp"], done.config["grad_accum"], done.config["nodes"]
('zero1', 64, 32)
>>> done.filled["activation_checkpointing"], done.read_as
('none', ['fsdp=none with 16 data-parallel ranks read as zero1 (the distributed optimizer, as Megatron runs its data parallelism; give fsdp=no_shard for plain DDP)'])
>>> complete(llmconfig.check({"model": "llama3-8b", "seq_len": 2048, "global_batch_size": 64, "n_gpus": 8,
...                           "tp": 2, "framework": "torchtitan", "accelerator": "H100-SXM-80GB"})).config["fsdp"]
'full_shard'
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping

import pandas as pd

from perfzoo import analytic, frameworks, llmconfig
from perfzoo.analytic.memory import MemoryRule

PARALLEL_DEFAULTS = {"tp": 1, "pp": 1, "cp": 1, "vp": 1, "ep": 1}


@dataclass
class Completed:
    """A config with its layout completed: ``config``; ``filled`` (key -> the value :func:`complete`
    gave it); ``read_as`` (a sentence per value read as another name)."""

    config: dict
    filled: dict = field(default_factory=dict)
    read_as: list = field(default_factory=list)

    def describe(self, keys=None) -> str:
        """The filled values (of ``keys``, default all) in one line (``tp=1 pp=1 ...``), or ``none``."""
        return " ".join(f"{k}={_text(v)}" for k, v in self.filled.items() if keys is None or k in keys) or "none"


def _text(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def data_ranks(cfg: Mapping[str, Any]) -> int:
    """The ranks data-parallel sharding spreads over: ``dp x cp``."""
    return int(cfg.get("dp", 1)) * int(cfg.get("cp", 1))


def complete(cfg: Mapping[str, Any], rule: MemoryRule = MemoryRule(), refuse: bool = True) -> Completed:
    """``cfg`` (checked by :func:`perfzoo.llmconfig.check`) with every layout knob it leaves out
    filled as the module docstring says (checkpointing by ``rule``); the filled values checked again
    with the given ones, and (``refuse``) against what the config's framework runs: a
    :class:`~perfzoo.llmconfig.ConfigError` with its rule (:func:`perfzoo.frameworks.refusal`)."""
    out, filled, read_as = dict(cfg), {}, []
    framework = frameworks.get(cfg.get("framework"))

    def fill(key: str, value: Any) -> None:
        if key not in out:
            out[key] = filled[key] = value

    for key, value in PARALLEL_DEFAULTS.items():
        fill(key, value)
    B, dp = out.get("global_batch_size"), out.get("dp")
    if "micro_batch_size" not in out and None not in (B, dp, out.get("grad_accum")):
        fill("micro_batch_size", B // (dp * out["grad_accum"]))
    fill("micro_batch_size", 1)
    out = llmconfig.check(out, require=False)  # the batch against the ranks, now that the layout is known
    if None not in (B, dp) and "grad_accum" not in out:
        per_step = out["micro_batch_size"] * dp
        partial = framework.runs.partial_microbatches
        fill("grad_accum", math.ceil(B / per_step) if partial else B // per_step)
    if "activation_checkpointing" not in out:  # decided last, once the layout is complete (its place kept)
        out["activation_checkpointing"] = filled["activation_checkpointing"] = None
    if "zero_stage" in out and "fsdp" not in out:
        out["fsdp"] = llmconfig.ZERO_STAGES[out.pop("zero_stage")]
        read_as.append(f"zero_stage={cfg['zero_stage']} read as fsdp={out['fsdp']}")
    ranks = data_ranks(out) if "dp" in out else None
    data_parallel = framework.runs.data_parallel
    if out.get("fsdp") == "none" and ranks is not None and ranks > 1:
        out["fsdp"] = data_parallel
        read_as.append(f"fsdp=none with {ranks} data-parallel ranks read as {data_parallel} "
                       f"({framework.runs.data_parallel_is}; give fsdp=no_shard for plain DDP)")
    if ranks is not None:
        fill("fsdp", data_parallel if ranks > 1 else "none")
    spec = llmconfig.known_accelerator(out["accelerator"]) if "accelerator" in out else None
    fp16_only = spec is not None and "fp16" in spec.formats and "bf16" not in spec.formats  # V100
    fill("precision", "fp16" if fp16_only else "bf16")
    fill("sequence_parallel", out["tp"] > 1)
    fill("flash_attention", True)
    if spec is not None and "n_gpus" in out:
        nodes = math.ceil(out["n_gpus"] / spec.node_size)
        if out["n_gpus"] % nodes == 0:  # else the devices per node are not the table's: left unknown
            fill("nodes", nodes)
    why = framework.refuses(out) if refuse else None  # before the checkpointing: every mode runs
    if why is not None:
        raise llmconfig.ConfigError(why)
    if out["activation_checkpointing"] is None:
        mode = _least_recompute(out, rule, read_as) if spec is not None else "none"
        out["activation_checkpointing"] = filled["activation_checkpointing"] = mode
    checked = llmconfig.check(out, require=False)
    return Completed(checked, {k: checked.get(k, v) for k, v in filled.items()}, read_as)


def _least_recompute(cfg: dict, rule: MemoryRule, read_as: list) -> str:
    """The least recompute under which ``cfg`` fits (``full`` where none does), and a sentence when it is not none."""
    frame = pd.DataFrame([llmconfig.as_columns({**cfg, "activation_checkpointing": None})])
    mode = str(analytic.least_recompute(frame, rule)["activation_checkpointing"].iloc[0])
    if mode != "none":
        read_as.append(f"activation_checkpointing not given: {mode}, the least recompute under which it fits")
    return mode


def framework_note(cfg: Mapping[str, Any]) -> str:
    """What framework a config was priced as: the one it names, or none in particular (and the keys
    that name one)."""
    given = cfg.get("framework")
    if given:
        return f"framework: {given}"
    choices = ", ".join(f for f in llmconfig.KEYS["framework"].choices if f != frameworks.UNKNOWN)
    return ("framework: not given, priced as no framework in particular (fused kernels, fp32 gradient reduction, "
            f"no TP overlap); name one with framework=... ({choices}): a framework's recipe can move the "
            "prediction by tens of percent")


__all__ = ["Completed", "PARALLEL_DEFAULTS", "complete", "data_ranks", "framework_note"]
