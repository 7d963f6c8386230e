"""Vectorised encodings of a search space: configs as integer index arrays.

A config of a :class:`~perfzoo.spaces.Space` with ``D`` dimensions is a row of ``D``
integers (the position of each knob's value in ``dimension.values``). :class:`SpaceCodec`
turns such rows, many at once and without a Python dict per config, into

* validity masks (:meth:`SpaceCodec.valid`): each constraint (and the space's ``derived``
  function, which may refuse a config) is compiled once into a lookup table over the few
  dimensions it reads, found by tracing which keys it reads (:mod:`perfzoo.spaces.rules`);
* integer keys (:meth:`SpaceCodec.keys`, a mixed-radix number: equal configs, equal keys)
  for de-duplication and for excluding configs already measured;
* what a predictor takes (:meth:`SpaceCodec.columns`, as :class:`~perfzoo.records.columns.Columns`:
  each dimension's values looked up by index, constants held once, typed as
  :mod:`perfzoo.spaces.values` says; :meth:`SpaceCodec.frame`, the same as a DataFrame):
  ``config.<knob>`` columns for dimensions, constants and derived keys, plus fixed columns
  such as ``hardware.accelerator``; this is the one place search and plan build predictor
  inputs;
* complete config dicts (:meth:`SpaceCodec.configs`) for the few configs that get proposed.

>>> from perfzoo.spaces import get
>>> codec = SpaceCodec(get("llm-small"))
>>> idx = codec.sample(4, seed=0)
>>> bool(codec.valid(idx).all()), idx.shape == (4, len(codec.names))
(True, True)
>>> frame = codec.frame(idx, columns=["config.hidden_dim", "config.n_params"])
>>> list(frame.columns)
['config.hidden_dim', 'config.n_params']
>>> [codec.space.is_valid(c) for c in codec.configs(idx)]
[True, True, True, True]
"""

from __future__ import annotations

import math
from typing import Any, Iterable, Optional, Sequence

import numpy as np
import pandas as pd

from perfzoo.console import InputError
from perfzoo.records.columns import Columns
from perfzoo.spaces._base import Space, SpaceError, _same
from perfzoo.spaces.rules import MAX_TABLE, Rule, tabulate
from perfzoo.spaces.values import as_column, categorical, column_array, constant_column, derived_column, objects


class SpaceCodec:
    """Index-array view of a :class:`~perfzoo.spaces.Space` (see the module docstring).

    Parameters
    ----------
    space : the Space (``perfzoo.spaces.get(name_or_path)`` finds one).
    max_table : the largest lookup table a constraint may compile to; a rule reading more
        dimension combinations than this is checked config by config (slow but correct).
    """

    def __init__(self, space: Space, max_table: int = MAX_TABLE):
        self.space = space
        self.dims = list(self.space.dimensions)
        self.names = [d.name for d in self.dims]
        self.values = [tuple(d.values) for d in self.dims]
        self.cards = np.array([len(v) for v in self.values], dtype=np.int64)
        self.size = int(math.prod(int(c) for c in self.cards))
        if self.size >= 2 ** 62:
            raise InputError(f"space {self.space.name!r} has {self.size:.3g} grid points: too many for "
                             "64-bit config keys")
        # mixed radix, last dimension fastest (the order of itertools.product / enumerate)
        self.radix = np.ones(len(self.dims), dtype=np.int64)
        for i in range(len(self.dims) - 2, -1, -1):
            self.radix[i] = self.radix[i + 1] * self.cards[i + 1]
        self.max_table = max_table
        self._columns = {name: column_array(vals) for name, vals in zip(self.names, self.values)}
        self._constants: dict[tuple, tuple] = {}  # constant columns made so far (:meth:`_constant`)
        self._base = {d.name: d.values[0] for d in self.dims}
        self._base.update(self.space.constants)
        self._pos = {n: i for i, n in enumerate(self.names)}
        self.rules: list[Rule] = []
        self.vectorised = True
        for c in self.space.constraints:
            rule = tabulate(c.check, "constraint", self.names, self.values, self._base, max_table)
            if rule is None:
                self.vectorised = False
            else:
                self.rules.append(rule)
        self.derived_rule: Optional[Rule] = None
        self.derived_keys: list[str] = []
        if self.space.derived is not None:
            self.derived_rule = tabulate(self.space.derived, "derived", self.names, self.values, self._base,
                                         max_table)
            if self.derived_rule is None:
                self.vectorised = False
            self.derived_keys = [k for k in self.space.knobs() if k not in self._pos and k not in self.space.constants]
            if self.derived_rule is not None:  # text / bool values as (categories, code table), as dimensions
                self._derived_columns = {k: derived_column(t) for k, t in self.derived_rule.values.items()}
        self.has_constraints = bool(self.space.constraints) or self.space.derived is not None

    def __repr__(self) -> str:
        return (f"SpaceCodec({self.space.name!r}, {len(self.dims)} dimensions, {self.size:,} grid points, "
                f"{'vectorised' if self.vectorised else 'per-config'} constraints)")

    # -- index arrays ----------------------------------------------------------------------
    def _check(self, idx: np.ndarray) -> np.ndarray:
        idx = np.asarray(idx, dtype=np.int64)
        if idx.ndim == 1:
            idx = idx[None, :]
        if idx.shape[1] != len(self.dims):
            raise ValueError(f"index rows have {idx.shape[1]} entries; space {self.space.name!r} has "
                             f"{len(self.dims)} dimensions")
        return idx

    def keys(self, idx: np.ndarray) -> np.ndarray:
        """One int64 per row, equal for equal configs (mixed radix, last dimension fastest)."""
        idx = self._check(idx)
        return idx @ self.radix

    def decode(self, keys: np.ndarray) -> np.ndarray:
        """Index rows of integer keys (the inverse of :meth:`keys`)."""
        keys = np.asarray(keys, dtype=np.int64).reshape(-1)
        out = np.empty((len(keys), len(self.dims)), dtype=np.int64)
        rest = keys.copy()
        for i in range(len(self.dims)):
            out[:, i], rest = np.divmod(rest, self.radix[i])
        return out

    def valid(self, idx: np.ndarray) -> np.ndarray:
        """Boolean mask: rows that satisfy every constraint of the space."""
        idx = self._check(idx)
        ok = np.ones(len(idx), dtype=bool)
        if not self.has_constraints:
            return ok
        if not self.vectorised:
            return np.array([self.space.is_valid(c) for c in self._raw(idx)], dtype=bool)
        for rule in self.rules + ([self.derived_rule] if self.derived_rule is not None else []):
            if rule.deps:
                ok &= rule.ok[tuple(idx[:, i] for i in rule.deps)]
            elif not rule.ok:
                ok[:] = False
        return ok

    def sample(self, n: int, seed: Any = 0, *, unique: bool = False, exclude: Optional[np.ndarray] = None,
               max_rounds: int = 1000) -> np.ndarray:
        """``n`` valid index rows drawn uniformly per dimension (rejecting invalid ones).

        ``unique``: no repeated config; ``exclude``: keys (:meth:`keys`) never returned.
        ``seed`` may be an int or a ``numpy.random.Generator``.
        """
        rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
        got: list[np.ndarray] = []
        have = 0
        seen = set(np.asarray(exclude, dtype=np.int64).tolist()) if exclude is not None else set()
        for _ in range(max_rounds):
            need = n - have
            if need <= 0:
                break
            draw = rng.integers(0, self.cards, size=(max(2 * need, 64), len(self.dims)))
            draw = draw[self.valid(draw)]
            if unique or seen:
                keys = self.keys(draw)
                keep = []
                for j, k in enumerate(keys.tolist()):
                    if k in seen:
                        continue
                    if unique:
                        seen.add(k)
                    keep.append(j)
                draw = draw[keep]
            draw = draw[:need]
            got.append(draw)
            have += len(draw)
        if have < n:
            raise SpaceError(f"space '{self.space.name}': could not draw {n} valid configs ({have} found)")
        return np.concatenate(got)[:n]

    def all_indices(self, start: int = 0, stop: Optional[int] = None) -> np.ndarray:
        """Index rows of grid points ``start .. stop - 1`` (grid order), valid or not: as
        :meth:`decode` of those keys, each dimension's column written as runs of one value (no
        division per row).

        >>> from perfzoo.spaces import get
        >>> codec = SpaceCodec(get("llm-small"))
        >>> bool((codec.all_indices(1000, 5000) == codec.decode(np.arange(1000, 5000))).all())
        True
        """
        stop = self.size if stop is None else min(stop, self.size)
        n = max(stop - start, 0)
        out = np.empty((n, len(self.dims)), dtype=np.int64, order="F")
        if n == 0:
            return out
        for i, (radix, card) in enumerate(zip(self.radix.tolist(), self.cards.tolist())):
            first, last = start // radix, (stop - 1) // radix
            blocks = np.arange(first, last + 1, dtype=np.int64) % card
            if radix == 1:
                out[:, i] = blocks
                continue
            runs = np.full(len(blocks), radix, dtype=np.int64)
            runs[0] -= start - first * radix
            runs[-1] -= (last + 1) * radix - stop
            out[:, i] = np.repeat(blocks, runs)
        return out

    # -- configs <-> rows ------------------------------------------------------------------
    def _raw(self, idx: np.ndarray) -> list[dict]:
        return [{n: self.values[i][j] for i, (n, j) in enumerate(zip(self.names, row))} for row in idx.tolist()]

    def configs(self, idx: np.ndarray) -> list[dict]:
        """Complete configs (constants and derived keys filled in) of index rows."""
        return [self.space.validate(c) for c in self._raw(self._check(idx))]

    def index_of(self, configs: Iterable[dict], *, skip_foreign: bool = False) -> np.ndarray:
        """Index rows of config dicts. A config with a knob outside the space raises
        :class:`~perfzoo.spaces.SpaceError`, or is left out with ``skip_foreign=True``."""
        lookups = [dict() for _ in self.dims]
        rows = []
        for cfg in configs:
            row = []
            try:
                for i, d in enumerate(self.dims):
                    if d.name not in cfg:
                        raise SpaceError(f"space '{self.space.name}': missing knob '{d.name}'")
                    v = cfg[d.name]
                    if isinstance(v, float) and math.isnan(v):
                        v = None
                    hk = (type(v).__name__, v)
                    if hk not in lookups[i]:
                        lookups[i][hk] = d.index(v)
                    row.append(lookups[i][hk])
                for k, v in self.space.constants.items():
                    if k in cfg and not _same(cfg[k], v):
                        raise SpaceError(f"space '{self.space.name}': knob '{k}' = {cfg[k]!r} but the space "
                                         f"fixes it to {v!r}")
            except SpaceError:
                if skip_foreign:
                    continue
                raise
            rows.append(row)
        return np.array(rows, dtype=np.int64).reshape(-1, len(self.dims))

    def keys_of(self, configs: Iterable[dict]) -> np.ndarray:
        """Sorted unique keys of config dicts; configs outside the space are left out (they can
        never be proposed anyway). What a searcher's ``exclude`` takes.

        >>> from perfzoo.spaces import get
        >>> codec = SpaceCodec(get("llm-small"))
        >>> configs = codec.configs(codec.sample(3, seed=0, unique=True))
        >>> keys = codec.keys_of(configs + configs[:1] + [{"other": 1}])  # a repeat, a foreign config
        >>> len(keys), bool((np.diff(keys) > 0).all())
        (3, True)
        """
        return np.unique(self.keys(self.index_of(configs, skip_foreign=True)))

    # -- predictor inputs ------------------------------------------------------------------
    def knob_columns(self) -> list[str]:
        """``config.<knob>`` for every knob a complete config holds."""
        return [f"config.{k}" for k in self.space.knobs()]

    def columns(self, idx: np.ndarray, columns: Optional[Sequence[str]] = None,
                fixed: Optional[dict] = None) -> Columns:
        """What a predictor takes, as :class:`~perfzoo.records.columns.Columns`: each dimension's column
        looked up in its value table by index (text and bools as Categoricals), derived keys in
        their compiled tables, constants and ``fixed`` values held once; no per-row Python and
        no DataFrame. ``columns`` and ``fixed`` as in :meth:`frame`.

        >>> from perfzoo.spaces import get
        >>> codec = SpaceCodec(get("llm-small"))
        >>> cols = codec.columns(codec.sample(5, seed=0), ["config.hidden_dim", "hardware.accelerator"],
        ...                      fixed={"hardware.accelerator": "cpu"})
        >>> len(cols), cols.is_constant("hardware.accelerator"), cols.is_constant("config.hidden_dim")
        (5, True, False)
        """
        idx = self._check(idx)
        fixed = dict(fixed or {})
        wanted = list(columns) if columns is not None else self.knob_columns() + [c for c in fixed
                                                                               if c not in self.knob_columns()]
        data: dict[str, Any] = {}
        series: dict[str, pd.Series] = {}
        derived_cache: Optional[dict] = None
        for col in wanted:
            if col in fixed:
                data[col], series[col] = self._constant(col, fixed[col])
                continue
            key = col[len("config."):] if col.startswith("config.") else None
            if key is None:
                continue
            if key in self._pos:
                kind, spec = self._columns[key]
                j = idx[:, self._pos[key]]
                data[col] = spec[j] if kind in ("int", "float") else categorical(spec[0], spec[1][j])
            elif key in self.space.constants:
                data[col], series[col] = self._constant(col, self.space.constants[key])
            elif key in self.derived_keys:
                if derived_cache is None:
                    derived_cache = self._derived_values(idx)
                data[col] = derived_cache[key]
        return Columns({c: data[c] for c in wanted if c in data}, len(idx), series)

    def _constant(self, col: str, value: Any) -> tuple[Any, pd.Series]:
        """A constant column (length 1) and its Series, made once per column and value (a search
        builds thousands of small Columns, each with the same constants)."""
        key = (col, type(value).__name__, repr(value))
        hit = self._constants.get(key)
        if hit is None:
            values = constant_column(value)
            hit = self._constants[key] = (values, pd.Series(values, copy=False))
        return hit

    def frame(self, idx: np.ndarray, columns: Optional[Sequence[str]] = None, fixed: Optional[dict] = None,
              categorical: bool = True) -> pd.DataFrame:
        """The DataFrame a predictor takes, one row per index row (:meth:`columns` as a frame).

        Parameters
        ----------
        columns : the columns wanted, in order (e.g. ``predictor.input_columns_`` or a
            dataset's ``feature_columns``); default: every ``config.<knob>`` and the ``fixed``
            columns. A wanted column the space cannot fill and ``fixed`` does not name is
            left out (predictors treat optional columns as unknown).
        fixed : column -> value for columns outside the space (``hardware.accelerator``...).
        categorical : text / bool knobs as pandas ``Categorical`` (fast; for predicting) or as
            object arrays (like a dataset frame; for fitting).
        """
        cols = self.columns(idx, columns, fixed)
        data = {c: cols.full(c) for c in cols.columns}
        if not categorical:
            data = {c: (objects(v) if isinstance(v, pd.Categorical) else v) for c, v in data.items()}
        return pd.DataFrame(data, columns=cols.columns)

    def _derived_values(self, idx: np.ndarray) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.derived_rule is not None and self.vectorised:
            rule = self.derived_rule
            where = tuple(idx[:, i] for i in rule.deps)
            for k, (kind, spec) in self._derived_columns.items():
                if kind == "cat":
                    cats, table = spec
                    out[k] = categorical(cats, table[where] if rule.deps else table.reshape(1))
                else:
                    out[k] = spec[where] if rule.deps else spec.reshape(1)
            return out
        rows = [self.space.validate(c) for c in self._raw(idx)]
        for k in self.derived_keys:
            out[k] = as_column(np.array([r.get(k) for r in rows], dtype=object))
        return out


__all__ = ["SpaceCodec"]
