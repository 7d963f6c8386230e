"""A space's constraint or ``derived`` function compiled into a lookup table over the few
dimensions it reads (:func:`tabulate`), so that :class:`~perfzoo.spaces.codec.SpaceCodec` checks
and completes many configs at once: the function is called on every combination of the
dimensions it has read so far (the others at their first value), the keys it reads are traced,
and the table grows until the function reads nothing new.

>>> rule = tabulate(lambda c: None if c["tp"] <= c["gpus"] else "tp > gpus", "constraint",
...                 ["tp", "gpus", "seq"], [(1, 2, 4), (2, 4), (512, 1024)], {"tp": 1, "gpus": 2, "seq": 512})
>>> rule.deps, rule.ok.tolist()
((0, 1), [[True, True], [True, True], [False, True]])
"""

from __future__ import annotations

import itertools
import math
from typing import Any, Callable, Optional, Sequence

import numpy as np

from perfzoo.spaces._base import SpaceError
from perfzoo.spaces.values import as_column

MAX_TABLE = 250_000  # largest lookup table (combinations of the dimensions a rule reads)


def _reads_all(method: Callable) -> Callable:
    """``method`` of a :class:`_Recorder` that reads every key (iterating, listing, copying)."""
    def traced(self, *args):
        self.read_all = True
        return method(self, *args)
    return traced


class _Recorder(dict):
    """A config dict that notes which keys a function reads (iteration reads them all)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.read: set[str] = set()
        self.read_all = False

    def __getitem__(self, key):
        self.read.add(key)
        return super().__getitem__(key)

    def get(self, key, default=None):
        self.read.add(key)
        return super().get(key, default)

    def __contains__(self, key):
        self.read.add(key)
        return super().__contains__(key)

    __iter__ = _reads_all(dict.__iter__)
    keys = _reads_all(dict.keys)
    items = _reads_all(dict.items)
    values = _reads_all(dict.values)
    copy = _reads_all(lambda self: dict(dict.items(self)))


class Rule:
    """A function of a few dimensions, tabulated: ``deps`` (dimension positions) and the
    per-combination results (a bool ``ok`` table and, for ``derived``, value tables)."""

    def __init__(self, deps: tuple[int, ...], ok: np.ndarray, values: Optional[dict[str, np.ndarray]] = None):
        self.deps = deps
        self.ok = ok
        self.values = values or {}


def _call(fn: Callable, base: dict, combo: dict, kind: str, pos: dict[str, int]) -> tuple[bool, Any, set[int]]:
    """``fn`` on ``base`` with ``combo`` set: whether the config passes (a constraint returns None;
    a rule that raises refuses it), what it returned, and the dimensions it read."""
    rec = _Recorder(base)
    rec.update(combo)
    rec.read = set()
    try:
        out = fn(rec)
        ok = out is None if kind == "constraint" else True
        result = out
    except SpaceError as exc:
        ok, result = False, str(exc)
    except Exception as exc:  # a rule that cannot evaluate this combination: invalid
        ok, result = False, f"{type(exc).__name__}: {exc}"
    reads = set(range(len(pos))) if rec.read_all else {pos[k] for k in rec.read if k in pos}
    return ok, result, reads


def tabulate(fn: Callable, kind: str, names: Sequence[str], values: Sequence[tuple], base: dict,
             max_table: int = MAX_TABLE) -> Optional[Rule]:
    """``fn`` (a ``constraint`` check or the ``derived`` function) as a :class:`Rule` over the
    dimensions ``names`` (their ``values``; ``base``: a complete config, the rest at their first
    value); None where its table would exceed ``max_table`` combinations (then the space is
    checked config by config)."""
    pos = {n: i for i, n in enumerate(names)}
    cards = [len(v) for v in values]
    deps: set[int] = set()
    while True:
        order = tuple(sorted(deps))
        shape = tuple(cards[i] for i in order)
        if math.prod(shape) > max_table:
            return None
        ok = np.zeros(shape, dtype=bool)
        results: dict[tuple, Any] = {}
        reads: set[int] = set()
        for combo in itertools.product(*(range(s) for s in shape)):
            setting = {names[i]: values[i][j] for i, j in zip(order, combo)}
            good, result, r = _call(fn, base, setting, kind, pos)
            reads |= r
            ok[combo] = good
            results[combo] = result
        if reads <= deps:
            break
        deps |= reads
    tables: dict[str, np.ndarray] = {}
    if kind == "derived":
        keys: list[str] = []
        for res in results.values():
            if isinstance(res, dict):
                keys += [k for k in res if k not in keys]
        for k in keys:
            arr = np.empty(shape, dtype=object)
            for combo, res in results.items():
                arr[combo] = res.get(k) if isinstance(res, dict) else None
            tables[k] = np.asarray(as_column(arr.reshape(-1))).reshape(shape)
    return Rule(order, ok, tables)


__all__ = ["MAX_TABLE", "Rule", "tabulate"]
