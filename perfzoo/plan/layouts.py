"""The layouts a plan chooses between: every way to lay one model's training job out on one cluster.

A layout is a setting of the knobs of ``docs/architecture.md``: tensor (``tp``), pipeline
(``pp``, with ``vp`` virtual stages), context (``cp``), expert (``ep``, MoE models) and data
(``dp``) parallel degrees, the micro batch and gradient accumulation, activation
checkpointing, data-parallel sharding (``fsdp``: none, ZeRO-1 ``zero1``, ZeRO-2
``shard_grad_op``, ZeRO-3 ``full_shard``) and precision. :func:`layout_space` builds them as a
:class:`~perfzoo.spaces.Space` (search-only, of the ``llm`` workload), whose constraints keep
out every invalid combination, so its :class:`~perfzoo.spaces.codec.SpaceCodec` enumerates
them as numpy index rows and the REINFORCE searcher can walk the same space. The space holds only
layouts the model's framework runs (its ``framework`` key's bundle, :mod:`perfzoo.frameworks`; none:
:mod:`perfzoo.frameworks.unknown`): the shardings, recompute modes and precisions it takes, its layer
split and its interleaved schedule's rule, the same rule :meth:`~perfzoo.frameworks.Framework.refuses`
applies to ``predict``, a plan's baselines and its exports:

* ``tp`` divides the GPUs and the heads (and the KV heads divide ``tp`` or ``tp`` them), and
  stays within the NVLink domain (:attr:`Cluster.domain`: the host, the 72 GPUs of an NVL72 rack,
  or ``--nodes-of``);
* ``pp`` need not divide the layers: stages split them unevenly where the framework does, as
  Megatron-Core (``decoder_first/last_pipeline_num_layers``, ``account_for_embedding/loss_in_pipeline_split``,
  ``pipeline_model_parallel_layout``) and torchtitan (``ceil(L/pp)`` a stage, :func:`perfzoo.frameworks.torchtitan.pipeline_split`:
  not 61 layers over 32 stages, which it would make 31) do, the heaviest rank pacing the pipeline and
  setting its memory (:func:`perfzoo.analytic.llm.stage_layers`: ``ceil(L/pp)`` layers), within
  :data:`MAX_IMBALANCE` of an even split: Llama 3.1 405B's 126 layers run on pp 8 and 16 (1.6% over
  even), DeepSeek-V3's 61 on pp 8 and 16 (4.9%) in NVIDIA's recipes;
* ``vp > 1`` virtual stages need ``pp > 1`` and ``pp x vp`` stages of equal layers: dividing ``L``, or
  ``L + 2`` with the embedding and the loss counted as a layer each (Megatron's
  ``account_for_embedding/loss_in_pipeline_split`` and torchtitan's first/last stage less layers split
  126 layers into 16 x 8 virtual stages; DeepSeek-V3's 61 fit neither 8 x 4 nor 16 x 2: refused, as
  both frameworks' checks would; :meth:`perfzoo.frameworks.Framework.split`), and a multiple of ``pp``
  micro-batches, as Megatron's and torch.distributed.pipelining's interleaved schedules need;
* ``cp`` is a power of two with at least :data:`MIN_CP_TOKENS` tokens per rank; a gated delta-net hybrid's
  (Qwen3-Next) ``tp x cp`` divides its linear-attention key and value heads, which Megatron-Core shards over both;
* ``tp x pp x cp`` divides the GPUs (``dp`` is the rest), ``ep`` divides the experts and ``ep x etp``
  the ranks of a stage, ``tp x dp x cp`` (the rest is expert data parallelism), inside the NVLink domain
  or across it; an MoE model's layouts also choose the expert TP (1 or ``tp``), the framework's token
  dispatcher and the MoE modules recomputed (:func:`moe_dimensions`, :func:`moe_rule`), dropless unless the user
  allows token dropping; the dispatch overlaps stay as the framework runs them by default (off: a baseline or
  config that sets them is priced and exported with them); the global batch is a whole number of micro-batches on every data-parallel rank;
* sharding needs more than one data-parallel rank, and ``none`` is for one: with more, Megatron's
  data parallelism runs the distributed optimizer, ``zero1``, which the memory model prices ``none``
  as (:mod:`perfzoo.analytic.memory`), so listing both would list each layout twice; a framework
  without ZeRO-1 (torchtitan) has none of it.

Every layout also runs with flash attention and, with ``tp > 1``, sequence parallelism (what
Megatron, NeMo and torchtitan do at this scale): the memory model counts activations that way.

>>> from perfzoo.llmconfig import catalog
>>> space = layout_space(catalog.get("llama3-8b"), Cluster(gpus=8, accelerator="H100-SXM-80GB"),
...                      seq_len=8192, global_batch=64, precisions=("bf16",))
>>> sorted(space.dimension("tp").values), sorted(space.dimension("pp").values)
([1, 2, 4, 8], [1, 2, 4, 8])
>>> space.validate({**{d.name: d.values[0] for d in space.dimensions}, "tp": 8, "pp": 2})["dp"]
Traceback (most recent call last):
...
perfzoo.spaces._base.SpaceError: space 'plan-llama3-8b-8xH100-80GB': tp x pp x cp = 16 does not divide the 8 GPUs (constraint 'degrees_divide_gpus')
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Optional, Sequence

import numpy as np
import pandas as pd

from perfzoo import frameworks, llmconfig
from perfzoo.analytic.llm import stage_layers
from perfzoo.hardware import accelerators
from perfzoo.spaces import Categorical, Constraint, Space

MICRO_BATCHES = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32)
VIRTUAL_STAGES = (1, 2, 3, 4, 5, 6, 8, 10)
CONTEXT_PARALLEL = (1, 2, 4, 8, 16, 32)
MIN_CP_TOKENS = 2048  # context parallelism below this many tokens per rank only adds traffic
# the most layers the heaviest pipeline rank holds over an even split: past it every other rank waits
# a tenth of its time (the published uneven splits: 1.016 and 1.049, module docstring)
MAX_IMBALANCE = 1.1
CHECKPOINTING = ("none", "selective", "full")
SHARDINGS = ("none", "zero1", "shard_grad_op", "full_shard")
LAYOUT_KNOBS = ("tp", "pp", "vp", "cp", "ep", "micro_batch_size", "activation_checkpointing", "fsdp", "precision")
MOE_KNOBS = ("etp", "moe_dispatcher", "moe_recompute", "moe_token_drop", "moe_a2a_overlap",
             "moe_shared_expert_overlap")  # an MoE model's layouts only
# the MoE modules a plan recomputes under selective checkpointing (Megatron's --recompute-modules; with MLA's
# up-projections too for MLA models), where a framework recomputes them
# the dispatchers for an EP group inside one host (all-gather for expert TP alone, ep 1), inside an NVLink
# domain that spans hosts (an NVL72 rack: Megatron's flex over HybridEP), across domains (DeepEP's inter-node
# kernels); all-to-all everywhere
PLACED = {"host": ("alltoall", "allgather"), "domain": ("alltoall", "flex"), "across": ("alltoall", "deepep")}
MOE_RECOMPUTE = ("none", "moe_act")
DERIVED_KNOBS = ("dp", "grad_accum", "sequence_parallel", "flash_attention")


class PlanError(llmconfig.ConfigError):
    """A plan that cannot be made as asked (exit status 2); the message names the fix."""


@dataclass(frozen=True)
class Cluster:
    """The GPUs a plan lays a job out on: how many, which accelerator (a row of the accelerator
    table), and how many share one host (``gpus_per_node``, ``--nodes-of``; default: the table's
    ``node_size``) and one NVLink domain (:attr:`domain`).

    >>> Cluster(gpus=144, accelerator="GB200").describe()
    '144 x GB200 (36 nodes of 4, NVLink domains of 72)'
    >>> Cluster(gpus=12, accelerator="H100-SXM-80GB")
    Traceback (most recent call last):
    ...
    perfzoo.plan.layouts.PlanError: 12 GPUs are not a whole number of 8-GPU nodes of H100-80GB: give a multiple of 8 (or --nodes-of K for other nodes)
    """

    gpus: int
    accelerator: str
    gpus_per_node: Optional[int] = None

    def __post_init__(self):
        if isinstance(self.gpus, bool) or not isinstance(self.gpus, (int, np.integer)) or self.gpus < 1:
            raise PlanError(f"--gpus {self.gpus!r}: give a whole number of GPUs, 1 or more")
        if self.gpus > llmconfig.MAX_DEVICES:
            raise PlanError(f"--gpus {self.gpus:,}: must be at most {llmconfig.MAX_DEVICES:,}: more than any job "
                            "perfzoo can price; check the value")
        if self.gpus_per_node is not None and (not isinstance(self.gpus_per_node, (int, np.integer))
                                               or self.gpus_per_node < 1):
            raise PlanError(f"--nodes-of {self.gpus_per_node!r}: give the GPUs per node, 1 or more")
        spec = self.spec  # refuses an unknown accelerator with the known names
        node = self.node_size
        if self.gpus > node and self.gpus % node:
            raise PlanError(f"{self.gpus} GPUs are not a whole number of {node}-GPU nodes of {spec.name}: give a "
                            f"multiple of {node} (or --nodes-of K for other nodes)")

    @property
    def spec(self) -> accelerators.AcceleratorSpec:
        return llmconfig.accelerator_spec(self.accelerator)

    @property
    def node_size(self) -> int:
        """GPUs per host: ``--nodes-of``, else the accelerator table's."""
        return int(self.gpus_per_node or self.spec.node_size)

    @property
    def domain(self) -> int:
        """GPUs one NVLink domain joins, what tensor parallelism may span: ``--nodes-of`` where
        given, else the table's domain where it spans hosts (an NVL72 rack: 72), else the host."""
        spec = self.spec
        if self.gpus_per_node or spec.nvlink_domain <= spec.node_size:
            return self.node_size
        return spec.nvlink_domain

    @property
    def nodes(self) -> int:
        return max(1, math.ceil(self.gpus / self.node_size))

    def hardware(self) -> dict[str, Any]:
        """The ``hardware.*`` columns of every layout on this cluster."""
        return {"hardware.accelerator": self.spec.name, "hardware.accelerator_count": self.gpus,
                "hardware.nodes": self.nodes}

    def describe(self) -> str:
        domains = f", NVLink domains of {self.domain}" if self.domain > self.node_size else ""
        return f"{self.gpus} x {self.spec.name}" + (f" ({self.nodes} nodes of {self.node_size}{domains})"
                                                    if self.nodes > 1 else "")


def as_run(frame: pd.DataFrame) -> pd.DataFrame:
    """Measured or published layouts priced as the plan prices its own: flash attention, and
    sequence parallelism with ``tp > 1``, where a row does not say (what Megatron, NeMo,
    llm-foundry and torchtitan run by default; the memory model counts activations by them).

    >>> as_run(pd.DataFrame({"config.tp": [1, 4]}))["config.sequence_parallel"].tolist()
    [False, True]
    """
    out = frame.copy()
    tp = pd.to_numeric(out.get("config.tp", pd.Series(1, index=out.index)), errors="coerce").fillna(1)
    for key, default in (("config.flash_attention", pd.Series(True, index=out.index)),
                         ("config.sequence_parallel", tp > 1)):
        given = out[key] if key in out else pd.Series(None, index=out.index, dtype=object)
        out[key] = given.astype(object).where(given.notna(), default.astype(object))
    return out


def divisors(n: int) -> list[int]:
    """Divisors of ``n`` in increasing order.

    >>> divisors(12)
    [1, 2, 3, 4, 6, 12]
    """
    small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    return sorted(set(small) | {n // d for d in small})


def _dp(c: dict, gpus: int) -> int:
    return gpus // (c["tp"] * c["pp"] * c["cp"])


def moe_dimensions(model: dict, framework: frameworks.Framework, tps: Sequence[int],
                   token_drop: bool) -> list[Categorical]:
    """An MoE model's knobs beside ``ep`` (none for a dense model): expert TP ``etp`` (1, or the layout's
    ``tp``: :func:`moe_rule`), the framework's token dispatchers, the MoE modules its selective recompute takes
    (:data:`MOE_RECOMPUTE`), and token dropping only where the user allows it (``token_drop``; it changes the
    model's maths): dropless otherwise. The dispatch overlaps are no knob of the plan: as two more knobs Megatron-Core's
    rules read with the pipeline, recompute and precision ones, they double the grid past what the space's rule
    tables hold (:mod:`perfzoo.spaces.rules`), and every layout is then checked one by one (minutes per plan)."""
    if int(model.get("n_experts") or 1) <= 1:
        return []
    runs = framework.runs
    etps = sorted({1, *tps}) if runs.expert_tp else [1]
    modules = [m for m in MOE_RECOMPUTE if framework.recomputes(m, "selective") is None]
    if model.get("kv_lora_rank") and framework.recomputes("mla_up_proj", "selective") is None:
        modules[-1] += ",mla_up_proj"  # an MLA model's recompute takes its up-projections with the experts'
    dims = [Categorical("etp", "expert tensor-parallel degree", choices=tuple(etps)),
            Categorical("moe_dispatcher", "MoE token dispatcher", choices=tuple(runs.dispatchers)),
            Categorical("moe_recompute", "MoE modules recomputed", choices=tuple(modules))]
    dropping = token_drop and runs.token_drop  # a framework whose line runs dropless only keeps to that
    return dims + [Categorical("moe_token_drop", "tokens over capacity dropped", choices=(False, True))] * dropping


def moe_rule(c: dict, cluster: Cluster, dispatchers: Sequence[str]) -> Optional[str]:
    """Why an MoE layout is left out, or None: ``etp`` is 1 or the layout's ``tp`` (what the recipes run), and
    above 1 only where its EP group stays inside an NVLink domain (ETP is for experts too large for EP alone);
    ``ep x etp`` divides the ranks of a pipeline stage, ``tp x dp x cp`` (what is left is expert data
    parallelism); with neither EP nor ETP no tokens move, so the first dispatcher stands for all; else the
    dispatchers made for where the EP group lies (:data:`PLACED`: its ``ep x etp`` consecutive ranks, Megatron-Core's
    expert rank order, inside one host, one NVLink domain, or across domains); MoE modules are recomputed by
    selective checkpointing.

    >>> moe_rule({"tp": 2, "pp": 2, "cp": 1, "ep": 4, "etp": 2, "moe_dispatcher": "alltoall", "moe_recompute": "none",
    ...           "activation_checkpointing": "none"}, Cluster(8, "H100-SXM-80GB"), ("alltoall",))
    'ep x etp = 8 does not divide tp x dp x cp = 4'
    """
    gpus = cluster.gpus
    etp = c.get("etp", 1)
    if etp not in (1, c["tp"]):
        return f"etp = {etp} is neither 1 nor tp = {c['tp']}"
    if etp > 1 and c["ep"] * etp > cluster.domain:  # expert TP splits experts an NVLink domain's EP cannot hold
        return f"etp = {etp} with ep = {c['ep']} spans {c['ep'] * etp} GPUs, more than an NVLink domain"
    ranks = gpus // c["pp"]
    if ranks % (c["ep"] * etp):
        return f"ep x etp = {c['ep'] * etp} does not divide tp x dp x cp = {ranks}"
    dispatcher, group = c.get("moe_dispatcher", dispatchers[0]), c["ep"] * etp
    if group == 1 and dispatcher != dispatchers[0]:
        return f"without EP or ETP no token moves: the dispatcher is {dispatchers[0]}"
    where = "host" if group <= cluster.node_size else "domain" if group <= cluster.domain else "across"
    if group > 1 and dispatcher not in PLACED[where]:
        return f"the {dispatcher} dispatcher is not one for an EP group {where} ({', '.join(PLACED[where])})"
    if dispatcher == "allgather" and c["ep"] > 1:  # Megatron-Core's advice: all-to-all once experts are spread
        return "the allgather dispatcher is for expert TP alone (ep = 1)"
    if c.get("moe_recompute", "none") != "none" and c["activation_checkpointing"] != "selective":
        return "MoE modules are recomputed by selective checkpointing"
    return None


def layout_space(model: dict, cluster: Cluster, seq_len: int, global_batch: int, precisions: Sequence[str],
                 tp_beyond_node: bool = False, token_drop: bool = False) -> Space:
    """The layout space of ``model`` (checked config keys: ``n_layers``, ``n_heads``, ``framework``, ...)
    on ``cluster`` for sequences of ``seq_len`` tokens, ``global_batch`` sequences a step, in each of
    ``precisions`` its framework trains in; see the module docstring. ``tp_beyond_node`` lets tp span
    NVLink domains; ``token_drop`` lets an MoE model drop tokens over capacity (dropless otherwise)."""
    framework = frameworks.get(model.get("framework"))
    runs = framework.runs
    precisions = [p for p in precisions if framework.takes("precision", p)]
    if not precisions:
        raise PlanError(f"--precision: {runs.precision_rule}; give one it trains in")
    N, L, a = cluster.gpus, int(model["n_layers"]), int(model["n_heads"])
    kv = int(model.get("n_kv_heads") or a)
    E = int(model.get("n_experts") or 1)
    tp_max = N if tp_beyond_node else min(cluster.domain, N)
    tps = [t for t in divisors(N) if t <= tp_max and a % t == 0 and (kv % t == 0 or t % kv == 0)]
    def balanced(p):  # the heaviest rank near an even split
        return stage_layers(L, p) * p <= MAX_IMBALANCE * L

    pps = [p for p in divisors(N) if p <= L and balanced(p) and framework.split(L, p, 1) is None]
    vps = [v for v in VIRTUAL_STAGES if v == 1 or any(framework.split(L, p, v) is None for p in pps if p > 1)]
    cps = [c for c in CONTEXT_PARALLEL if N % c == 0 and llmconfig.cp_splits(seq_len, c) and seq_len // c >= MIN_CP_TOKENS]
    cps = sorted(set(cps) | {1})
    eps = [e for e in divisors(N) if E % e == 0] if E > 1 else [1]
    mbs = [b for b in MICRO_BATCHES if b <= global_batch]

    def degrees(c):
        model_ranks = c["tp"] * c["pp"] * c["cp"]
        return None if N % model_ranks == 0 else f"tp x pp x cp = {model_ranks} does not divide the {N} GPUs"

    def batch(c):
        if degrees(c):
            return degrees(c)
        per_step = c["micro_batch_size"] * _dp(c, N)
        return None if global_batch % per_step == 0 else (
            f"global batch {global_batch} is not a whole number of micro_batch_size x dp = {per_step} sequences")

    def interleaving(c):  # the framework's layer split and interleaved schedule
        if c["vp"] == 1:
            return None
        why = framework.split(L, c["pp"], c["vp"]) or batch(c)
        return why or framework.interleaves(c["pp"], c["vp"], global_batch // (c["micro_batch_size"] * _dp(c, N)))

    def experts(c):
        return degrees(c) or (moe_rule(c, cluster, runs.dispatchers) if E > 1 else None)

    linear_heads = frameworks.model_linear_heads(model)

    def linear_attention(c):  # the rule Framework.refuses applies: tp x cp shards a gated delta-net's heads
        return frameworks.linear_heads(linear_heads, c["tp"], c["cp"])

    def sharding(c):
        if degrees(c):
            return degrees(c)
        ranks = _dp(c, N) * c["cp"]
        if c["fsdp"] == "none":  # the framework's data parallelism over its ranks: Megatron's zero1, FSDP2
            return None if ranks == 1 else (f"with data-parallel ranks, 'none' is {runs.data_parallel} "
                                            f"({runs.data_parallel_is})")
        return None if ranks > 1 else "sharding needs more than one data-parallel rank"

    def derived(c):
        dp = _dp(c, N)
        return {"dp": dp, "grad_accum": global_batch // (c["micro_batch_size"] * dp),
                "sequence_parallel": c["tp"] > 1, "flash_attention": True}

    constants = {k: v for k, v in model.items() if k not in llmconfig.HARDWARE_KEYS and k not in LAYOUT_KNOBS
                 and k not in DERIVED_KNOBS and k not in MOE_KNOBS}
    constants.update(seq_len=int(seq_len), global_batch_size=int(global_batch), n_gpus=N)
    if E > 1 and not (token_drop and framework.runs.token_drop):
        constants["moe_token_drop"] = False  # dropless: the model's maths as trained
    name = constants.get("model_name", "model")
    return Space(
        name=f"plan-{name}-{N}x{cluster.spec.name}",
        workload="llm",
        dimensions=[Categorical("tp", "tensor-parallel degree", choices=tuple(tps)),
                    Categorical("pp", "pipeline-parallel degree", choices=tuple(pps)),
                    Categorical("vp", "virtual pipeline stages per rank", choices=tuple(vps)),
                    Categorical("cp", "context-parallel degree", choices=tuple(cps)),
                    Categorical("ep", "expert-parallel degree", choices=tuple(eps)),
                    Categorical("micro_batch_size", "sequences per micro-batch", choices=tuple(mbs)),
                    Categorical("activation_checkpointing", "recompute",
                                choices=tuple(c for c in CHECKPOINTING if framework.takes("activation_checkpointing", c))),
                    Categorical("fsdp", "data-parallel sharding",
                                choices=tuple(s for s in SHARDINGS if framework.takes("fsdp", s))),
                    Categorical("precision", "matmul precision", choices=tuple(precisions)),
                    *moe_dimensions(model, framework, tps, token_drop)],
        constants=constants,
        derived=derived,
        constraints=[Constraint("degrees_divide_gpus", degrees), Constraint("whole_micro_batches", batch),
                     Constraint("interleaving", interleaving), Constraint("experts_over_data_ranks", experts),
                     Constraint("sharding_needs_data_ranks", sharding),
                     *([Constraint("linear_heads_over_tp_cp", linear_attention)] if linear_heads else [])],
        world_size_key="n_gpus",
        description=f"layouts of {name} on {cluster.describe()}, {seq_len}-token sequences, global batch {global_batch}",
        runnable=False,
    )


__all__ = ["CHECKPOINTING", "Cluster", "as_run", "LAYOUT_KNOBS", "MAX_IMBALANCE", "MICRO_BATCHES", "MIN_CP_TOKENS",
           "MOE_KNOBS", "MOE_RECOMPUTE", "PLACED", "PlanError", "SHARDINGS", "divisors", "layout_space",
           "moe_dimensions", "moe_rule"]
