"""``fsdp``: the recommendation model with a sharding strategy per layer (the CubicML paper's
ads model, scaled to CPU ranks), as one bundle.

=============== ===========================================================================
harness         :mod:`harness.workloads.fsdp_ads` (the model, FSDP1/FSDP2 per layer)
spaces          :mod:`.spaces`: ``fsdp-ads-v3`` (the default), ``fsdp-ads-v2``, ``fsdp-ads``
cost model      :mod:`.cost`: memory, data-parallel traffic and compute per layer strategy
baselines       :mod:`.baselines`: the FSDP default and the expert heuristic ladders
vocabulary      the ``fsdp`` keys of ``docs/architecture.md``
=============== ===========================================================================
"""

from __future__ import annotations

from harness.workloads.fsdp_shapes import tower_layer_params
from perfzoo.workloads._base import WorkloadSpec
from perfzoo.workloads.fsdp_ads.baselines import BASELINES, EXPERT_ESTIMATES, MemoryEstimate, expert_ladder, hand_tuned_ladder
from perfzoo.workloads.fsdp_ads.cost import N_SHARD_LAYERS, claims, cost, fsdp_columns, fsdp_estimate
from perfzoo.workloads.fsdp_ads.spaces import (FSDP_ADS, FSDP_ADS_V2, FSDP_ADS_V3, FSDP_N_LAYERS, FSDP_V2_HEADROOM,
                                               FSDP_V2_WIDTHS, FSDP_V3_BUDGET_MIB, SHARDING)

SPEC = WorkloadSpec(
    name="fsdp",
    harness="harness.workloads.fsdp_ads",
    throughput_unit="queries/s",
    default_space="fsdp-ads-v3",
    spaces=(FSDP_ADS, FSDP_ADS_V2, FSDP_ADS_V3),
    cost=cost,
    claims=claims,
    size_keys=frozenset({"n_layers", "width", "n_tables", "rows_per_table", "emb_dim", "local_batch", "world_size",
                         "memory_budget_gib"}),
    optional_keys=frozenset({"memory_budget_gib", "fsdp_api", "precision"}),
    baselines=BASELINES,
)

__all__ = ["BASELINES", "EXPERT_ESTIMATES", "FSDP_ADS", "FSDP_ADS_V2", "FSDP_ADS_V3", "FSDP_N_LAYERS", "FSDP_V2_HEADROOM",
           "FSDP_V2_WIDTHS", "FSDP_V3_BUDGET_MIB", "MemoryEstimate", "N_SHARD_LAYERS", "SHARDING", "SPEC", "claims",
           "cost", "expert_ladder", "fsdp_columns", "fsdp_estimate", "hand_tuned_ladder", "tower_layer_params"]
