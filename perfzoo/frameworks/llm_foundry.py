"""MosaicML's llm-foundry (Composer): attention in the flash-attn 2 package (FlashAttention-2), and a
rank's share of the global batch cut into micro-batches of ``device_train_microbatch_size``, the last
one partial (its tables: MPT-13b, 8 GPUs, batch 2048, micro batch 12 -> 22 micro-batches of 256
sequences per device); MegaBlocks' dMoE dispatches its tokens all-to-all. It prices, and writes no
launch line.
"""

from __future__ import annotations

from perfzoo.frameworks._base import Framework, Physics, Runs

FRAMEWORK = Framework(name="llm-foundry", phrases=("llm foundry", "llmfoundry", "mosaicml"), read_before=("pytorch",),
                      runs=Runs(partial_microbatches=True, dispatchers=("alltoall",), moe_overlaps=()),
                      physics=Physics(fa2_attention=True))

__all__ = ["FRAMEWORK"]
