"""MoE token dispatch as a framework runs it: the dispatcher, the bytes it sends and how long they take.

Per MoE layer and micro-batch a device dispatches its ``T = b*s/(cp*tp)`` local tokens (the
sequence-parallel shard) to the ranks holding their experts and combines the outputs back, forward
and backward: 4 collectives over the EP group of ``ep`` ranks ``etp`` apart (:mod:`.moe`). Which
collectives, and what crosses the network, is the dispatcher's (``moe_dispatcher``; a row that names
none runs its framework bundle's ``moe_dispatcher`` trait, :class:`perfzoo.frameworks.Physics`,
an all-to-all where it drops tokens):

* ``alltoall`` (Megatron-Core's ``MoEAlltoAllTokenDispatcher``, torchtitan's ``all_to_all_single``):
  an NCCL all-to-all of the ``K*CF`` routed copies of each local token, ``(ep-1)/ep`` of them to
  other ranks. NCCL moves buffers, not tokens: a token routed to two experts in one remote domain
  crosses the network twice (PXN only relays a copy over NVLink to the rail that sends it).
* ``allgather`` (``MoEAllGatherTokenDispatcher``): each device's ``T`` tokens are all-gathered once
  over the EP group, each rank keeps those routed to its experts, and the outputs are
  reduce-scattered back: a ring collective of ``ep*T`` tokens, ``(ep-1)*T`` sent per device, whatever ``K``.
* ``flex`` / ``deepep`` (Megatron-Core's flex dispatcher on DeepEP or HybridEP, DeepEP itself):
  hierarchical. A token crosses the network once per destination domain and fans out over the
  scale-up link there (:func:`~perfzoo.analytic.hardware.alltoall_seconds`' ``fanout``; DeepEP's
  ``internode`` kernels: RDMA to the same-rail GPU of each target node, then NVLink forwarding).
  DeepEP run directly (``deepep``) dispatches in FP8 where the linears run in FP8 (1 B per element
  plus an fp32 scale per 128, its ``dispatch`` with ``x = (fp8 tensor, scales)``) and combines in
  BF16; Megatron-Core's flex dispatcher hands DeepEP / HybridEP the BF16 hidden states (the grouped
  linears quantize after the dispatch).

Bandwidths are the link's (:mod:`.hardware`): DeepEP's published normal kernels reach 153 of ~160
GB/s over H800 NVLink and 43-58 of ~50 GB/s over CX7 RDMA, i.e. the link.

What of it the compute hides (:meth:`Dispatch.exposed`; a row that does not say runs its framework bundle's
trait, :class:`perfzoo.frameworks.Physics`, off everywhere: Megatron-Core's default, and Megatron-Bridge 0.3.1's
performance configs turn the A2A overlap on only for Qwen3-235B on H100, and the shared-expert overlap off
under the flex dispatcher):

* ``moe_shared_expert_overlap`` (Megatron-Core's ``--moe-shared-expert-overlap``): the shared experts run on a
  side stream while their layer's tokens are dispatched and combined, hiding the dispatch up to their own
  compute, the step's compute split by FLOPs (their forward and backward over all FLOPs executed);
* ``moe_a2a_overlap`` (``--overlap-moe-expert-parallel-comm``, the 1F1B A2A overlap): one micro-batch's
  dispatch and combine run under another's forward or backward of the same layers, hiding the dispatch up to
  the MoE layers' compute (their share of the layers). Every micro-batch but one is paired (the first
  forward and the last backward run alone: ``(m-1)/m`` of the dispatch can hide, none with one micro-batch;
  a pipeline's warm-up runs more alone, which this leaves out).

Both on at once (Megatron-Core refuses it) hide the rest of what the shared experts leave. Either on a dense
model, with ``ep`` 1, or the shared-expert overlap without shared experts is refused.

>>> import pandas as pd
>>> from perfzoo.analytic.llm import LLMCost
>>> row = {"n_layers": 4, "hidden_dim": 1024, "n_heads": 8, "seq_len": 1024, "n_experts": 8,
...        "experts_per_token": 2, "ep": 8, "n_gpus": 8, "accelerator": "H100"}
>>> d = Dispatch(LLMCost(pd.DataFrame([row])), pd.DataFrame([row]))
>>> float(d.bytes[0]) / 2**20  # 4 layers x 4 all-to-alls x 7/8 x 2 copies x 1024 tokens x 1024 x 2 B, in MiB
56.0
>>> float(hidden(np.array(2.0), np.array(0.5), np.array(8.0), np.array(4.0), True, False))  # shared: 0.5 of 2 s
0.5
"""

from __future__ import annotations

from functools import cached_property

import numpy as np
import pandas as pd

from perfzoo.analytic._frame import mapped, trait
from perfzoo.analytic.hardware import alltoall_seconds, group_bandwidth
from perfzoo.console import InputError
from perfzoo.frameworks import DISPATCHERS
from perfzoo.records.vocabulary import to_bool

HIERARCHICAL = ("flex", "deepep")  # a token crosses the network once per destination domain
FP8_SCALE_BYTES = 4.0 / 128.0  # DeepEP's FP8 dispatch: an fp32 scale per 128 elements, per element


def _dispatcher(value) -> str:
    """A given ``moe_dispatcher``, normalised ("" where none is given); an unknown one is refused."""
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return ""
    name = str(value).strip().lower()
    if name not in DISPATCHERS:
        raise InputError(f"moe_dispatcher {name!r} is not a dispatcher perfzoo prices: "
                         f"give one of {', '.join(DISPATCHERS)}")
    return name


def dispatchers(df: pd.DataFrame, framework: np.ndarray, token_drop: np.ndarray) -> np.ndarray:
    """Each row's dispatcher: its ``moe_dispatcher`` where given, else its framework's default, an
    all-to-all where the row drops tokens and the default is hierarchical (Megatron-Core's flex
    dispatcher pads no expert to capacity).

    >>> dispatchers(pd.DataFrame({"moe_dispatcher": ["flex", None]}), np.array([0, 0]), False).tolist()[0]
    'flex'
    """
    default = trait(framework, "moe_dispatcher").astype(str)
    default = np.where(np.isin(default, HIERARCHICAL) & token_drop, "alltoall", default)
    given = mapped(df, "moe_dispatcher", _dispatcher, dtype="<U16")
    return np.where(given == "", default, given)


def hidden(seconds: np.ndarray, shared_s: np.ndarray, layers_s: np.ndarray, micro_batches: np.ndarray,
           shared, a2a) -> np.ndarray:
    """Seconds of ``seconds`` of dispatch the overlaps hide (module docstring): up to ``shared_s`` of the shared
    experts' compute where ``shared``, then of what is left, the ``(m-1)/m`` paired with another micro-batch up to
    the MoE layers' compute ``layers_s`` where ``a2a``.

    >>> float(hidden(np.array(2.0), np.array(0.5), np.array(8.0), np.array(4.0), False, True))  # 3/4 of 2 s
    1.5
    """
    by_shared = np.where(shared, np.minimum(seconds, shared_s), 0.0)
    paired = (micro_batches - 1.0) / np.maximum(micro_batches, 1.0)
    return by_shared + np.where(a2a, paired * np.minimum(seconds - by_shared, layers_s), 0.0)


def _overlap(df: pd.DataFrame, key: str, framework: np.ndarray, moe: np.ndarray, ep: np.ndarray) -> np.ndarray:
    """Each row's ``key`` (``moe_a2a_overlap`` or ``moe_shared_expert_overlap``), else its framework's trait;
    one set on a row that dispatches nothing (a dense model, or ``ep`` 1) is refused."""
    given = mapped(df, key, to_bool, dtype=float)
    wrong = (given > 0) & ~(moe & (ep > 1))
    if np.any(wrong):
        raise InputError(f"{key}=true overlaps the MoE token dispatch, and a row with it "
                         f"{'is dense' if not moe[wrong][0] else 'has ep 1'}: give {key}=false or an ep > 1 MoE layout")
    return np.where(np.isnan(given), trait(framework, key), given > 0) & moe & (ep > 1)


class Dispatch:
    """The token dispatch and combine of each row's MoE layers (zeros where a row is dense or ``ep`` is 1)."""

    def __init__(self, cost, df: pd.DataFrame):
        self.cost = cost
        self.kind = dispatchers(df, cost.framework, cost.token_drop)
        self.hierarchical = np.isin(self.kind, HIERARCHICAL)
        self.gathers = self.kind == "allgather"
        moe = cost.shape.moe
        self.a2a = _overlap(df, "moe_a2a_overlap", cost.framework, moe.is_moe, cost.ep)
        self.shared = _overlap(df, "moe_shared_expert_overlap", cost.framework, moe.is_moe, cost.ep)
        lacking = self.shared & (moe.fs <= 0)
        if np.any(lacking & (mapped(df, "moe_shared_expert_overlap", to_bool, dtype=float) > 0)):
            raise InputError("moe_shared_expert_overlap=true overlaps the shared experts with the dispatch, and the "
                             "model has none: give moe_shared_expert_overlap=false or n_shared_experts")
        self.shared = self.shared & ~lacking

    @cached_property
    def _per_collective(self) -> tuple[np.ndarray, np.ndarray]:
        """(layer-micro-batch passes of the pacing stage's MoE layers, bytes of one dispatch's payload per
        element of ``d`` and token) for each row."""
        c, sh = self.cost, self.cost.shape
        moe_layers = sh.moe.L_moe + np.where(sh.moe.L_moe > 0, sh.mtp, 0.0)
        return c.m * c.stage_share * moe_layers, c.b * sh.s / (c.cp * c.tp) * sh.d

    @cached_property
    def element_bytes(self) -> np.ndarray:
        """Bytes per element, dispatch and combine averaged: the activation dtype, DeepEP's FP8
        dispatch in an FP8 run (module docstring)."""
        c = self.cost
        fp8 = (self.kind == "deepep") & (c.width < 2.0)
        return np.where(fp8, (1.0 + FP8_SCALE_BYTES + c.act_bytes) / 2.0, c.act_bytes)

    @cached_property
    def bytes(self) -> np.ndarray:
        """Bytes each device sends per step to dispatch and combine: 4 collectives per MoE layer and
        micro-batch (module docstring)."""
        c, moe = self.cost, self.cost.shape.moe
        passes, tokens = self._per_collective
        ep = np.maximum(c.ep, 1.0)
        routed = (ep - 1.0) / ep * moe.routed_tokens(tokens)  # all-to-all: copies leaving the device
        gathered = (ep - 1.0) * tokens  # all-gather / reduce-scatter of the EP group's tokens
        sent = np.where(self.gathers, gathered, routed) * self.element_bytes
        return np.where((c.ep > 1) & moe.is_moe, passes * 4.0 * sent, 0.0)

    def seconds(self) -> np.ndarray:
        """Seconds of the dispatch and combine per step: all-to-alls over the EP group (the network
        carrying each copy, or each token once per domain where hierarchical), ring collectives for
        the all-gather dispatcher."""
        c = self.cost
        hw = c.hw
        fanout = np.where(self.hierarchical, c.shape.moe.K, 1.0)
        a2a = alltoall_seconds(hw, self.bytes, c.ep, c.etp, fanout)
        ring = self.bytes / group_bandwidth(hw, c.ep, c.etp)
        return np.where(self.gathers, ring, a2a)

    def hidden(self, compute: np.ndarray) -> np.ndarray:
        """Seconds of :meth:`seconds` the overlaps hide under the step's ``compute`` seconds (module docstring)."""
        c, sh = self.cost, self.cost.shape
        moe_layers = sh.moe.L_moe + np.where(sh.moe.L_moe > 0, sh.mtp, 0.0)
        executed = sum(c.flops_parts(causal=True, recompute=True, executed=True).values())
        shared_s = compute * c.weight_passes() * moe_layers * sh.moe.shared_params / executed
        layers_s = compute * moe_layers / (sh.L + sh.mtp)
        return hidden(self.seconds(), shared_s, layers_s, c.m, self.shared, self.a2a)

    def exposed(self, compute: np.ndarray) -> np.ndarray:
        """Seconds of the dispatch and combine the step waits for: :meth:`seconds` less what the overlaps hide."""
        return self.seconds() - self.hidden(compute)


__all__ = ["Dispatch", "HIERARCHICAL", "dispatchers", "hidden"]
