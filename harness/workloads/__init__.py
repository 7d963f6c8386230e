"""The workloads the harness can run, behind one small interface.

A workload module defines ``NAME`` and ``build(config, ctx) -> Built``:
given a complete config (see :mod:`perfzoo.spaces` for the knobs) and a :class:`RunContext`
(rank, world size, device, device mesh), it builds the model with its parallelism applied and
returns a ``step`` callable that runs one full training step (forward, backward, optimizer).
Everything around it -- process group, memory budget, warm-up, timing, failure handling,
reporting -- is the worker's (:mod:`harness.worker`) and the same for every workload and
every launcher. What perfzoo knows about a workload (its spaces, cost model, vocabulary,
throughput unit) is its bundle's, :mod:`perfzoo.workloads`, whose spec names the module here;
each job carries that module's path (``JobSpec.module``) and the worker imports it
(:func:`load`), so the harness imports nothing of perfzoo and keeps no table of its own.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any, Callable, Optional


@dataclass
class RunContext:
    """Where a rank runs: its rank, the world, the torch device and the 1-D data-parallel mesh."""

    rank: int
    world_size: int
    local_rank: int
    device: Any  # torch.device
    mesh: Any  # torch.distributed.device_mesh.DeviceMesh over all ranks
    _meshes: dict = field(default_factory=dict)

    @property
    def device_type(self) -> str:
        return self.device.type

    def replicate_mesh(self):
        """A 2-D (replicate=world, shard=1) mesh: FSDP2 over it is plain replication (NO_SHARD)."""
        if "replicate" not in self._meshes:
            from torch.distributed.device_mesh import init_device_mesh

            self._meshes["replicate"] = init_device_mesh(
                self.device_type, (self.world_size, 1), mesh_dim_names=("replicate", "shard"))
        return self._meshes["replicate"]


@dataclass
class Built:
    """A built job: one call of ``step`` is one training step on this rank."""

    step: Callable[[], None]
    items_per_step: float  # examples or tokens of one step on this rank
    flops_per_step: Optional[float] = None  # model FLOPs of one step on this rank (for MFU)
    info: dict = field(default_factory=dict)  # e.g. n_params, what was applied


def load(module: str):
    """The module that builds a job (``JobSpec.module``: a dotted path with ``build(config, ctx)``)."""
    if not module:
        raise ValueError("the job names no harness module (JobSpec.module): give the dotted path of the module "
                         "whose build(config, ctx) builds it, as perfzoo.workloads' spec.harness does")
    built = importlib.import_module(module)
    if not callable(getattr(built, "build", None)):
        raise ValueError(f"harness module {module!r} has no build(config, ctx)")
    return built
