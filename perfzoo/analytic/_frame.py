"""Column access for the cost models: a flat frame of configs in, float arrays out.

A column is found as ``config.<key>``, ``<key>`` or ``hardware.<key>``; an absent column is a
0-d array that broadcasts, so a cost model never branches on which columns a frame has.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Optional, Union

import numpy as np
import pandas as pd

Frame = Union[pd.DataFrame, Mapping[str, Any]]

GIB = float(2**30)


def as_frame(cfg: Frame) -> tuple[pd.DataFrame, bool]:
    """``(frame, scalar)``: one config (a mapping) becomes a one-row frame and ``scalar=True``."""
    if isinstance(cfg, pd.DataFrame):
        return cfg, False
    if isinstance(cfg, Mapping):
        return pd.DataFrame([dict(cfg)]), True
    raise TypeError(f"expected a DataFrame of configs or one config as a dict, got {type(cfg).__name__}")


def column(df: pd.DataFrame, name: str) -> Optional[pd.Series]:
    for key in (f"config.{name}", name, f"hardware.{name}"):
        if key in df.columns:
            return df[key]
    return None


def num(df: pd.DataFrame, name: str, default: float = np.nan) -> np.ndarray:
    """A numeric column as floats (a 0-d array when the column is absent: it broadcasts)."""
    col = column(df, name)
    if col is None:
        return np.array(default, dtype=float)
    if col.dtype == bool:
        out = col.to_numpy(dtype=float)
    else:
        out = pd.to_numeric(col, errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    if not np.isnan(default):
        out = np.where(np.isnan(out), default, out)
    return out


def mapped(df: pd.DataFrame, name: str, fn: Callable[[Any], Any], dtype=float) -> np.ndarray:
    """``fn`` applied to each distinct value of a column (fast on millions of rows)."""
    col = column(df, name)
    if col is None:
        return np.array(fn(None), dtype=dtype)  # 0-d: broadcasts
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


def full(values: Any, n: int) -> np.ndarray:
    """``values`` (an array or a broadcastable 0-d array) as a fresh float array of length ``n``."""
    values = np.asarray(values, dtype=float)
    return values.copy() if values.shape == (n,) else np.array(np.broadcast_to(values, (n,)), dtype=float)


def wrap(values: np.ndarray, df: pd.DataFrame, scalar: bool):
    """One estimate as a float (one config) or a Series aligned with ``df``."""
    values = full(values, len(df))
    return float(values[0]) if scalar else pd.Series(values, index=df.index)


def wrap_frame(cols: dict[str, np.ndarray], df: pd.DataFrame, scalar: bool):
    """Several estimates as a dict of floats (one config) or a DataFrame aligned with ``df`` (which
    copies the columns into its own block, so they are only broadcast here)."""
    cols = {k: np.broadcast_to(np.asarray(v, dtype=float), (len(df),)) for k, v in cols.items()}
    if scalar:
        return {k: float(v[0]) for k, v in cols.items()}
    return pd.DataFrame(cols, index=df.index)
