"""The ``fsdp`` workload's baselines, which the closed loop is compared with, fixed before any search ran.

Each is a *ladder*: configs to try in order until one finishes ``ok`` (:data:`BASELINES`, the
spec's ``baselines``).
:func:`hand_tuned_ladder` is the FSDP default of ``fsdp-ads``-like spaces, :func:`expert_ladder`
an FSDP expert's heuristic on ``fsdp-ads-v2``- and ``-v3``-like spaces.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from harness.workloads.fsdp_shapes import tower_layer_params
from perfzoo.console import InputError
from perfzoo.spaces.codec import SpaceCodec
from perfzoo.workloads._base import Baseline


def hand_tuned_ladder(space: Any) -> list[dict]:
    """The hand-tuned baseline of ``fsdp-ads``, as a ladder to climb down.

    What an engineer does without a searcher: every layer ``FULL_SHARD`` (the safest, least
    memory), the memory budget left at its default (unlimited), and the largest local batch
    that fits: the ladder lists the batches largest first; the loop runs them in order and
    stops at the first job that finishes ``ok``.
    """
    codec = space if isinstance(space, SpaceCodec) else SpaceCodec(space)
    sp = codec.space
    shard = [d for d in sp.dimensions if d.name.startswith("shard_")]
    if not shard or "local_batch" not in codec.names:
        raise InputError(f"no hand-tuned baseline is defined for space {sp.name!r} (only for fsdp-ads-like spaces)")
    out = []
    memory = _memory_knob(codec)
    for batch in sorted(sp.dimension("local_batch").values, reverse=True):
        cfg = {d.name: "FULL_SHARD" for d in shard}
        cfg["local_batch"] = batch
        if memory is not None:
            values = sp.dimension(memory).values
            cfg[memory] = None if None in values else max(v for v in values)
        out.append(sp.validate(cfg))
    return out


def _memory_knob(codec: SpaceCodec) -> Optional[str]:
    """The space's memory knob: ``tensor_budget_mib`` (v3), ``memory_headroom_gib`` (v2) or
    ``memory_budget_gib`` (v1), if any."""
    return next((k for k in ("tensor_budget_mib", "memory_headroom_gib", "memory_budget_gib") if k in codec.names),
                None)


@dataclass(frozen=True)
class MemoryEstimate:
    """An engineer's memory estimate of a tower config, in the unit of the space's memory knob:
    ``base`` (every layer FULL_SHARD) + ``per_example`` x local batch + ``no_shard_bytes`` per
    parameter of each NO_SHARD layer; the rule keeps it within ``margin`` x the limit."""

    base: float
    per_example: float
    no_shard_bytes: float
    unit_bytes: int
    margin: float = 1.0


# per memory knob, fixed before any search ran. v2 (GiB over the footprint, RLIMIT_DATA): from
# calibration runs on the Xeon, no margin. v3 (MiB of live tensors): every layer FULL_SHARD
# measures 30.10 MiB at batch 8 and 32.35 at 128 (a line through both); a NO_SHARD layer keeps
# the other half of its fp32 parameters, gradients and Adam m and v (16 / 2 bytes per
# parameter); 10% of the budget kept spare.
EXPERT_ESTIMATES = {
    "memory_headroom_gib": MemoryEstimate(0.054, 0.000025, 9.4, 2**30),
    "tensor_budget_mib": MemoryEstimate(29.95, 0.01875, 8.0, 2**20, margin=0.9),
}


def expert_ladder(space: Any) -> list[dict]:
    """The expert heuristic of ``fsdp-ads-v2`` and ``-v3``, fixed before any search ran, as a ladder.

    What an engineer who knows FSDP does: the most memory (the largest level), and at each local
    batch, largest first, NO_SHARD the smallest layers (their all-gathers are the worst latency
    per byte) while the memory estimate of the space's knob (:data:`EXPERT_ESTIMATES`) stays
    within it; the others FULL_SHARD. The loop runs the rungs in order until one finishes ``ok``.
    """
    codec = space if isinstance(space, SpaceCodec) else SpaceCodec(space)
    sp, memory = codec.space, _memory_knob(codec)
    if memory not in EXPERT_ESTIMATES:
        raise InputError(f"no expert heuristic is defined for space {sp.name!r} "
                         "(only for fsdp-ads-v2- and fsdp-ads-v3-like spaces)")
    est = EXPERT_ESTIMATES[memory]
    limit = max(sp.dimension(memory).values) * est.margin
    ladder = []
    for cfg in hand_tuned_ladder(codec):
        params = tower_layer_params(cfg)
        estimate = est.base + est.per_example * cfg["local_batch"]
        for i in sorted(range(len(params)), key=params.__getitem__):
            extra = est.no_shard_bytes * params[i] / est.unit_bytes
            if estimate + extra > limit:
                break
            cfg[f"shard_{i:02d}"], estimate = "NO_SHARD", estimate + extra
        ladder.append(sp.validate(cfg))
    return ladder


# the baseline phases of the closed loop: ladder and the rule written into the plan
BASELINES = {
    "baseline": Baseline(hand_tuned_ladder, "the FSDP default: every layer FULL_SHARD, the most memory, the largest "
                                            "local batch that runs ok (tried largest first)"),
    "expert": Baseline(expert_ladder, "the expert heuristic: NO_SHARD the smallest layers while a memory estimate "
                                      "allows, the most memory, the largest local batch that runs ok"),
}


__all__ = ["BASELINES", "EXPERT_ESTIMATES", "MemoryEstimate", "expert_ladder", "hand_tuned_ladder"]
