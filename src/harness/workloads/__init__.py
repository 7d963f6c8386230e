"""The workloads the harness can run, behind one small interface.

A workload module defines ``NAME`` and ``build(config, ctx) -> Built``:
given a complete config (see :mod:`perfzoo.spaces` for the knobs) and a :class:`RunContext`
(rank, world size, device, device mesh), it builds the model with its parallelism applied and
returns a ``step`` callable that runs one full training step (forward, backward, optimizer).
Everything around it -- process group, memory budget, warm-up, timing, failure handling,
reporting -- is the worker's (:mod:`harness.worker`) and the same for every workload and
every launcher. What perfzoo knows about a workload (its spaces, cost model, vocabulary,
throughput unit) is its bundle's, :mod:`perfzoo.workloads`, whose spec names the module here;
:data:`WORKLOADS` is the table the worker resolves a job's workload through (the harness
imports nothing of perfzoo's bundles, so it stays light).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

# workload name -> the module that builds and runs it (each perfzoo bundle's ``harness``)
WORKLOADS = {"fsdp": "harness.workloads.fsdp_ads", "llm": "harness.workloads.llm", "command": "harness.command"}


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


def get_workload(name: str):
    """The workload module for ``name`` ('fsdp', 'llm', or 'command': a user's launch command,
    which :class:`harness.command.CommandLauncher` runs instead of the worker)."""
    if name not in WORKLOADS:
        raise ValueError(f"unknown workload {name!r}; choose one of {sorted(WORKLOADS)}")
    return importlib.import_module(WORKLOADS[name])
