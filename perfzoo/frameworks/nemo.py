"""NeMo 2.0: priced as ``nemo`` (its Megatron-Core defaults: TP communication overlapped, gradients
reduced in fp32; :data:`FRAMEWORK`'s physics), written as Megatron-Bridge recipes and overrides
(:mod:`perfzoo.frameworks.megatron_bridge`): NeMo's LLM training moved to Megatron-Bridge, whose recipes
carry NeMo 2.0's. The overrides say what ``nemo`` was priced with (``ddp.grad_reduce_in_fp32=true``,
where a ``megatron-bridge`` plan writes false)."""

from __future__ import annotations

from dataclasses import replace

from perfzoo.frameworks import megatron_bridge, megatron_lm

FRAMEWORK = replace(megatron_bridge.FRAMEWORK, name="nemo", phrases=("nemo",), read_before=("megatron-lm",),
                    physics=replace(megatron_lm.PHYSICS, tp_comm_overlap=True))

__all__ = ["FRAMEWORK"]
