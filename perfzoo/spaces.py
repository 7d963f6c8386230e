"""Search spaces: the one definition of which configurations a workload may run.

A :class:`Space` is a list of dimensions (:class:`Categorical`, :class:`Integer`,
:class:`SteppedFloat`), fixed ``constants``, ``derived`` keys computed from the others, and
``constraints`` between knobs. Collect validates and samples from it, features encode with
it, the searcher proposes inside it. Every config it produces is a flat dict in the config
vocabulary of ``docs/architecture.md``.

>>> space = get("llm-small")
>>> configs = space.sample(3, seed=0)
>>> all(space.validate(c) == c for c in configs)
True
>>> try:
...     space.validate({**configs[0], "n_kv_heads": 3})
... except SpaceError as exc:
...     print(exc)
space 'llm-small': knob 'n_kv_heads' = 3 is not allowed; allowed values are [1, 2, 4, 8]

Built-in spaces
---------------
``fsdp-ads``
    The CubicML ads-model sharding search, scaled to a 2-core CPU: a per-layer strategy
    (``FULL_SHARD`` / ``SHARD_GRAD_OP`` / ``NO_SHARD``) for each of 11 layers x 5 local batch
    sizes x 9 per-rank memory budgets (8 limits + unlimited): 3^11 x 5 x 9 = 7,971,615
    configs, the paper's 5 x 3^11 x ~10 shape. The budgets bracket the measured footprint
    of a 2-rank job on this machine: 0.36-0.38 GiB of private data (``VmData``) per rank,
    of which about 0.34 GiB is the torch runtime, gloo and FSDP themselves; the spread
    comes from the batch (activations) and the NO_SHARD / SHARD_GRAD_OP layers (unsharded
    parameters, gradients and Adam state). So the tighter budgets make the memory-hungry
    configs run out of memory for real, the loosest never do.
``fsdp-ads-v2``
    The same search on a model where it matters: the 11 layers form a tower of differing
    widths (15k to 530k parameters, 36x), and the memory knob is ``memory_headroom_gib``, the
    limit above each rank's own footprint after the runtime and the process group started
    (:mod:`harness.protocol`), at 9 levels from 0.055 to 0.071 GiB: FULL_SHARD everywhere fits
    from 0.055 (batch 8) or 0.058 (batch 128), NO_SHARD everywhere needs more than 0.070. 3^11 x 5 x 9
    configs, as v1; records of the two versions never mix (their spaces differ).
``llm-small``
    A Llama-style decoder small enough that one training job takes seconds on 2 CPU cores:
    model shape, micro batch, sequence, precision, activation checkpointing, compile, FSDP
    reshard policy and 1 or 2 ranks.
``llm-gpu``
    The same decoder at GPU scale, one GPU: 8-28 blocks of width 1,024-3,072 (0.1-3B
    parameters, head dim 128, 4 KV heads, vocabulary 32,768), sequences of 1k-8k tokens, micro
    batch 1-16 (at most 32k tokens a step), bf16 or fp8, activation checkpointing, compile.
"""

from __future__ import annotations

import itertools
import json
import math
import random
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Optional, Sequence, Union

Scalar = Union[bool, int, float, str, None]


class SpaceError(ValueError):
    """A config does not belong to a space; the message names the knob, value and allowed values."""


# dimensions ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Dimension:
    """A knob a search may vary. ``values`` lists every allowed value in order."""

    name: str
    doc: str = ""

    @property
    def values(self) -> tuple:
        raise NotImplementedError

    def __len__(self) -> int:
        return len(self.values)

    def index(self, value: Any) -> int:
        """Position of ``value`` in :attr:`values` (for one-hot or ordinal encodings)."""
        for i, v in enumerate(self.values):
            if _same(value, v):
                return i
        raise SpaceError(f"knob '{self.name}' = {value!r} is not allowed; allowed values are {self.describe()}")

    def describe(self) -> str:
        return _show(list(self.values))

    def sample(self, rng: random.Random) -> Scalar:
        return rng.choice(self.values)


@dataclass(frozen=True)
class Categorical(Dimension):
    """One of a fixed list of values (strings, numbers, bools or ``None``)."""

    choices: tuple = ()

    @property
    def values(self) -> tuple:
        return tuple(self.choices)


@dataclass(frozen=True)
class Integer(Dimension):
    """Integers ``low, low + step, ..., high`` (inclusive)."""

    low: int = 0
    high: int = 0
    step: int = 1

    @property
    def values(self) -> tuple:
        return tuple(range(self.low, self.high + 1, self.step))

    def describe(self) -> str:
        return f"integers {self.low}..{self.high} in steps of {self.step}"


@dataclass(frozen=True)
class SteppedFloat(Dimension):
    """Floats ``low, low + step, ..., high`` (rounded to 6 digits), optionally also ``None``."""

    low: float = 0.0
    high: float = 0.0
    step: float = 1.0
    allow_none: bool = False

    @property
    def values(self) -> tuple:
        n = int(round((self.high - self.low) / self.step)) + 1
        vals: tuple = tuple(round(self.low + i * self.step, 6) for i in range(n))
        return vals + ((None,) if self.allow_none else ())

    def describe(self) -> str:
        extra = " or None" if self.allow_none else ""
        return f"{self.low:g}..{self.high:g} in steps of {self.step:g}{extra}"


def _same(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return math.isclose(float(a), float(b), rel_tol=0, abs_tol=1e-9)
    return a == b


def _show(values: list) -> str:
    return "[" + ", ".join(json.dumps(v) if isinstance(v, str) else repr(v) for v in values) + "]"


@dataclass(frozen=True)
class Constraint:
    """A rule between knobs: ``check(config)`` returns ``None`` if fine, else the reason."""

    name: str
    check: Callable[[dict], Optional[str]]


# the space -------------------------------------------------------------------------------

@dataclass
class Space:
    """A search space; see the module docstring.

    Parameters
    ----------
    name : registry name, e.g. ``'fsdp-ads'``.
    workload : the harness workload its configs run on (``'fsdp'`` or ``'llm'``).
    dimensions : the knobs a search varies.
    constants : knobs with one value in this space (kept in every config).
    derived : ``fn(config) -> dict`` of keys computed from the others (e.g. ``global_batch_size``);
        a config may state them, but then they must agree.
    constraints : rules between knobs.
    world_size_key : the config key holding the number of ranks.
    runnable : whether the harness can run its configs (``False``: a space for search only).
    """

    name: str
    workload: str
    dimensions: Sequence[Dimension]
    constants: dict = field(default_factory=dict)
    derived: Optional[Callable[[dict], dict]] = None
    constraints: Sequence[Constraint] = ()
    world_size_key: str = "world_size"
    description: str = ""
    runnable: bool = True

    def __post_init__(self):
        names = [d.name for d in self.dimensions]
        if len(set(names)) != len(names):
            raise ValueError(f"space {self.name!r}: duplicate dimension names")
        self._dims = {d.name: d for d in self.dimensions}
        self._knobs: Optional[list[str]] = None  # computed on first use (derived may import)

    def __repr__(self) -> str:
        return f"Space({self.name!r}, workload={self.workload!r}, {len(self.dimensions)} dimensions, size={self.size():,})"

    # shape -------------------------------------------------------------------------------
    def dimension(self, name: str) -> Dimension:
        if name not in self._dims:
            raise SpaceError(f"space '{self.name}' has no dimension '{name}'; dimensions are {sorted(self._dims)}")
        return self._dims[name]

    def knobs(self) -> list[str]:
        """Every key of a complete config: dimensions, constants, then derived keys."""
        if self._knobs is None:
            example = {d.name: d.values[0] for d in self.dimensions}
            example.update(self.constants)
            derived = list(self.derived(example)) if self.derived else []
            self._knobs = [d.name for d in self.dimensions] + list(self.constants) + [
                k for k in derived if k not in self._dims and k not in self.constants]
        return list(self._knobs)

    def size(self) -> int:
        """Grid size: the product of the dimensions' sizes (before constraints)."""
        return math.prod(len(d) for d in self.dimensions)

    # validation --------------------------------------------------------------------------
    def validate(self, config: dict) -> dict:
        """The complete config (constants and derived keys filled in) or a :class:`SpaceError`.

        Accepts a config holding at least every dimension; constants and derived keys may be
        left out (they are filled in) or given (then they must match).
        """
        where = f"space '{self.name}': "
        if not isinstance(config, dict):
            raise SpaceError(f"{where}a config must be a JSON object of knob values, got {type(config).__name__}")
        known = set(self.knobs())
        unknown = [k for k in config if k not in known]
        if unknown:
            raise SpaceError(f"{where}unknown knob '{unknown[0]}'; the knobs are {sorted(known)}")
        missing = [d.name for d in self.dimensions if d.name not in config]
        if missing:
            raise SpaceError(f"{where}missing knob '{missing[0]}' (allowed values: "
                             f"{self._dims[missing[0]].describe()})")
        out: dict[str, Scalar] = {}
        for d in self.dimensions:
            try:
                out[d.name] = d.values[d.index(config[d.name])]  # canonical spelling (e.g. 64.0 -> 64)
            except SpaceError as exc:
                raise SpaceError(f"{where}{exc}") from None
        for k, v in self.constants.items():
            if k in config and not _same(config[k], v):
                raise SpaceError(f"{where}knob '{k}' = {config[k]!r} is not allowed; it is fixed to {v!r} "
                                 f"in this space (define another space to vary it)")
            out[k] = v
        for c in self.constraints:
            reason = c.check(out)
            if reason:
                raise SpaceError(f"{where}{reason} (constraint '{c.name}')")
        if self.derived:
            try:
                derived = self.derived(dict(out, **{k: config[k] for k in config if k not in out}))
            except SpaceError as exc:
                raise SpaceError(f"{where}{exc}") from None
            for k, v in derived.items():
                if k in config and k not in out and not _same(config[k], v):
                    raise SpaceError(f"{where}knob '{k}' = {config[k]!r} does not agree with the other knobs "
                                     f"(it follows from them as {v!r})")
                out.setdefault(k, v)
        return out

    def is_valid(self, config: dict) -> bool:
        try:
            self.validate(config)
            return True
        except SpaceError:
            return False

    # sampling ----------------------------------------------------------------------------
    def sample(self, n: int, seed: int = 0, unique: bool = True, max_tries: int = 1000) -> list[dict]:
        """``n`` valid configs drawn uniformly per dimension (rejecting constraint violations).

        With ``unique`` (default) no config repeats; raises if the space cannot supply ``n``.
        """
        rng = random.Random(seed)
        out, seen = [], set()
        tries = 0
        while len(out) < n:
            tries += 1
            if tries > max_tries * max(n, 1):
                raise SpaceError(f"space '{self.name}': could not draw {n} distinct valid configs "
                                 f"({len(out)} found); the space is smaller than that")
            raw = {d.name: d.sample(rng) for d in self.dimensions}
            try:
                cfg = self.validate(raw)
            except SpaceError:
                continue
            key = json.dumps(cfg, sort_keys=True, default=str)
            if unique and key in seen:
                continue
            seen.add(key)
            out.append(cfg)
        return out

    def enumerate(self, limit: int = 1_000_000) -> Iterator[dict]:
        """Every valid config, in grid order (only for spaces with a grid of at most ``limit``)."""
        if self.size() > limit:
            raise SpaceError(f"space '{self.name}' has {self.size():,} grid points, more than limit={limit:,}; "
                             "use sample() instead")
        for combo in itertools.product(*(d.values for d in self.dimensions)):
            raw = dict(zip((d.name for d in self.dimensions), combo))
            try:
                yield self.validate(raw)
            except SpaceError:
                continue


# registry --------------------------------------------------------------------------------

SPACES: dict[str, Space] = {}


def register(space: Space, replace: bool = False) -> Space:
    """Add a space to the registry (``replace=True`` to redefine one)."""
    if space.name in SPACES and not replace:
        raise ValueError(f"a space named {space.name!r} is already registered")
    SPACES[space.name] = space
    return space


def names() -> list[str]:
    """Names of the registered spaces."""
    return sorted(SPACES)


def get(name: str) -> Space:
    """The registered space called ``name``."""
    if isinstance(name, Space):
        return name
    if name not in SPACES:
        raise SpaceError(f"unknown search space {name!r}; registered spaces are {names()}")
    return SPACES[name]


# built-in: fsdp-ads ----------------------------------------------------------------------

FSDP_N_LAYERS = 11
# memory above the rank's footprint, GiB, at which a job fits: 0.053-0.055 with FULL_SHARD
# everywhere at batch 8, 0.056-0.058 at batch 128, over 0.070 with NO_SHARD everywhere (bisected
# with real OOMs, which harness.protocol makes the same on every repeat)
FSDP_V2_HEADROOM = (0.055, 0.057, 0.059, 0.061, 0.063, 0.065, 0.067, 0.069, 0.071)
SHARDING = ("FULL_SHARD", "SHARD_GRAD_OP", "NO_SHARD")

def _fsdp_space(name: str, batches: tuple, memory: Dimension, constants: dict, description: str) -> Space:
    """A per-layer sharding x local batch x memory space of the ``fsdp`` workload on 2 ranks."""
    return Space(
        name=name,
        workload="fsdp",
        dimensions=[Categorical(f"shard_{i:02d}", f"sharding strategy of layer {i}", choices=SHARDING)
                    for i in range(FSDP_N_LAYERS)]
        + [Categorical("local_batch", "examples per rank per step", choices=batches), memory],
        constants={"n_layers": FSDP_N_LAYERS, **constants, "n_tables": 8, "rows_per_table": 4096,
                   "emb_dim": 32, "world_size": 2, "fsdp_api": "fsdp2", "precision": "fp32"},
        world_size_key="world_size",
        description=description,
    )


FSDP_ADS = register(_fsdp_space(
    "fsdp-ads", (16, 32, 64, 128, 256),
    Categorical("memory_budget_gib", "per-rank memory limit in GiB (None: unlimited)",
                choices=(0.36, 0.365, 0.37, 0.375, 0.38, 0.385, 0.39, 0.40, None)),
    {"width": 128}, "ads-model per-layer FSDP sharding x local batch x memory budget, 2 CPU ranks"))


# built-in: fsdp-ads-v2 -------------------------------------------------------------------

# output width of each layer of the v2 tower (input 64): layers of 15k to 530k parameters
FSDP_V2_WIDTHS = (128, 256, 256, 128, 64, 32, 64, 192, 192, 64, 32)

FSDP_ADS_V2 = register(_fsdp_space(
    "fsdp-ads-v2", (8, 16, 32, 64, 128),
    Categorical("memory_headroom_gib", "per-rank memory limit above the rank's own footprint after "
                "runtime and process-group start, GiB", choices=FSDP_V2_HEADROOM),
    {"width": 64, **{f"width_{i:02d}": w for i, w in enumerate(FSDP_V2_WIDTHS)}},
    "ads-model per-layer FSDP sharding x local batch x memory headroom, 11 layers of 15k-530k "
    "parameters, 2 CPU ranks"))


# built-in: llm-small ---------------------------------------------------------------------

def _llm_constraints() -> list[Constraint]:
    def heads(c):
        if c["hidden_dim"] % c["n_heads"]:
            return f"hidden_dim = {c['hidden_dim']} is not divisible by n_heads = {c['n_heads']}"
        if (c["hidden_dim"] // c["n_heads"]) % 2:
            return f"head dim hidden_dim / n_heads = {c['hidden_dim'] // c['n_heads']} must be even (rotary)"
        return None

    def gqa(c):
        if c["n_kv_heads"] > c["n_heads"] or c["n_heads"] % c["n_kv_heads"]:
            return f"n_heads = {c['n_heads']} is not divisible by n_kv_heads = {c['n_kv_heads']}"
        return None

    def tokens(c):
        t = c["micro_batch_size"] * c["seq_len"]
        if t > 512:
            return (f"micro_batch_size x seq_len = {c['micro_batch_size']} x {c['seq_len']} = {t} tokens "
                    "per rank exceeds 512 (keeps a CPU job to seconds)")
        return None

    return [Constraint("heads_divide_hidden", heads), Constraint("gqa_groups", gqa),
            Constraint("tokens_per_rank", tokens)]


def llm_derived(c: dict) -> dict:
    """Keys of the LLM vocabulary that follow from the knobs: dp, grad_accum, global batch, ..."""
    dp = int(c["n_gpus"])
    micro = int(c["micro_batch_size"])
    gbs = c.get("global_batch_size")
    if gbs is None:
        accum = int(c.get("grad_accum") or 1)
        gbs = micro * dp * accum
    else:
        if int(gbs) % (micro * dp):
            raise SpaceError(f"global_batch_size = {gbs} is not divisible by micro_batch_size x dp = "
                             f"{micro} x {dp} = {micro * dp}")
        accum = int(gbs) // (micro * dp)
    from harness.workloads.llm_shapes import param_counts  # pure arithmetic, no torch

    return {"global_batch_size": int(gbs), "grad_accum": accum, "dp": dp, "tp": 1, "pp": 1, "cp": 1,
            "n_params": param_counts(c)[0]}


LLM_SMALL = register(Space(
    name="llm-small",
    workload="llm",
    dimensions=[
        Categorical("n_layers", "decoder blocks", choices=(2, 4)),
        Categorical("hidden_dim", "model dimension", choices=(128, 256)),
        Categorical("n_heads", "attention heads", choices=(2, 4, 8)),
        Categorical("n_kv_heads", "key/value heads (grouped-query attention)", choices=(1, 2, 4, 8)),
        Integer("ffn_dim", "SwiGLU hidden size", low=256, high=1024, step=256),
        Categorical("vocab_size", "vocabulary", choices=(2048, 8192)),
        Categorical("seq_len", "tokens per sequence", choices=(64, 128, 256)),
        Categorical("micro_batch_size", "sequences per rank per micro-step", choices=(1, 2, 4)),
        Categorical("precision", "fp32, or bf16 mixed precision", choices=("fp32", "bf16")),
        Categorical("activation_checkpointing", "recompute activations", choices=("none", "selective", "full")),
        Categorical("compile", "torch.compile each block", choices=(False, True)),
        Categorical("fsdp", "FSDP2 reshard policy", choices=("full_shard", "shard_grad_op", "no_shard")),
        Categorical("n_gpus", "ranks (CPU processes or GPUs)", choices=(1, 2)),
    ],
    constants={},
    derived=llm_derived,
    constraints=_llm_constraints(),
    world_size_key="n_gpus",
    description="Llama-style decoder small enough for seconds per job on 2 CPU cores",
))


# built-in: llm-gpu ------------------------------------------------------------------------

GPU_HEAD_DIM = 128


def llm_gpu_derived(c: dict) -> dict:
    """The Llama-style shape that follows from depth and width (head dim 128, SwiGLU width
    ``8/3 d`` rounded up to 256, as Llama's), then :func:`llm_derived`."""
    d = int(c["hidden_dim"])
    shape = {"n_heads": d // GPU_HEAD_DIM, "ffn_dim": -(-(8 * d // 3) // 256) * 256}
    return {**shape, **llm_derived({**c, **shape})}


def _llm_gpu_constraints() -> list[Constraint]:
    def tokens(c):
        t = c["micro_batch_size"] * c["seq_len"]
        if t > 32768:
            return (f"micro_batch_size x seq_len = {c['micro_batch_size']} x {c['seq_len']} = {t} tokens "
                    "per step exceeds 32,768 (keeps one measured step of a 3B model near a second)")
        return None

    return [Constraint("tokens_per_step", tokens)]


LLM_GPU = register(Space(
    name="llm-gpu",
    workload="llm",
    dimensions=[
        Categorical("n_layers", "decoder blocks", choices=(8, 12, 16, 20, 24, 28)),
        Categorical("hidden_dim", "model dimension (heads of 128)", choices=(1024, 1536, 2048, 2560, 3072)),
        Categorical("seq_len", "tokens per sequence", choices=(1024, 2048, 4096, 8192)),
        Categorical("micro_batch_size", "sequences per GPU per micro-step", choices=(1, 2, 4, 8, 16)),
        Categorical("precision", "bf16 mixed precision, or fp8 forward matmuls", choices=("bf16", "fp8")),
        Categorical("activation_checkpointing", "recompute activations", choices=("none", "selective", "full")),
        Categorical("compile", "torch.compile each block", choices=(False, True)),
    ],
    constants={"n_kv_heads": 4, "vocab_size": 32768, "fsdp": "full_shard", "n_gpus": 1},
    derived=llm_gpu_derived,
    constraints=_llm_gpu_constraints(),
    world_size_key="n_gpus",
    description="Llama-style decoder of 0.1-3B parameters on one GPU: depth, width, sequence, "
                "micro batch, bf16/fp8, activation checkpointing, compile",
))


# built-in: megatron-a100 (Megatron-style 3D parallelism, the vTrain records' knobs) ------------

def megatron_space(n_layers: int = 24, hidden_dim: int = 1024, ffn_dim: int = 4096, n_heads: int = 16,
                   seq_len: int = 1024, n_gpus: int = 8, name: Optional[str] = None) -> Space:
    """Tensor / pipeline / data parallel degrees, micro batch and gradient accumulation for one
    GPT model on ``n_gpus`` GPUs, with the knob values of the ``vtrain-a100`` records
    (tp 1-8, pp 1-4, micro batch 1-8, 2-16 micro-batches per step). Constraints: tp x pp
    divides the GPU count (dp = n_gpus / (tp x pp)), tp divides the heads, pp the layers;
    derived: dp and the global batch (micro x dp x accumulation)."""
    def degrees(c):
        if n_gpus % (c["tp"] * c["pp"]):
            return f"tp x pp = {c['tp']} x {c['pp']} does not divide n_gpus = {n_gpus}"
        return None

    def heads(c):
        return None if c["n_heads"] % c["tp"] == 0 else f"n_heads = {c['n_heads']} is not divisible by tp = {c['tp']}"

    def layers(c):
        return None if c["n_layers"] % c["pp"] == 0 else f"n_layers = {c['n_layers']} is not divisible by pp = {c['pp']}"

    def derived(c):
        dp = n_gpus // (int(c["tp"]) * int(c["pp"]))
        return {"dp": dp, "cp": 1, "global_batch_size": int(c["micro_batch_size"]) * dp * int(c["grad_accum"])}

    return Space(
        name=name or f"megatron-gpt-{n_layers}L-{hidden_dim}h-{n_gpus}gpu",
        workload="llm",
        dimensions=[Categorical("tp", "tensor parallel degree", choices=(1, 2, 4, 8)),
                    Categorical("pp", "pipeline parallel degree", choices=(1, 2, 4)),
                    Categorical("micro_batch_size", "sequences per micro-batch", choices=(1, 2, 4, 8)),
                    Categorical("grad_accum", "micro-batches per step", choices=(2, 4, 8, 16))],
        constants={"model_name": f"gpt-{n_layers}L-{hidden_dim}h", "n_layers": n_layers, "hidden_dim": hidden_dim,
                   "ffn_dim": ffn_dim, "n_heads": n_heads, "n_kv_heads": n_heads, "seq_len": seq_len,
                   "n_gpus": n_gpus, "fsdp": "none"},
        derived=derived,
        constraints=[Constraint("degrees_divide_gpus", degrees), Constraint("tp_divides_heads", heads),
                     Constraint("pp_divides_layers", layers)],
        world_size_key="n_gpus",
        description=f"Megatron-style tp x pp x dp and micro batch for gpt-{n_layers}L-{hidden_dim}h on {n_gpus} GPUs "
                    "(the vtrain-a100 knobs)",
        runnable=False,  # the llm workload has no tensor or pipeline parallelism
    )


MEGATRON_A100 = register(megatron_space(name="megatron-a100"))
