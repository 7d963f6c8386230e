"""The workload registry: one :class:`WorkloadSpec` per workload, all perfzoo knows about it.

A spec bundles what the rest of perfzoo asks about a workload: how the harness runs it, its
search spaces, its cost model and which rows that model costs, its config vocabulary and the
baselines the closed loop compares with. Generic code loops over :func:`specs`, never over
workload names: :func:`perfzoo.spaces.get` finds a bundle's spaces, ``analytic.estimate``
gives each row to the first spec that claims it, ``features`` takes the union of the
vocabularies, collect the default space, the loop the baselines.

The built-in bundles are named by module path in :data:`BUILTIN` and imported on the first
lookup, so the lower packages (:mod:`perfzoo.spaces`, :mod:`perfzoo.analytic`) can ask the
registry without importing the bundles that import them. This module imports nothing of
perfzoo, not even for type hints (the spaces ask it, so it must not ask them): a spec's spaces
are :class:`perfzoo.spaces.Space` objects, a baseline's ladder takes a
:class:`perfzoo.spaces.codec.SpaceCodec`.

>>> [spec.name for spec in specs()][:3]
['fsdp', 'llm', 'command']
>>> get("fsdp").default_space
'fsdp-ads-v3'
"""

from __future__ import annotations

import importlib
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Mapping, Optional
from perfzoo.console import InputError

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

# the built-in bundles, in claim order (a row both claim is costed by the first); each module
# defines ``SPEC``: adding a built-in workload is one line here
BUILTIN = ("perfzoo.workloads.fsdp_ads", "perfzoo.workloads.llm", "perfzoo.workloads.command")


@dataclass(frozen=True)
class Baseline:
    """A fixed baseline of the closed loop: configs to try in order until one finishes ``ok``."""

    ladder: Callable[[Any], list[dict]]  # the space (as its SpaceCodec) -> the ladder's configs
    rule: str  # how the ladder was chosen, written into the loop's plan


@dataclass(frozen=True)
class WorkloadSpec:
    """Everything perfzoo knows about one workload (see the module docstring)."""

    name: str  # the records' ``workload`` and the spaces' ``workload``, e.g. ``'fsdp'``
    # the module that builds and runs it (``build(config, ctx) -> Built``, see :mod:`harness.workloads`),
    # a dotted path: the harness stays importable without perfzoo, and dry runs import no torch
    harness: str
    throughput_unit: str  # what its records' throughput counts, e.g. ``'queries/s'``
    default_space: Optional[str] = None  # the space collect runs when only the workload is given
    spaces: tuple[Any, ...] = ()  # the search spaces it owns (Space objects); ``perfzoo.spaces.get`` finds them
    # its cost model: a frame of configs -> every column of ``analytic.ESTIMATE_COLUMNS`` (None: no model)
    cost: Optional[Callable[["pd.DataFrame"], dict[str, "np.ndarray"]]] = None
    # the rows its cost model prices: a frame -> a bool array (0-d broadcasts); needed with ``cost``
    claims: Optional[Callable[["pd.DataFrame"], "np.ndarray"]] = None
    size_keys: frozenset[str] = frozenset()  # config keys features also give as log2 (sizes, counts)
    optional_keys: frozenset[str] = frozenset()  # config keys a config may leave out
    baselines: Mapping[str, Baseline] = field(default_factory=dict)  # loop phase -> its baseline
    # config keys the harness's build implies for a config (e.g. the llm workload's FP8 recipe): its
    # spaces derive them, and a record store's measured records that predate a key get it when read
    implied: Optional[Callable[[dict], dict]] = None

    def __post_init__(self):
        if (self.cost is None) != (self.claims is None):
            raise ValueError(f"workload {self.name!r}: a cost model needs its claims and claims need a cost model")
        wrong = [s.name for s in self.spaces if s.workload != self.name]
        if wrong:
            raise ValueError(f"workload {self.name!r}: spaces {wrong} belong to other workloads")


_SPECS: dict[str, WorkloadSpec] = {}
_LOCK = threading.RLock()  # other threads wait for the built-ins; the loading thread passes again
_builtin_loaded = False


def _load_builtin() -> None:
    global _builtin_loaded
    with _LOCK:
        if _builtin_loaded:
            return
        _builtin_loaded = True
        try:
            for path in BUILTIN:
                register(importlib.import_module(path).SPEC)
        except BaseException:
            _builtin_loaded = False
            _SPECS.clear()
            raise


def register(spec: WorkloadSpec) -> WorkloadSpec:
    """Add a workload (after the built-ins); a name, or a space name, already taken is refused."""
    _load_builtin()
    if spec.name in _SPECS:
        raise ValueError(f"a workload named {spec.name!r} is already registered (harness {_SPECS[spec.name].harness}); "
                         "give the new workload another name")
    taken = {s.name: other.name for other in _SPECS.values() for s in other.spaces}
    clash = [f"{s.name!r} (workload {taken[s.name]!r})" for s in spec.spaces if s.name in taken]
    if clash:
        raise ValueError(f"workload {spec.name!r}: space names already registered: {', '.join(clash)}")
    _SPECS[spec.name] = spec
    return spec


def specs() -> list[WorkloadSpec]:
    """Every registered workload, in registration order (the built-ins first)."""
    _load_builtin()
    return list(_SPECS.values())


def names() -> list[str]:
    """The registered workloads' names, in registration order."""
    return [s.name for s in specs()]


def get(name: str) -> WorkloadSpec:
    """The workload called ``name``; a ``ValueError`` lists the registered ones."""
    _load_builtin()
    if name not in _SPECS:
        raise InputError(f"unknown workload {name!r}; registered workloads are {names()}")
    return _SPECS[name]
