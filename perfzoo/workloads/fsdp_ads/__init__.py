"""``fsdp``: the recommendation model with a sharding strategy per layer (the CubicML paper's
ads model, scaled to CPU ranks), as one bundle.

=============== ===========================================================================
harness         :mod:`harness.workloads.fsdp_ads` (the model, FSDP1/FSDP2 per layer)
spaces          :mod:`.spaces`: ``fsdp-ads-v3`` (the default), ``fsdp-ads-v2``, ``fsdp-ads``
cost model      :mod:`.cost`: memory, data-parallel traffic and compute per layer strategy
baselines       :mod:`.baselines`: the FSDP default and the expert heuristic ladders
vocabulary      the ``fsdp`` keys below
=============== ===========================================================================

The ``fsdp`` config vocabulary:

===============================  ==================================================================
``n_layers``                     interaction/MLP layers (default 11)
``width``                        hidden width of the layers
``width_00`` ... ``width_10``    per-layer output width (v2 and v3: a tower of differing widths;
                                 absent: every layer ``width``)
``n_tables``, ``rows_per_table``  the sparse embedding tables, with ``emb_dim``
``local_batch``                  examples per rank per step
``world_size``                   ranks
``shard_00`` ... ``shard_10``    per-layer strategy: ``FULL_SHARD``, ``SHARD_GRAD_OP``, ``NO_SHARD``
                                 (FSDP2: ``reshard_after_forward`` True / False / replicated)
``fsdp_api``                     ``fsdp1`` or ``fsdp2``
``precision``                    ``fp32`` or ``bf16``
``memory_budget_gib``            v1 (``fsdp-ads``): a per-rank memory limit (``None``: unlimited)
``memory_headroom_gib``          v2 (``fsdp-ads-v2``): a per-rank limit above the rank's own
                                 footprint after start-up (:mod:`harness.protocol`)
``tensor_budget_mib``            v3 (``fsdp-ads-v3``): a budget on the bytes of the tensors a rank
                                 holds live, counted over build and warm-up as a GPU allocator
                                 counts them; the allocation past it fails as an OOM, the same on
                                 every machine (:mod:`harness.live_tensors`)
===============================  ==================================================================
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
