"""Column access for the cost models: a flat frame of configs in, float arrays out.

A column is found as ``config.<key>``, ``<key>`` or ``hardware.<key>``; an absent column is a
0-d array that broadcasts, so a cost model never branches on which columns a frame has; a row's
framework gives the traits its bundle declares (:func:`trait`).
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Optional, Union

import numpy as np
import pandas as pd

from perfzoo.frameworks import REGISTRY
from perfzoo.records.columns import Columns

Frame = Union[pd.DataFrame, Mapping[str, Any]]

GIB = float(2**30)


def as_frame(cfg: Frame) -> tuple[pd.DataFrame, bool]:
    """``(frame, scalar)``: one config (a mapping) becomes a one-row frame and ``scalar=True``."""
    if isinstance(cfg, pd.DataFrame):
        return cfg, False
    if isinstance(cfg, Mapping):
        return pd.DataFrame([dict(cfg)]), True
    raise TypeError(f"expected a DataFrame of configs or one config as a dict, got {type(cfg).__name__}")


def _key(df: pd.DataFrame, name: str) -> Optional[str]:
    """The column that holds ``name``: ``config.<name>``, ``<name>`` or ``hardware.<name>``."""
    return next((k for k in (f"config.{name}", name, f"hardware.{name}") if k in df), None)


def column(df: pd.DataFrame, name: str) -> Optional[pd.Series]:
    key = _key(df, name)
    return None if key is None else df[key]


def _values(df: pd.DataFrame, name: str) -> Any:
    """:func:`column`, but of :class:`~perfzoo.records.columns.Columns` the array as stored (no Series made)."""
    key = _key(df, name)
    if key is None:
        return None
    return df.values(key) if isinstance(df, Columns) else df[key]


def num(df: pd.DataFrame, name: str, default: float = np.nan) -> np.ndarray:
    """A numeric column as floats (a 0-d array when the column is absent: it broadcasts)."""
    col = _values(df, name)
    if col is None:
        return np.array(default, dtype=float)
    if isinstance(col.dtype, np.dtype) and col.dtype.kind in "biuf":
        out = np.asarray(col, dtype=float)
    else:
        out = pd.to_numeric(pd.Series(col, copy=False), errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    if not np.isnan(default):
        out = np.where(np.isnan(out), default, out)
    return out


def mapped(df: pd.DataFrame, name: str, fn: Callable[[Any], Any], dtype=float) -> np.ndarray:
    """``fn`` applied to each distinct value of a column (fast on millions of rows)."""
    col = _values(df, name)
    if col is None:
        return np.array(fn(None), dtype=dtype)  # 0-d: broadcasts
    if isinstance(col.dtype, pd.CategoricalDtype):  # codes already made: fn on the categories in the rows' range
        cat = col.array if isinstance(col, pd.Series) else col
        codes, categories = cat.codes, cat.categories
        lo, hi = (int(codes.min()), int(codes.max())) if len(codes) else (0, -1)
        table = np.array([fn(u) if lo <= i <= hi else fn(None) for i, u in enumerate(categories)] + [fn(None)],
                         dtype=dtype)
        return np.take(table, codes)
    codes, uniques = pd.factorize(col, use_na_sentinel=True)
    table = np.array([fn(u) for u in uniques] + [fn(None)], dtype=dtype)
    return table[codes]  # code -1 picks the last entry: fn(None)


def coded(df: pd.DataFrame, name: str, normalise: Callable[[Any], str], vocab: tuple[str, ...]) -> np.ndarray:
    """A categorical column as small-int codes into ``vocab`` (normalised per distinct value)."""
    return mapped(df, name, lambda v: vocab.index(normalise(v)), dtype=np.int8)


def is_code(codes: np.ndarray, vocab: tuple[str, ...], *values: str) -> np.ndarray:
    """Mask of the rows whose code is one of ``values``."""
    mask = codes == vocab.index(values[0])
    for v in values[1:]:
        mask |= codes == vocab.index(v)
    return mask


def trait(codes: np.ndarray, name: str) -> np.ndarray:
    """What each row's framework declares of trait ``name`` of its :class:`~perfzoo.frameworks.Physics`
    (``codes``: the ``framework`` column coded into :data:`perfzoo.records.vocabulary.FRAMEWORKS`, the
    registry's order): the cost model branches on traits, never on a framework's name.

    >>> codes = np.arange(len(REGISTRY))  # a row of each framework, in the registry's order
    >>> trait(codes, "fa2_attention").tolist() == [f.physics.fa2_attention for f in REGISTRY.values()]
    True
    """
    return np.array([getattr(f.physics, name) for f in REGISTRY.values()])[codes]


def full(values: Any, n: int) -> np.ndarray:
    """``values`` (an array or a broadcastable 0-d array) as a fresh float array of length ``n``."""
    values = np.asarray(values, dtype=float)
    return values.copy() if values.shape == (n,) else np.array(np.broadcast_to(values, (n,)), dtype=float)


def broadcast(values: Any, n: int) -> np.ndarray:
    """``values`` as a float array of length ``n`` without copying: a length-1 or 0-d array becomes
    a read-only view that repeats its one value (so an estimate that every row shares costs nothing)."""
    return np.broadcast_to(np.asarray(values, dtype=float), (n,))


def compact(values: np.ndarray) -> np.ndarray:
    """A :func:`broadcast` view as its one value (length 1, it broadcasts back), other arrays as they are."""
    return values[:1] if values.ndim == 1 and len(values) > 1 and values.strides == (0,) else values


def wrap(values: np.ndarray, df: pd.DataFrame, scalar: bool):
    """One estimate as a float (one config) or a Series aligned with ``df``."""
    values = full(values, len(df))
    return float(values[0]) if scalar else pd.Series(values, index=df.index)


def wrap_frame(cols: dict[str, np.ndarray], df: pd.DataFrame, scalar: bool):
    """Several estimates as a dict of floats (one config) or a DataFrame aligned with ``df`` (which
    copies the columns into its own block, so they are only broadcast here)."""
    cols = {k: broadcast(v, len(df)) for k, v in cols.items()}
    if scalar:
        return {k: float(v[0]) for k, v in cols.items()}
    return pd.DataFrame(cols, index=df.index)
