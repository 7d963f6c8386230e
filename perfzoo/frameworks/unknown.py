"""No framework in particular: what a config that names none is priced as (its other keys alone:
fused kernels, the attention kernel written for the device, gradients reduced in fp32, no TP overlap,
the host's pace where it shows), and the rules a layout keeps whatever runs it: any sharding (over
more than one data-parallel rank ``zero1``, as Megatron runs its data parallelism), any precision
the device runs, Megatron-Core's layer split (:meth:`~perfzoo.frameworks._base.Framework.split`).
It names no framework, writes no launch line.
"""

from __future__ import annotations

from perfzoo.frameworks._base import UNKNOWN, Framework

FRAMEWORK = Framework(name=UNKNOWN)

__all__ = ["FRAMEWORK"]
