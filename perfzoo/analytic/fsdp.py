"""torch FSDP's per-layer collectives at scale: how many a step runs, which of them no compute
hides, and their seconds by NCCL's ring cost model (:mod:`.llm` counts their bytes).

FSDP's unit is a layer. Per micro-batch each unit all-gathers its parameters forward, again backward
(``full_shard``, ``hybrid_shard``; ``shard_grad_op`` keeps them from forward to backward) and
reduce-scatters its gradients (adapter tuning reduces none); under torchtitan's pipeline each unit
gathers once per step and reduce-scatters after the last micro-batch (:mod:`.memory`). Each call is a
ring of ``size - 1`` steps over the ranks the unit shards over (``hybrid_shard``: its shard group,
:meth:`~perfzoo.analytic.memory.Memory.shard_groups`), the steps between boards at the network's
latency (:func:`~perfzoo.analytic.hardware.ring_seconds`): 128 ranks on 16 boards pay about 0.3 ms a
call, 2048 about 4 ms, so per-GPU throughput falls with the GPU count where the bytes alone
(``(n-1)/n`` of a layer per call) keep it flat (``docs/studies/fsdp-scale-1207``). The next unit's
gather is prefetched under the current unit's compute, but a micro-batch's first gather has nothing
before it and the step's last reduce-scatter nothing after it: ``m + 1`` calls (2 under the
pipeline) stay on the critical path; the rest overlap the kernels, and what they do not hide shows.

>>> import pandas as pd
>>> from perfzoo.analytic.llm import LLMCost
>>> cost = LLMCost(pd.DataFrame([{"n_layers": 32, "hidden_dim": 4096, "n_heads": 32, "fsdp": "full_shard",
...                               "n_gpus": 64, "micro_batch_size": 2, "global_batch_size": 256}]))
>>> [float(x[0]) for x in fsdp_calls(cost)]  # m = 2: 2 x 32 x 3 calls, 2 + 1 of them exposed
[192.0, 3.0]
"""

from __future__ import annotations

import numpy as np

from perfzoo.analytic._frame import is_code
from perfzoo.analytic.hardware import group_bandwidth, ring_seconds
from perfzoo.records.vocabulary import SHARDINGS


def fsdp_calls(cost) -> tuple[np.ndarray, np.ndarray]:
    """(collectives per step, those no compute hides) of an :class:`~perfzoo.analytic.llm.LLMCost`'s
    dense FSDP units (module docstring); 0 for shardings that are not torch FSDP's."""
    full = is_code(cost.sharding, SHARDINGS, "full_shard", "hybrid_shard")
    grad_op = is_code(cost.sharding, SHARDINGS, "shard_grad_op")
    per_unit = np.select([full, grad_op], [3.0 - cost.adapters, 2.0 - cost.adapters], 0.0)
    pipelined = cost.memory.pipelined_fsdp
    calls = np.where(pipelined, per_unit.clip(max=2.0), cost.m * per_unit) * cost.stage_layers
    return calls, np.where(calls > 0, np.where(pipelined, 2.0, cost.m + 1.0), 0.0)


def dense_dp_seconds(cost, sent: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(seconds, of which exposed) for the ``sent`` bytes of the dense parameters' data-parallel
    traffic: FSDP's calls by NCCL's ring model, latency too; other shardings by bandwidth alone."""
    hw = cost.hw
    bandwidth = group_bandwidth(hw, cost.dp, cost.tp * cost.cp)
    calls, exposed = fsdp_calls(cost)
    if not np.any(calls > 0):  # no FSDP row: bandwidth alone (a search's million configs skip the rings)
        return sent / bandwidth, np.zeros_like(sent)
    # the ``dp*cp`` ranks of a unit's group lie ``tp`` apart (Megatron's order: TP, CP, DP)
    rings = ring_seconds(hw, sent, calls, cost.memory.shard_groups()[0], cost.tp, 1.0, bandwidth)
    seconds = np.where(calls > 0, rings, sent / bandwidth)
    return seconds, np.where(calls > 0, seconds * exposed / np.maximum(calls, 1.0), 0.0)
