"""What a published row's options and layout cells say that no one-cell rule reads: each reading
sets config keys, adds a line to the row's ``perfzoo_derived`` and counts itself in the load report.

* :func:`read_framework`: the framework, from the ``source`` column, else from ``other_opts``
  (NVIDIA's DGX Cloud recipes name theirs there: ``NeMo/Megatron-Core`` -> ``nemo``); a JAX
  framework (MaxText, Paxml) is none the cost model has a recipe for: left unknown, and said.
* :func:`read_expert_tp`: ``ETP=4`` in ``other_opts`` -> ``etp`` (Megatron-Core's
  ``expert_tensor_parallel_size``).
* :func:`read_fsdp_group`: an ``fsdp`` cell that gives a number gives the FSDP shard group
  (MaxText's ``ici_fsdp x dcn_fsdp``): 0 is no FSDP (``none``), the whole data-parallel group
  ``full_shard``, a part of it ``hybrid_shard`` (sharded within each group, replicated across
  them: ``other_opts`` "hybrid FSDP: shard group 128 x 4 replicas"); a cell that says FSDP and
  that its group is not stated is read as sharding over the data-parallel group, and said.
* :func:`read_local_batch`: a ``micro_batch_size`` cell that gives a rank's local batch;
  :func:`read_recipe`: what a row leaves to its framework's recipe (the bundle's
  :class:`~perfzoo.frameworks.Recipe`: torchtitan's compiled loss, its bf16 tail, its FP8 all-gather).
* :func:`read_virtual_stages`: ``vp`` with ``pp = 1``: a single pipeline stage runs no virtual
  pipeline (Megatron-Core's ``get_forward_backward_func`` picks the no-pipelining schedule when
  the pipeline has one stage, whatever ``vp`` says), so ``vp`` is unset; the cell stays in
  ``annotations['vp_raw']``.

>>> report, derived = LoadReport(file="dgxc.csv", rows=1), []
>>> read_framework("NVIDIA DGX Cloud benchmarking recipes", "NeMo/Megatron-Core; ETP=4", derived, report)
'nemo'
>>> config = {"etp": None}
>>> read_expert_tp(config, "NeMo/Megatron-Core; ETP=4", derived, report); config["etp"]
4
"""

from __future__ import annotations

import math
import re
from typing import Optional

from perfzoo import frameworks
from perfzoo.datasets.sources._base import LoadReport
from perfzoo.datasets.sources._csv import Row
from perfzoo.records.vocabulary import (BF16_TAIL_RULES, FP8_GATHER_RULES, FRAMEWORK_RULES, INTERLEAVED_RULES,
                                        UNPRICED_FRAMEWORK_RULES, phrase_rules)

_ETP = re.compile(r"\bETP\s*=\s*(\d+)", re.IGNORECASE)
_GROUP = re.compile(r"\d+")
_UNSTATED = re.compile(r"not stated", re.IGNORECASE)


def read_framework(source: str, options: str, derived: list[str], report: LoadReport) -> Optional[str]:
    """The framework the ``source`` column names, else the one ``other_opts`` names, else None
    (with a line saying so where ``other_opts`` names a framework the cost model cannot price)."""
    framework = phrase_rules(source, FRAMEWORK_RULES)
    if framework is not None:
        derived.append(f"framework={framework} (from the source column)")
        report.derived["framework from the source column"] += 1
        return str(framework)
    framework = phrase_rules(options, FRAMEWORK_RULES)
    if framework is not None:
        derived.append(f"framework={framework} (from other_opts)")
        report.derived["framework from other_opts"] += 1
        return str(framework)
    unpriced = phrase_rules(options, UNPRICED_FRAMEWORK_RULES)
    if unpriced is not None:
        derived.append(f"framework unknown: other_opts names {unpriced}, which the cost model has no recipe for "
                       "(priced by its other keys)")
        report.derived[f"framework unknown ({unpriced}: no recipe in the cost model)"] += 1
    return None


def read_expert_tp(config: dict, options: str, derived: list[str], report: LoadReport) -> None:
    """``etp`` from an ``ETP=n`` in ``other_opts``, where the config has none."""
    found = _ETP.search(options)
    if found and config.get("etp") is None:
        config["etp"] = int(found.group(1))
        derived.append(f"etp={config['etp']} (from other_opts)")
        report.derived["etp from other_opts"] += 1


def read_fsdp_group(config: dict, cell: Optional[str], derived: list[str], report: LoadReport) -> None:
    """``fsdp`` from a cell that states the FSDP shard group's size, or that says FSDP with its
    group not stated (module docstring)."""
    if cell is None:
        return
    if config.get("fsdp") == "full_shard" and _UNSTATED.search(cell):
        derived.append(f"fsdp=full_shard (from {cell!r}): its shard group is not stated; priced as "
                       "sharding over the data-parallel group")
        report.derived["fsdp full_shard, shard group not stated"] += 1
        return
    if config.get("fsdp") is not None or not _GROUP.fullmatch(cell.strip()):
        return
    group, ranks = int(cell), (config.get("dp") or 0) * (config.get("cp") or 1)
    if group == 0:
        config["fsdp"], why = "none", "0: no FSDP"
    elif ranks and group >= ranks:
        config["fsdp"], why = "full_shard", f"a shard group of {group}, the whole data-parallel group"
    elif ranks and ranks % group == 0:
        config["fsdp"], why = "hybrid_shard", f"a shard group of {group} of the {ranks} data-parallel ranks"
        config["shard_group"] = group
    else:
        return
    derived.append(f"fsdp={config['fsdp']} (the fsdp cell gives {why})")
    report.derived[f"fsdp {config['fsdp']} from a shard-group size"] += 1


def read_virtual_stages(config: dict, raw: dict, derived: list[str], report: LoadReport) -> None:
    """``vp`` unset where the pipeline has one stage (module docstring); the cell kept in ``raw``."""
    vp, pp = config.get("vp"), config.get("pp")
    if vp is not None and vp > 1 and pp == 1:
        config["vp"], raw["vp"] = None, str(vp)
        derived.append(f"vp unset: the row gives vp={vp} with pp=1, and one pipeline stage runs no virtual "
                       "pipeline (Megatron-Core's no-pipelining schedule)")
        report.derived["vp unset (pp = 1: no virtual pipeline)"] += 1


def read_recipe(config: dict, row: Row, derived: list[str], report: LoadReport) -> None:
    """What a row leaves to its framework's recipe (:class:`perfzoo.frameworks.Recipe`, torchtitan's): a
    compiled run from the date its loss is compiled with the model compiles its loss too (``fused_loss``),
    a ``bf16 tail`` run keeps the layers its recipe does not convert in BF16 (``bf16_layers``), and an FP8
    run of a framework that gathers its Float8Linear weights in FP8 does so where its scales are
    tensorwise, not where they are rowwise (``fp8_param_gather``)."""
    framework = frameworks.get(config.get("framework"))
    name, recipe = framework.name, framework.recipe
    since = recipe.compiled_loss_since
    if since and config.get("compile") is True and config.get("fused_loss") is None \
            and (row.text("date") or "") >= since:
        config["fused_loss"] = True
        derived.append(f"fused_loss=True: {name} compiles its loss with the model since {since}")
        report.derived[f"fused_loss from compile ({name} since {since[:7]})"] += 1
    gather = phrase_rules(row.text("precision") or "", FP8_GATHER_RULES)
    if framework.physics.fp8_param_gather and config.get("precision") == "fp8" \
            and config.get("fp8_param_gather") is None and gather is not None:
        config["fp8_param_gather"] = gather
        derived.append(f"fp8_param_gather={gather}: {name}'s float8 all-gather "
                       f"({'tensorwise scales: its presets turn it on' if gather else 'none for rowwise scales'})")
        report.derived[f"fp8_param_gather from the precision ({name})"] += 1
    layers, share = config.get("n_layers"), recipe.low_precision_share
    if share is not None and layers and phrase_rules(row.text("precision") or "", BF16_TAIL_RULES):
        config["bf16_layers"] = layers - math.floor(share * layers)
        derived.append(f"bf16_layers={config['bf16_layers']}: {name}'s recipe with a bf16 tail keeps the last "
                       f"{1 - share:.0%} of the {layers} layers in BF16")
        report.derived[f"bf16_layers from a bf16 tail ({name}'s recipe)"] += 1


def read_local_batch(config: dict, options: str, derived: list[str], report: LoadReport) -> None:
    """Read a cell that gives a data-parallel rank's batch, not its micro batch. Where the row's
    framework splits it (:class:`perfzoo.frameworks.Recipe`'s ``local_batch_split``: torchtitan) a step runs
    that batch in ``pp`` micro-batches (one without a pipeline; torchtitan's default while
    ``pipeline_parallel_microbatches`` is unset), and an interleaved schedule runs its recipe's stages per
    rank (torchtitan's default for multi-stage schedules: ``generate_split_points``, 2024-12); under
    another framework the micro batch is unknown."""
    local, pp = config["micro_batch_size"], config.get("pp") or 1
    framework = frameworks.get(config.get("framework"))
    name, recipe = framework.name, framework.recipe
    if recipe.local_batch_split and local and local % pp == 0:
        config["micro_batch_size"] = local // pp
        derived.append(f"micro_batch_size={local // pp}: {name} splits the local batch of {local} "
                       f"into pp={pp} micro-batches by default")
        report.derived[f"micro batch = local batch / pp ({name}'s default)"] += 1
        if config.get("vp") is None and recipe.stages_per_rank and phrase_rules(options, INTERLEAVED_RULES):
            config["vp"] = recipe.stages_per_rank
            derived.append(f"vp={recipe.stages_per_rank}: {name}'s default stages per rank "
                           "of an interleaved schedule (from other_opts)")
            report.derived[f"vp from an interleaved schedule ({name}'s default)"] += 1
        return
    config["micro_batch_size"] = None
    derived.append("micro_batch_size unknown: the cell gives the local batch per data-parallel rank")
    report.derived["micro batch unknown (the cell gives the local batch)"] += 1
