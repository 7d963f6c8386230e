"""Plain PyTorch (a training loop of one's own, FSDP2): attention in PyTorch's SDPA flash backend,
FlashAttention-2 (on a Hopper GPU 35% of the peak against FlashAttention-3's 75%); the rest as a
config says. It prices, and writes no launch line (perfzoo's own harness runs such jobs:
``harness/workloads``).
"""

from __future__ import annotations

from perfzoo.frameworks._base import Framework, Physics

FRAMEWORK = Framework(name="pytorch", phrases=("pytorch", "torch", "fsdp2"), physics=Physics(fa2_attention=True))

__all__ = ["FRAMEWORK"]
