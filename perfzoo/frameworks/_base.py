"""The extension point: one :class:`Framework` per training framework, a plain declaration of what
it runs, what the cost model assumes of it, what a published row of it leaves to its recipe, and
how its launch line is written and read (one module per framework, :mod:`perfzoo.frameworks`).

* :class:`Runs`: the layouts it takes (shardings, precisions it trains in and those its launch
  lines write, recompute modes, pipeline schedules, MoE token dispatchers and dispatch overlaps, what fills the data
  parallelism a config leaves out); :meth:`Framework.split` its layer-split rule and
  :meth:`Framework.refuses` the one rule every command applies (``predict``, plan's layouts and
  baselines, every exporter, calibration runs);
* :class:`Physics`: the traits the cost model reads as per-row arrays (:mod:`perfzoo.analytic`
  branches on them, never on a framework's name);
* :class:`Recipe`: what a published row of it leaves blank (:mod:`perfzoo.datasets.sources`).

A layout here is one of a plan's configs (:meth:`perfzoo.plan.Plan.configs`): the model's shape
keys, ``seq_len``, ``global_batch_size``, ``n_gpus`` and the layout knobs ``tp pp vp cp ep dp
micro_batch_size grad_accum activation_checkpointing fsdp precision``. A :class:`Launch` adds the
nodes it runs on; :meth:`Framework.command` writes the line, :meth:`Framework.read` reads a user's
back (a :class:`Baseline`). This package imports nothing of perfzoo's but :mod:`perfzoo.console`:
what a launch line needs of the model catalog (the catalog model a recipe names, the layers a
torchtitan line's stages split) is passed in by the caller.

>>> generic = Framework("any")
>>> generic.refuses({"n_layers": 32, "pp": 2, "vp": 3, "fsdp": "zero1"})
'pp=2 vp=3 under framework=any: 32 layers do not split over pp 2 x vp 3 = 6 stages, evenly or with the embedding and the loss counted as a layer each (34); choose another pp or vp'
>>> generic.refuses({"n_layers": 32, "pp": 2, "vp": 2, "grad_accum": 4}) is None
True
"""

from __future__ import annotations

import math
import shlex
from dataclasses import dataclass, field
from typing import Any, Collection, Mapping, Optional, Sequence

from perfzoo.console import InputError

UNKNOWN = "unknown"  # the framework key of a config that names none: priced by its other keys alone
MATMULS = "matmuls"  # a selective checkpointing policy that saves every matmul's output (PyTorch's op-level)
ALTERNATE_MATMULS = "alternate matmuls"  # ... every other matmul's and the attention core's (torchtitan's "op")
DISPATCHERS = ("alltoall", "allgather", "flex", "deepep")  # MoE token dispatchers a config may name
# the EP group sizes (ep x etp ranks) DeepEP's kernels have configs for (its Buffer asserts on any other;
# perfzoo.analytic.moe_memory sizes their buffers)
DEEPEP_GROUPS = (2, 4, 8, 16, 24, 32, 48, 64, 96, 128, 144, 160)
MOE_OVERLAPS = ("moe_a2a_overlap", "moe_shared_expert_overlap")  # MoE dispatch overlaps a config may turn on


class ExportError(InputError):
    """A layout or model a framework cannot be given as asked (exit status 2); the message names the fix."""


@dataclass(frozen=True)
class Launch:
    """Where a layout runs: ``nodes`` nodes of ``gpus_per_node`` GPUs (``torchrun``'s
    ``--nnodes`` and ``--nproc-per-node``)."""

    nodes: int
    gpus_per_node: int

    def torchrun(self) -> list[str]:
        """``torchrun``'s arguments: standalone on one node, a c10d rendezvous at
        ``$MASTER_ADDR:$MASTER_PORT`` (29500 unless set) on several (run the same line on each node)."""
        if self.nodes == 1:
            return ["torchrun", "--standalone", "--nproc-per-node", str(self.gpus_per_node)]
        return ["torchrun", "--nnodes", str(self.nodes), "--nproc-per-node", str(self.gpus_per_node),
                "--rdzv-backend", "c10d", "--rdzv-endpoint", "$MASTER_ADDR:${MASTER_PORT:-29500}"]


@dataclass
class Baseline:
    """A user's launch line read back (:meth:`Framework.read`): the ``framework``, the layout
    knobs it sets (``layout``), ``seq_len`` / ``global_batch_size`` (``workload``), the catalog
    ``model`` it names or the shape keys it gives (``shape``), the GPUs it runs on (``gpus``,
    from ``torchrun``'s ``--nnodes x --nproc-per-node`` where the file has them), ``settings``: config
    keys the line sets that are no layout knob (``tp_comm_overlap``; the plan prices every layout with
    them, like for like), ``notes``: what was read as a default, said; and ``stages``: a line's
    ``(layers per stage, first stage less, last stage less)`` whose virtual stages need the model's
    layers (:meth:`settle`)."""

    framework: str
    layout: dict = field(default_factory=dict)
    workload: dict = field(default_factory=dict)
    model: Optional[str] = None
    shape: dict = field(default_factory=dict)
    gpus: Optional[int] = None
    settings: dict = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    stages: Optional[tuple[int, int, int]] = None

    def settle(self, n_layers: Optional[int]) -> "Baseline":
        """The virtual stages of a line that gives layers per stage, now that the model's ``n_layers``
        are known (``ceil((layers + first less + last less) / layers per stage)`` stages over ``pp``
        ranks, torchtitan's count); as read where they are not.

        >>> Baseline("x", {"pp": 16, "vp": 1}, stages=(1, 1, 1)).settle(126).layout["vp"]
        8
        """
        if self.stages is not None and n_layers:
            per, first, last = self.stages
            self.layout["vp"] = max(1, -(-(int(n_layers) + first + last) // per) // int(self.layout["pp"]))
            self.stages = None  # settled
        return self


@dataclass(frozen=True)
class Runs:
    """What a framework runs: the values of each knob it takes (None: any), with the rule that keeps
    the others out in a few words (the refusal quotes it), and what a config that names no sharding
    gets over more than one data-parallel rank (``data_parallel``, said as ``data_parallel_is``)."""

    shardings: Optional[tuple[str, ...]] = None
    sharding_rule: str = ""
    data_parallel: str = "zero1"
    data_parallel_is: str = "the distributed optimizer, as Megatron runs its data parallelism"
    trains_in: Optional[tuple[str, ...]] = None
    precision_rule: str = ""
    writes: tuple[str, ...] = ()  # the precisions its launch lines write (none: it writes no launch line)
    recompute: tuple[str, ...] = ("none", "selective", "full")
    schedules: tuple[str, ...] = ("1F1B", "interleaved 1F1B")
    interleave_rounds: bool = True  # an interleaved schedule runs its micro-batches in rounds of pp
    dispatchers: tuple[str, ...] = DISPATCHERS
    moe_recompute: Optional[tuple[str, ...]] = None  # the MoE modules its selective recompute takes (None: any)
    expert_tp: bool = True  # experts may be tensor-parallel over etp ranks of their own
    token_drop: bool = True  # its launch line may drop tokens over an expert's capacity (else dropless only)
    partial_microbatches: bool = False  # a rank's batch cut into micro-batches of the given size, the last partial
    moe_overlaps: tuple[str, ...] = MOE_OVERLAPS  # the MoE dispatch overlaps it runs (config keys, :meth:`overlaps`)


@dataclass(frozen=True)
class Physics:
    """What the cost model assumes of a framework (:mod:`perfzoo.analytic`, one array per trait)."""

    fa2_attention: bool = False  # attention runs FlashAttention-2 (SDPA's flash backend, flash-attn 2)
    graphs_hide_host: bool = False  # CUDA graphs and overlapped launches hide the host for dense and token-drop MoE
    tp_comm_overlap: bool = False  # TP communication overlapped with the GEMMs where a config does not say
    fp8_param_gather: bool = False  # FSDP gathers FP8 linears' weights in FP8 where a config does not say
    grad_reduce_dtype: str = "fp32"  # Megatron's main gradients (its data parallelism) held and reduced in
    pipelined_fsdp: bool = False  # under a pipeline FSDP keeps a stage's parameters gathered, reduces once
    fused_norm: bool = False  # the RMSNorm is a fused kernel even in eager mode
    selective_policy: str = MATMULS  # what PyTorch-style selective checkpointing saves
    expandable_segments: bool = False  # the allocator's expandable segments: no fragmentation term
    # the MoE token dispatcher a config that names none runs (:mod:`perfzoo.analytic.dispatch`): Megatron-Core's
    # recipes set ``moe_token_dispatcher_type="alltoall"``, torchtitan's expert parallelism runs all_to_all_single
    moe_dispatcher: str = "alltoall"
    # the MoE dispatch overlaps a config that does not say runs (:mod:`perfzoo.analytic.dispatch`): off, Megatron-Core's
    # defaults (Megatron-Bridge's performance configs turn the A2A overlap on for one model and GPU of theirs)
    moe_a2a_overlap: bool = False
    moe_shared_expert_overlap: bool = False


@dataclass(frozen=True)
class Recipe:
    """What a published row of the framework leaves to its recipe (:mod:`perfzoo.datasets.sources`)."""

    defaults: tuple[tuple[str, Any], ...] = ()  # config keys a row leaves blank, as the framework's default
    compiled_loss_since: Optional[str] = None  # a compiled run's loss compiled with the model from this date
    low_precision_share: Optional[float] = None  # of the layers a "bf16 tail" recipe converts (rounded down)
    local_batch_split: bool = False  # a rank's local batch runs in pp micro-batches
    stages_per_rank: Optional[int] = None  # of an interleaved schedule whose split a row does not give


def linear_heads(heads: Sequence[int], tp: int, cp: int) -> Optional[str]:
    """Why ``tp x cp`` cannot shard a gated delta-net's key and value ``heads`` (Megatron-Core's
    TransformerConfig asserts that it divides both: the only stack that runs these layers), or None.

    >>> linear_heads((16, 32), 8, 2) is None, linear_heads((16, 32), 8, 4)
    (True, 'tp x cp = 32 does not divide the linear-attention heads (16, 32)')
    """
    ranks = tp * cp
    bad = any(h % ranks for h in heads)
    return f"tp x cp = {ranks} does not divide the linear-attention heads ({', '.join(map(str, heads))})" if bad else None


def model_linear_heads(model: Mapping[str, Any]) -> tuple[int, ...]:
    """A gated delta-net hybrid's key and value heads (the values: the keys' where not given); () for a model
    without linear-attention layers."""
    if not _whole(model, "n_linear_layers") or not _whole(model, "linear_key_heads"):
        return ()
    keys = _whole(model, "linear_key_heads")
    return keys, _whole(model, "linear_value_heads") or keys


def _whole(config: Mapping[str, Any], key: str) -> Optional[int]:
    """``config[key]`` as an int, None where absent or not a number."""
    value = config.get(key)
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return int(number) if math.isfinite(number) else None


def _on(value: Any) -> bool:
    """Whether a config's yes/no ``value`` is yes (absent: no)."""
    return str(value).strip().lower() in ("true", "1", "yes", "on")


def _choices(values: Sequence[str]) -> str:
    return values[0] if len(values) == 1 else f"{', '.join(values[:-1])} or {values[-1]}"


def equal_stages(n_layers: int, pp: int, vp: int) -> Optional[tuple[int, int]]:
    """How ``n_layers`` layers split over ``pp`` pipeline ranks of ``vp`` virtual stages each into
    stages of equal layers, in the two forms Megatron-Core and torchtitan both take: ``(layers per
    virtual stage, 0)`` where the stages divide the layers, ``(layers per virtual stage, 1)`` with the
    embedding and the loss counted as a layer each (Megatron's
    ``--account-for-embedding/loss-in-pipeline-split``, torchtitan's
    ``pipeline_parallel_first/last_stage_less_layers`` 1: Llama 3.1 405B's 126 layers over 16 x 8
    stages); None for a split that is neither.

    >>> equal_stages(32, 4, 2), equal_stages(126, 16, 8), equal_stages(126, 8, 1), equal_stages(32, 2, 3)
    ((4, 0), (1, 1), (16, 1), None)
    """
    stages = pp * vp
    if n_layers % stages == 0:
        return n_layers // stages, 0
    if (n_layers + 2) % stages == 0:
        return (n_layers + 2) // stages, 1
    return None


def unequal(n_layers: int, pp: int, vp: int) -> str:
    """Why ``pp x vp`` stages of equal layers cannot hold ``n_layers`` (:func:`equal_stages`), and the fix."""
    return (f"{n_layers} layers do not split over pp {pp} x vp {vp} = {pp * vp} stages, evenly or with the "
            f"embedding and the loss counted as a layer each ({n_layers + 2}); choose another pp or vp")


def stage_split(n_layers: int, pp: int, vp: int) -> tuple[int, int]:
    """:func:`equal_stages`, or an :class:`ExportError` saying why there are none."""
    found = equal_stages(n_layers, pp, vp)
    if found is None:
        raise ExportError(unequal(n_layers, pp, vp))
    return found


@dataclass(frozen=True)
class Framework:
    """One training framework: its declarations and rules (subclass it, in a module of
    :mod:`perfzoo.frameworks`, for a launch line).

    ``name`` is its value of the ``framework`` config key; ``phrases`` what names it in a table's
    cell (whole words, any case), read before those of the frameworks it names in ``read_before``
    (those it builds on, which a cell naming it may name too: "NeMo/Megatron-Core" is NeMo); ``entry`` what its
    launch line runs (``-m torchtitan.train``; none: it writes no launch line), ``version`` the
    release the flags are spelled for, ``models`` the catalog models its line can name (None: any
    shape, its flags give it).
    """

    name: str
    phrases: tuple[str, ...] = ()
    read_before: tuple[str, ...] = ()
    runs: Runs = Runs()
    physics: Physics = Physics()
    recipe: Recipe = Recipe()
    entry: tuple[str, ...] = ()
    version: str = ""
    models: Optional[Collection[str]] = None

    # the rules -------------------------------------------------------------------------
    def split(self, n_layers: int, pp: int, vp: int) -> Optional[str]:
        """Why ``n_layers`` layers do not split over ``pp`` ranks of ``vp`` virtual stages, or None.
        Megatron-Core's rule, and the one of a framework that writes no launch line: without virtual
        stages any ``pp`` up to the layers (uneven splits fewer on the first and last stages,
        ``decoder_first/last_pipeline_num_layers``); with them stages of equal layers (:func:`equal_stages`)."""
        if vp > 1 and pp == 1:
            return f"vp = {vp} virtual stages need pipeline parallelism (pp > 1); drop vp or set pp"
        if pp > n_layers:
            return f"pp = {pp} is more than the {n_layers} layers"
        return unequal(n_layers, pp, vp) if vp > 1 and equal_stages(n_layers, pp, vp) is None else None

    def interleaves(self, pp: int, vp: int, micro_batches: int) -> Optional[str]:
        """Why an interleaved schedule of ``vp`` stages per rank cannot run ``micro_batches`` over ``pp`` ranks."""
        if vp > 1 and self.runs.interleave_rounds and micro_batches % pp:
            return (f"its interleaved schedule runs micro-batches in rounds of pp = {pp}, and a step has "
                    f"{micro_batches}: give a global batch or micro batch that makes a multiple of {pp}")
        return None

    def takes(self, knob: str, value: Any) -> bool:
        """Whether the framework runs ``knob`` (``fsdp``, ``precision``, ``activation_checkpointing``,
        ``moe_dispatcher``) at ``value``."""
        allowed = {"fsdp": self.runs.shardings, "precision": self.runs.trains_in,
                   "activation_checkpointing": self.runs.recompute, "moe_dispatcher": self.runs.dispatchers}[knob]
        return allowed is None or value in allowed

    def recomputes(self, modules: Any, checkpointing: Any) -> Optional[str]:
        """Why the framework cannot recompute the MoE ``modules`` (``moe_recompute``, comma-separated) under
        ``checkpointing``, or None: they are a selective recompute's modules (Megatron-Core reads
        ``recompute_modules`` only with selective granularity), of those it runs.

        >>> Framework("any").recomputes("moe_act", "full")
        'MoE modules are recomputed by selective checkpointing: give activation_checkpointing=selective or moe_recompute=none'
        """
        given = [m for m in str(modules).split(",") if m and m != "none"] if isinstance(modules, str) else []
        if not given:
            return None
        allowed = self.runs.moe_recompute
        if allowed is not None and any(m not in allowed for m in given):
            return ("its selective recompute takes no MoE modules: give moe_recompute=none" if not allowed else
                    f"its selective recompute takes the MoE modules {', '.join(allowed)}; give some of them or none")
        if isinstance(checkpointing, str) and checkpointing != "selective":
            return ("MoE modules are recomputed by selective checkpointing: give activation_checkpointing=selective or "
                    "moe_recompute=none")
        return None

    def overlaps(self, config: Mapping[str, Any]) -> Optional[str]:
        """Why the framework cannot run the MoE dispatch overlaps ``config`` turns on (:data:`MOE_OVERLAPS`), or
        None: those it runs (:attr:`Runs.moe_overlaps`).

        >>> Framework("any", runs=Runs(moe_overlaps=())).overlaps({"moe_a2a_overlap": True})
        'moe_a2a_overlap=true under framework=any: it overlaps no MoE dispatch; give moe_a2a_overlap=false'
        """
        where = "" if self.name == UNKNOWN else f" under framework={self.name}"
        for key in MOE_OVERLAPS:
            if _on(config.get(key)) and key not in self.runs.moe_overlaps:
                return f"{key}=true{where}: it overlaps no MoE dispatch; give {key}=false"
        return None

    def refuses(self, config: Mapping[str, Any]) -> Optional[str]:
        """Why the framework cannot run ``config`` (a layout or a whole config; a key it lacks is not
        checked), or None: its sharding, precision, recompute mode, MoE dispatcher and recomputed MoE modules
        (:meth:`recomputes`), the layer split
        (:meth:`split`) and an interleaved schedule's micro-batches (:meth:`interleaves`). One line
        naming the rule and the fix."""
        where = "" if self.name == UNKNOWN else f" under framework={self.name}"
        rules = {"fsdp": (self.runs.shardings, self.runs.sharding_rule),
                 "precision": (self.runs.trains_in, self.runs.precision_rule),
                 "activation_checkpointing": (self.runs.recompute, "its recompute modes"),
                 "moe_dispatcher": (self.runs.dispatchers, "its MoE token dispatchers")}
        for knob, (allowed, rule) in rules.items():
            value = config.get(knob)
            if isinstance(value, str) and not self.takes(knob, value):
                return f"{knob}={value}{where}: {rule}; give {knob}={_choices(allowed)}"
        etp = _whole(config, "etp") or 1
        if etp > 1 and not self.runs.expert_tp:
            return (f"etp={etp}{where}: its experts are not tensor-parallel (expert parallelism borrows the tensor "
                    "and data-parallel ranks); give etp=1")
        if config.get("moe_dispatcher") == "deepep":  # the dispatcher's own kernels, whatever the framework
            group = (_whole(config, "ep") or 1) * etp
            if group > 1 and group not in DEEPEP_GROUPS:
                return (f"moe_dispatcher=deepep over an EP group of {group} ranks (ep x etp): DeepEP has configs for "
                        f"{', '.join(map(str, DEEPEP_GROUPS))} only; give one of those or moe_dispatcher=alltoall")
        if str(config.get("moe_token_drop")).lower() in ("true", "1") and not self.runs.token_drop:
            return (f"moe_token_drop=true{where}: its MoE layers run dropless (no capacity factor on its line); give "
                    "moe_token_drop=false")
        why = self.recomputes(config.get("moe_recompute"), config.get("activation_checkpointing"))
        if why:
            return f"moe_recompute={config['moe_recompute']}{where}: {why}"
        why = self.overlaps(config)
        if why:
            return why
        why = linear_heads(model_linear_heads(config), _whole(config, "tp") or 1, _whole(config, "cp") or 1)
        if why:
            return f"{why}: give a tp x cp that divides them"
        L, pp, vp = _whole(config, "n_layers"), _whole(config, "pp") or 1, _whole(config, "vp") or 1
        why = self.split(L, pp, vp) if L else None
        if why is None and vp > 1:
            m = _whole(config, "grad_accum")
            B, b, dp = (_whole(config, k) for k in ("global_batch_size", "micro_batch_size", "dp"))
            if m is None and None not in (B, b, dp):
                m = B // (b * dp)
            why = self.interleaves(pp, vp, m) if m is not None else None
        return None if why is None else f"pp={pp} vp={vp}{where}: {why}"

    def check_precisions(self, precisions: Sequence[str]) -> None:
        """An :class:`ExportError` where the framework trains in none of ``precisions``, or in one of
        them not (checked before a plan is made; :meth:`refuses` keeps such layouts out of its space)."""
        refused = [p for p in precisions if not self.takes("precision", p)]
        if refused:
            kept = [p for p in precisions if p not in refused] or [p for p in ("bf16",) if self.takes("precision", p)]
            raise ExportError(f"--precision {','.join(precisions)} for {self.name}: {self.runs.precision_rule}; "
                              f"plan --precision {','.join(kept)}")

    # the launch line -------------------------------------------------------------------
    def check_export(self, model: Mapping[str, Any], precisions: Sequence[str], catalog_name: Optional[str],
                     unlike: str = "") -> None:
        """An :class:`ExportError` if no layout of ``model`` in ``precisions`` can be written:
        ``catalog_name`` is the model of :attr:`models` it is (None: none; ``unlike`` says what
        differs where its shape is only like one's). Checked before the plan is made."""
        unwritten = [p for p in precisions if p not in self.runs.writes]
        if unwritten:
            raise ExportError(f"--export for {self.name}: perfzoo writes {' and '.join(self.runs.writes)} launch "
                              f"lines, not {', '.join(unwritten)}: plan --precision {','.join(self.runs.writes)}")

    def arguments(self, layout: Mapping[str, Any], model: Optional[str] = None) -> list[str]:
        """The framework's own arguments that run ``layout`` (after :attr:`entry`) of catalog ``model``."""
        raise ExportError(f"perfzoo writes no {self.name} launch line")

    def environment(self, layout: Mapping[str, Any]) -> dict[str, str]:
        """The environment variables the framework's checks ask of ``layout`` (none unless it says)."""
        return {}

    def command(self, layout: Mapping[str, Any], launch: Launch, model: Optional[str] = None) -> list[str]:
        """The whole launch line: ``torchrun``, :attr:`entry`, :meth:`arguments`."""
        return [*launch.torchrun(), *self.entry, *self.arguments(layout, model)]

    def read(self, args: Sequence[str], source: str) -> Baseline:
        """A user's arguments (``source`` names where they came from, for messages) as a :class:`Baseline`."""
        raise ExportError(f"{source}: reading {self.name} arguments as a baseline is not supported")


def check_expanded(args: Sequence[str], flags: Collection[str], source: str) -> None:
    """An :class:`ExportError` where one of ``flags`` takes a shell variable in ``args`` (``--flag $TP``,
    ``--flag=${TP}``): a file is read as written, with no shell to expand it.

    >>> check_expanded(["--tp", "$TP"], {"--tp"}, "job.sh")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    perfzoo.frameworks._base.ExportError: job.sh: --tp $TP is a shell variable, ... e.g. --tp 4
    """
    for i, word in enumerate(args):
        flag, eq, value = word.partition("=")
        if not eq:
            flag, value = word, (args[i + 1] if i + 1 < len(args) else "")
        if flag in flags and "$" in value:
            raise ExportError(f"{source}: {flag} {value} is a shell variable, which perfzoo does not expand (it reads "
                              f"the file as written): write its value in its place, e.g. {flag} 4")


def script(command: Sequence[str], comments: Sequence[str], env: Optional[Mapping[str, str]] = None) -> str:
    """A bash script: ``comments`` as ``#`` lines, ``env`` as ``export`` lines, then ``command`` one
    argument (or flag and its value) a line. Shell variables in the rendezvous endpoint are left for the shell.

    >>> print(script(["torchrun", "--standalone", "-m", "x", "--a", "1", "--b"], ["hi"], {"V": "1"}))
    #!/usr/bin/env bash
    # hi
    export V=1
    torchrun \\
      --standalone \\
      -m x \\
      --a 1 \\
      --b
    <BLANKLINE>
    """
    words = [w if "$" in w else shlex.quote(w) for w in command]
    lines, i = [], 0
    while i < len(words):
        word = words[i]
        if i + 1 < len(words) and word.startswith("-") and not words[i + 1].startswith("-"):
            word, i = f"{word} {words[i + 1]}", i + 1
        lines.append(word)
        i += 1
    exports = [f"export {k}={shlex.quote(str(v))}" for k, v in (env or {}).items()]
    return "\n".join(["#!/usr/bin/env bash", *(f"# {c}" for c in comments), *exports, " \\\n  ".join(lines), ""])


def script_command(text: str) -> list[str]:
    """The launch line of a :func:`script`, split as the shell would (comments and ``export`` lines
    dropped, continuation lines joined; shell variables left as written).

    >>> script_command("#!/usr/bin/env bash\\n# c\\nexport V=1\\ntorchrun --standalone \\\\\\n  --a 1\\n")
    ['torchrun', '--standalone', '--a', '1']
    """
    lines = text.replace("\\\n", " ").splitlines()
    return shlex.split("\n".join(line for line in lines if not line.lstrip().startswith("export ")), comments=True)


__all__ = ["ALTERNATE_MATMULS", "Baseline", "DEEPEP_GROUPS", "DISPATCHERS", "ExportError", "Framework", "Launch", "MATMULS",
           "MOE_OVERLAPS", "Physics",
           "Recipe", "Runs", "UNKNOWN", "check_expanded", "equal_stages", "linear_heads", "model_linear_heads", "script",
           "script_command", "stage_split", "unequal"]
