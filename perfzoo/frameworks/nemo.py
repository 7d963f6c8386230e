"""NeMo 2.0: priced as ``nemo`` (its Megatron-Core defaults: TP communication overlapped,
:mod:`perfzoo.analytic.llm`), written as Megatron-Bridge recipes and overrides
(:mod:`perfzoo.frameworks.megatron_bridge`): NeMo's LLM training moved to Megatron-Bridge, whose
recipes carry NeMo 2.0's."""

from __future__ import annotations

from perfzoo.frameworks.megatron_bridge import MegatronBridge


class Nemo(MegatronBridge):
    name = "nemo"


FRAMEWORK = Nemo()

__all__ = ["FRAMEWORK", "Nemo"]
