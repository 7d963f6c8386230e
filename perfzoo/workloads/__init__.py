"""Workloads as bundles, one folder or module each (as torchtitan keeps ``models/<name>/``).

A bundle holds what perfzoo knows about one workload -- its search spaces, its cost model, its
config vocabulary, its closed-loop baselines -- and names the harness module that builds and
runs it; its :class:`WorkloadSpec` registers all of it at once (:mod:`._base`). The shared
pieces stay shared: the accelerator table (:mod:`perfzoo.hardware.accelerators`), per-row device
figures and the calibrated roofline (:mod:`perfzoo.analytic`), the space machinery
(:mod:`perfzoo.spaces`).

================== ============================================================================
``fsdp_ads/``      ``fsdp``: the recommendation model with per-layer FSDP sharding (``fsdp-ads-v3``,
                   ``fsdp-ads-v2``, ``fsdp-ads``; its cost model; the FSDP-default and expert ladders)
``llm/``           ``llm``: a Llama-style decoder (``llm-small``, ``llm-gpu``, ``megatron-a100``);
                   priced by the shared transformer cost model :mod:`perfzoo.analytic.llm`
``command.py``     ``command``: a user's own job, a launch command from a ``.toml`` space file
================== ============================================================================
"""

from perfzoo.workloads._base import BUILTIN, Baseline, WorkloadSpec, get, names, register, specs

__all__ = ["BUILTIN", "Baseline", "WorkloadSpec", "get", "names", "register", "specs"]
