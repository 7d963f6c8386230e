"""NeMo 2.0: priced as ``nemo`` (its Megatron-Core defaults: TP communication overlapped,
:mod:`perfzoo.analytic.llm`; gradients reduced in fp32, :mod:`perfzoo.analytic.memory`), written as
Megatron-Bridge recipes and overrides (:mod:`perfzoo.frameworks.megatron_bridge`): NeMo's LLM training
moved to Megatron-Bridge, whose recipes carry NeMo 2.0's. The overrides say what ``nemo`` was priced
with (``ddp.grad_reduce_in_fp32=true``, where a ``megatron-bridge`` plan writes false)."""

from __future__ import annotations

from perfzoo.frameworks.megatron_bridge import MegatronBridge


class Nemo(MegatronBridge):
    name = "nemo"


FRAMEWORK = Nemo()

__all__ = ["FRAMEWORK", "Nemo"]
