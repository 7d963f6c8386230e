"""Configs as columns of arrays: the light frame that features, cost models and predictors read.

A :class:`Columns` maps column names (``config.*``, ``hardware.*``) to one-dimensional arrays
of one row count ``n``: numbers as numpy arrays, text and bools as :class:`pandas.Categorical`.
A column that has one value for every row is held once (length 1) and broadcasts, so arithmetic
on it costs nothing per row. :meth:`perfzoo.spaces.codec.SpaceCodec.columns` builds one from
index rows (one value table per dimension, no per-row Python); :meth:`Columns.of` wraps a
DataFrame without copying it. Cost models read it as they read a frame (``columns``,
``cols[name]`` as a Series, ``len``, ``.loc[mask]``), and :mod:`perfzoo.zoo.features` computes each
chunk's analytic estimates once into its ``cache``.

>>> cols = Columns({"config.tp": np.array([1, 2, 4]), "hardware.accelerator": pd.Categorical(["H100"])}, 3)
>>> len(cols), cols.columns, cols.is_constant("hardware.accelerator")
(3, ['config.tp', 'hardware.accelerator'], True)
>>> cols["config.tp"].tolist(), cols.full("hardware.accelerator").tolist()
([1, 2, 4], ['H100', 'H100', 'H100'])
>>> cols.loc[np.array([False, True, True])].to_frame()["config.tp"].tolist()
[2, 4]
"""

from __future__ import annotations

from typing import Any, Iterable, Optional

import numpy as np
import pandas as pd


class Columns:
    """Column name -> array (numpy, or :class:`pandas.Categorical`) of length ``n`` or 1 (see the
    module docstring); ``series``: Series already made of some of them (read only, they may be
    shared). ``cache`` holds what was computed from these rows (analytic estimates)."""

    def __init__(self, data: dict[str, Any], n: int, series: Optional[dict[str, pd.Series]] = None):
        self.n = int(n)
        for name, values in data.items():
            if len(values) not in (1, self.n):
                raise ValueError(f"column {name!r} has {len(values)} values for {self.n} rows")
        self._data = dict(data)
        self._series: dict[str, pd.Series] = dict(series or {})  # made already (shared constants), else on demand
        self._index: Optional[pd.Index] = None
        self.cache: dict[str, Any] = {}

    @classmethod
    def of(cls, frame: pd.DataFrame) -> "Columns":
        """The columns of a DataFrame, its Series kept as they are (no copy)."""
        series = {c: frame[c] for c in frame.columns}
        out = cls({c: _stored(s) for c, s in series.items()}, len(frame))
        out._series = series
        out._index = frame.index
        return out

    # -- the frame protocol the cost models read ------------------------------------------------
    @property
    def columns(self) -> list[str]:
        return list(self._data)

    @property
    def index(self) -> pd.Index:
        """The rows' labels: the DataFrame's (:meth:`of`), else ``0 .. n - 1``."""
        return self._index if self._index is not None else pd.RangeIndex(self.n)

    def __len__(self) -> int:
        return self.n

    def __contains__(self, name: object) -> bool:
        return name in self._data

    def __getitem__(self, name: str) -> pd.Series:
        """The column as a Series (length 1 when it is constant)."""
        s = self._series.get(name)
        if s is None:
            s = self._series[name] = pd.Series(self._data[name], copy=False)
        return s

    @property
    def loc(self) -> "_Rows":
        """``cols.loc[mask]``: the rows a boolean mask keeps (as ``DataFrame.loc``)."""
        return _Rows(self)

    # -- arrays ---------------------------------------------------------------------------------
    def values(self, name: str) -> Any:
        """The column as stored: a numpy array or a Categorical, of length ``n`` or 1."""
        return self._data[name]

    def get(self, name: str) -> Optional[Any]:
        return self._data.get(name)

    def is_constant(self, name: str) -> bool:
        return len(self._data[name]) == 1 and self.n != 1

    def full(self, name: str) -> Any:
        """The column with one value per row (a constant repeated)."""
        return repeat_to(self._data[name], self.n)

    def take(self, rows: np.ndarray) -> "Columns":
        """The rows at positions (or a boolean mask) ``rows``; constants stay constants."""
        rows = np.asarray(rows)
        if rows.dtype == bool:
            rows = np.flatnonzero(rows)
        data = {k: (v if len(v) == 1 and self.n != 1 else v[rows]) for k, v in self._data.items()}
        out = Columns(data, len(rows))
        out._index = None if self._index is None else self._index[rows]
        return out

    def reindex(self, names: Iterable[str]) -> "Columns":
        """The named columns in that order, one this lacks as NaN (held once), as
        ``DataFrame.reindex(columns=names)`` gives, but sharing the rows instead of copying them."""
        names = list(names)
        out = Columns({k: self._data.get(k, _NAN) for k in names}, self.n,
                      {k: s for k, s in self._series.items() if k in names})
        out._index = self._index
        return out

    def expanded(self) -> "Columns":
        """The same columns, each with one value per row (constants repeated)."""
        out = Columns({k: self.full(k) for k in self._data}, self.n)
        out._index = self._index
        return out

    def to_frame(self) -> pd.DataFrame:
        """A DataFrame of the columns, constants repeated (for a model that only reads frames)."""
        return pd.DataFrame({k: self.full(k) for k in self._data}, index=self.index)

    def __repr__(self) -> str:
        const = sum(self.is_constant(k) for k in self._data)
        return f"Columns({self.n:,} rows, {len(self._data)} columns, {const} constant)"


_NAN = np.array([np.nan])


def row_keys(frame: pd.DataFrame) -> np.ndarray:
    """One key per row, equal for rows whose values are equal (a missing value equals a missing
    value): what "the same configuration" means when rows are compared or deduplicated.

    >>> keys = row_keys(pd.DataFrame({"tp": [1, 1, 2, None, None], "p": ["bf16", "bf16", "bf16", "fp8", "fp8"]}))
    >>> bool(keys[0] == keys[1]), bool(keys[0] == keys[2]), bool(keys[3] == keys[4])
    (True, False, True)
    """
    text = frame.astype(object).where(frame.notna(), None).astype(str)
    return pd.util.hash_pandas_object(text, index=False).to_numpy()


def repeat_to(values: Any, n: int) -> Any:
    """A column of length 1 (a constant) repeated to ``n`` rows; one of ``n`` rows as it is."""
    if len(values) == n:
        return values
    if isinstance(values, pd.Categorical):
        return pd.Categorical.from_codes(np.full(n, values.codes[0], dtype=values.codes.dtype), dtype=values.dtype)
    return np.repeat(np.asarray(values), n)


def _stored(s: pd.Series) -> Any:
    """A Series' values as a Columns column: a Categorical, a numpy array (numbers, bools, objects;
    not copied) or the Series' extension array."""
    if isinstance(s.dtype, pd.CategoricalDtype) or not isinstance(s.dtype, np.dtype):
        return s.array
    return s.to_numpy()


class _Rows:
    def __init__(self, cols: Columns):
        self.cols = cols

    def __getitem__(self, mask: np.ndarray) -> Columns:
        return self.cols.take(mask)


__all__ = ["Columns", "repeat_to"]
