"""The ``fsdp`` workload's search spaces.

``fsdp-ads``
    The CubicML ads-model sharding search, scaled to a 2-core CPU: a per-layer strategy
    (``FULL_SHARD`` / ``SHARD_GRAD_OP`` / ``NO_SHARD``) for each of 11 layers x 5 local batch
    sizes x 9 per-rank memory budgets (8 limits + unlimited): 3^11 x 5 x 9 = 7,971,615
    configs, the paper's 5 x 3^11 x ~10 shape. The budgets bracket the measured footprint
    of a 2-rank job on this machine: 0.36-0.38 GiB of private data (``VmData``) per rank,
    of which about 0.34 GiB is the torch runtime, gloo and FSDP themselves; the spread
    comes from the batch (activations) and the NO_SHARD / SHARD_GRAD_OP layers (unsharded
    parameters, gradients and Adam state). So the tighter budgets make the memory-hungry
    configs run out of memory for real, the loosest never do.
``fsdp-ads-v2``
    The same search on a model where it matters: the 11 layers form a tower of differing
    widths (15k to 530k parameters, 36x), and the memory knob is ``memory_headroom_gib``, the
    limit above each rank's own footprint after the runtime and the process group started
    (:mod:`harness.protocol`), at 9 levels from 0.055 to 0.071 GiB: FULL_SHARD everywhere fits
    from 0.055 (batch 8) or 0.058 (batch 128), NO_SHARD everywhere needs more than 0.070. 3^11 x 5 x 9
    configs, as v1; records of the two versions never mix (their spaces differ). The levels
    were bisected on one CPU and do not bind on another (``datasets/fsdp-cpu`` card).
``fsdp-ads-v3``
    v2's model and knobs with a memory budget that means the same on every machine:
    ``tensor_budget_mib``, the most bytes of tensors a rank may hold live (parameters,
    gradients, optimizer state, activations, communication buffers), counted as a GPU allocator
    counts them (:mod:`harness.live_tensors`), at 9 levels from 32 to 48 MiB. Peaks over build
    and warm-up: FULL_SHARD everywhere 30.10 / 31.11 / 32.35 MiB at batch 8 / 64 / 128 (so the
    tightest level fails at batch 128), SHARD_GRAD_OP everywhere 30.98 / 32.77 / 35.00,
    NO_SHARD everywhere 48.16 / 48.29 / 48.43 (it fits at no level).
"""

from __future__ import annotations

from perfzoo.spaces import Categorical, Dimension, Space

FSDP_N_LAYERS = 11
# memory above the rank's footprint, GiB, at which a job fits: 0.053-0.055 with FULL_SHARD
# everywhere at batch 8, 0.056-0.058 at batch 128, over 0.070 with NO_SHARD everywhere (bisected
# with real OOMs, which harness.protocol makes the same on every repeat)
FSDP_V2_HEADROOM = (0.055, 0.057, 0.059, 0.061, 0.063, 0.065, 0.067, 0.069, 0.071)
SHARDING = ("FULL_SHARD", "SHARD_GRAD_OP", "NO_SHARD")


def _fsdp_space(name: str, batches: tuple, memory: Dimension, constants: dict, description: str) -> Space:
    """A per-layer sharding x local batch x memory space of the ``fsdp`` workload on 2 ranks."""
    return Space(
        name=name,
        workload="fsdp",
        dimensions=[Categorical(f"shard_{i:02d}", f"sharding strategy of layer {i}", choices=SHARDING)
                    for i in range(FSDP_N_LAYERS)]
        + [Categorical("local_batch", "examples per rank per step", choices=batches), memory],
        constants={"n_layers": FSDP_N_LAYERS, **constants, "n_tables": 8, "rows_per_table": 4096,
                   "emb_dim": 32, "world_size": 2, "fsdp_api": "fsdp2", "precision": "fp32"},
        world_size_key="world_size",
        description=description,
    )


FSDP_ADS = _fsdp_space(
    "fsdp-ads", (16, 32, 64, 128, 256),
    Categorical("memory_budget_gib", "per-rank memory limit in GiB (None: unlimited)",
                choices=(0.36, 0.365, 0.37, 0.375, 0.38, 0.385, 0.39, 0.40, None)),
    {"width": 128}, "ads-model per-layer FSDP sharding x local batch x memory budget, 2 CPU ranks")


# output width of each layer of the v2 tower (input 64): layers of 15k to 530k parameters
FSDP_V2_WIDTHS = (128, 256, 256, 128, 64, 32, 64, 192, 192, 64, 32)


def _tower_space(name: str, memory: Dimension, memory_words: str) -> Space:
    """The v2 tower (:data:`FSDP_V2_WIDTHS`) x local batch 8-128 x a memory knob."""
    return _fsdp_space(
        name, (8, 16, 32, 64, 128), memory,
        {"width": 64, **{f"width_{i:02d}": w for i, w in enumerate(FSDP_V2_WIDTHS)}},
        f"ads-model per-layer FSDP sharding x local batch x {memory_words}, 11 layers of 15k-530k parameters, "
        "2 CPU ranks")


FSDP_ADS_V2 = _tower_space(
    "fsdp-ads-v2",
    Categorical("memory_headroom_gib", "per-rank memory limit above the rank's own footprint after "
                "runtime and process-group start, GiB", choices=FSDP_V2_HEADROOM),
    "memory headroom")

# live-tensor budget per rank, MiB: FULL_SHARD everywhere needs 30.10 (batch 8) to 32.35 (batch
# 128), NO_SHARD everywhere 48.16 to 48.43 (harness.live_tensors)
FSDP_V3_BUDGET_MIB = (32, 34, 36, 38, 40, 42, 44, 46, 48)

FSDP_ADS_V3 = _tower_space(
    "fsdp-ads-v3",
    Categorical("tensor_budget_mib", "per-rank budget on the bytes of tensors the rank holds live "
                "(parameters, gradients, optimizer state, activations, buffers), MiB", choices=FSDP_V3_BUDGET_MIB),
    "live-tensor memory budget")
