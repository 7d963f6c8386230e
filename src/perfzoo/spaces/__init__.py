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

Your own job's space is a TOML file (:mod:`perfzoo.spaces.file`); every command that takes
a space name takes its path too, and :func:`get` reads it.

Built-in spaces (:mod:`perfzoo.spaces.builtin`)
-----------------------------------------------
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

from pathlib import Path
from typing import Union

from perfzoo.spaces._base import (SPACES, Categorical, Constraint, Dimension, Integer, Scalar, Space,
                                  SpaceError, SteppedFloat, _same, names, register)
from perfzoo.spaces.builtin import (FSDP_ADS, FSDP_ADS_V2, FSDP_N_LAYERS, FSDP_V2_HEADROOM, FSDP_V2_WIDTHS,
                                    LLM_GPU, LLM_SMALL, MEGATRON_A100, SHARDING, llm_derived, llm_gpu_derived,
                                    megatron_space)
from perfzoo.spaces.file import FileSpace, SpaceFileError, load as load_file

__all__ = ["Categorical", "Constraint", "Dimension", "FileSpace", "Integer", "Scalar", "Space", "SpaceError",
           "SpaceFileError", "SteppedFloat", "get", "load_file", "names", "register", "SPACES",
           "FSDP_ADS", "FSDP_ADS_V2", "FSDP_N_LAYERS", "FSDP_V2_HEADROOM", "FSDP_V2_WIDTHS", "LLM_GPU",
           "LLM_SMALL", "MEGATRON_A100", "SHARDING", "llm_derived", "llm_gpu_derived", "megatron_space", "_same"]


def get(name: Union[str, Path]) -> Space:
    """The space called ``name``: a registered name, or the path of a ``.toml`` space file.

    >>> get("fsdp-ads-v2").workload
    'fsdp'
    """
    if isinstance(name, Space):
        return name
    if str(name).endswith(".toml"):
        return load_file(name)
    if name not in SPACES:
        hint = " (a space file's path ends in .toml)" if Path(str(name)).exists() else ""
        raise SpaceError(f"unknown search space {name!r}; registered spaces are {names()}, or give the path "
                         f"of a .toml space file{hint}")
    return SPACES[name]
