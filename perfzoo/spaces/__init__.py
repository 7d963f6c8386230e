"""Search spaces: the one definition of which configurations a workload may run.

A :class:`Space` is a list of dimensions (:class:`Categorical`, :class:`Integer`,
:class:`SteppedFloat`), fixed ``constants``, ``derived`` keys computed from the others, and
``constraints`` between knobs. Collect validates and samples from it, features encode with
it, the searcher proposes inside it. Every config it produces is a flat dict in the config
vocabulary of its workload (:mod:`perfzoo.workloads`: each bundle's docstring lists its keys).

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

The built-in spaces belong to their workloads' bundles (:mod:`perfzoo.workloads`):
``fsdp-ads`` and ``fsdp-ads-v2`` (:mod:`perfzoo.workloads.fsdp_ads.spaces`), ``llm-small``,
``llm-gpu`` and ``megatron-a100`` (:mod:`perfzoo.workloads.llm.spaces`); :func:`get` finds
every registered workload's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Union

from perfzoo.spaces._base import (SPACES, Categorical, Constraint, Dimension, Integer, Scalar, Space,
                                  SpaceError, SteppedFloat, _same, names, register, registered)
from perfzoo.spaces.file import FileSpace, SpaceFileError, load as load_file

__all__ = ["Categorical", "Constraint", "Dimension", "FileSpace", "Integer", "Scalar", "Space", "SpaceError",
           "SpaceFileError", "SteppedFloat", "get", "load_file", "names", "register", "registered", "SPACES", "_same"]


def get(name: Union[str, Path]) -> Space:
    """The space called ``name``: a registered name, or the path of a ``.toml`` space file.

    >>> get("fsdp-ads-v2").workload
    'fsdp'
    """
    if isinstance(name, Space):
        return name
    if str(name).endswith(".toml"):
        return load_file(name)
    spaces = registered()
    if name not in spaces:
        hint = " (a space file's path ends in .toml)" if Path(str(name)).exists() else ""
        raise SpaceError(f"unknown search space {name!r}; registered spaces are {names()}, or give the path "
                         f"of a .toml space file{hint}")
    return spaces[name]
