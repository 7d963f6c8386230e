"""The pieces of a search space: dimensions, constraints, :class:`Space`, and the registry.

The built-in spaces live in their workloads' bundles (:mod:`perfzoo.workloads`), spaces read
from TOML files in :mod:`perfzoo.spaces.file`; :func:`perfzoo.spaces.get` finds either.
"""

from __future__ import annotations

import itertools
import json
import math
import random
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Optional, Sequence, Union

from perfzoo.console import InputError
from perfzoo import workloads

Scalar = Union[bool, int, float, str, None]


class SpaceError(InputError):
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
    """A rule between knobs: ``check(config)`` returns ``None`` if fine, else the reason; ``where``
    it is written, for messages (a space file's line)."""

    name: str
    check: Callable[[dict], Optional[str]]
    where: str = ""


# the space -------------------------------------------------------------------------------

@dataclass
class Space:
    """A search space; see the module docstring.

    Parameters
    ----------
    name : registry name, e.g. ``'fsdp-ads'``.
    workload : the registered workload its configs run on (:mod:`perfzoo.workloads`, e.g. ``'fsdp'``).
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

    @property
    def ref(self) -> str:
        """What a command line names this space by: its registered name (a file space: its path)."""
        return self.name

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
                raise SpaceError(f"{where}{reason} (constraint '{c.name}'{', ' + c.where if c.where else ''})")
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

SPACES: dict[str, Space] = {}  # spaces registered alone; a workload's own come with its spec


def registered() -> dict[str, Space]:
    """Every registered space by name: those of the registered workloads (:mod:`perfzoo.workloads`,
    each bundle's ``spaces``), then those registered alone (:func:`register`)."""
    return {**{s.name: s for spec in workloads.specs() for s in spec.spaces}, **SPACES}


def register(space: Space, replace: bool = False) -> Space:
    """Add a space that belongs to no workload bundle (``replace=True`` to redefine one)."""
    if space.name in registered() and not (replace and space.name in SPACES):
        raise ValueError(f"a space named {space.name!r} is already registered")
    SPACES[space.name] = space
    return space


def names() -> list[str]:
    """Names of the registered spaces."""
    return sorted(registered())
