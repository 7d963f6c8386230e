"""Knob values as typed columns, the way :class:`~perfzoo.spaces.codec.SpaceCodec` hands them to
a predictor: numbers as int or float arrays (None as NaN), text, bools and mixtures as codes into
their categories (pandas Categoricals whose dtype is made once per list of categories), one value
as a column of length 1 that broadcasts.

>>> column_array([4, 8, 16])[0], column_array([0.5, None])[0], column_array(["bf16", "fp8", "bf16"])
('int', 'float', ('cat', (['bf16', 'fp8'], array([0, 1, 0], dtype=int8))))
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np
import pandas as pd


def numeric_kind(vals: list) -> Optional[str]:
    """``'int'`` (integers, no None), ``'float'`` (numbers, None allowed) or None (anything else:
    text, bools, mixtures, or only None)."""
    plain = [v for v in vals if v is not None]
    if not plain or not all(isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))
                            for v in plain):
        return None
    return "int" if len(plain) == len(vals) and all(isinstance(v, (int, np.integer)) for v in plain) else "float"


def floats(vals: list) -> np.ndarray:
    """Numbers as a float array, None as NaN."""
    return np.array([np.nan if v is None else float(v) for v in vals], dtype=float)


def column_array(values: Sequence[Any]) -> tuple[str, Any]:
    """How a list of knob values becomes a column: ``('int', array)``, ``('float', array)``
    (None -> NaN) or ``('cat', (categories, code_of_value))`` for text / bools / mixtures."""
    vals = list(values)
    kind = numeric_kind(vals)
    if kind == "int":
        return "int", np.array(vals, dtype=np.int64)
    if kind == "float":
        return "float", floats(vals)
    plain = [v for v in vals if v is not None]
    cats: list[Any] = []
    for v in plain:
        if not any(type(v) is type(c) and v == c for c in cats):
            cats.append(v)
    codes = np.array([-1 if v is None else next(i for i, c in enumerate(cats) if type(v) is type(c) and v == c)
                      for v in vals], dtype=codes_dtype(len(cats)))
    return "cat", (cats, codes)


def codes_dtype(n: int) -> type:
    """The integer type pandas keeps a Categorical's codes in (so looking them up makes no copy)."""
    return np.int8 if n < 127 else np.int16 if n < 32767 else np.int32


_DTYPES: dict = {}


def categorical(cats: list, codes: np.ndarray) -> pd.Categorical:
    """A Categorical of ``codes`` into ``cats``, its dtype made once per list of categories."""
    key = tuple((type(c).__name__, c) for c in cats)
    dtype = _DTYPES.get(key)
    if dtype is None:
        dtype = _DTYPES[key] = pd.CategoricalDtype(pd.Index(cats, dtype=object))
    return pd.Categorical.from_codes(codes, dtype=dtype, validate=False)  # codes from the codec's own tables


def objects(values: pd.Categorical) -> np.ndarray:
    """A Categorical as an object array of its values (None where missing), like a dataset's column."""
    table = np.array(list(values.categories) + [None], dtype=object)
    return table[np.where(values.codes < 0, len(values.categories), values.codes)]


def constant_column(value: Any):
    """One value as a column of length 1 (it broadcasts: see :class:`~perfzoo.records.columns.Columns`)."""
    if value is None:
        return np.array([None], dtype=object)
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        return np.array([value], dtype=np.int64)
    if isinstance(value, (float, np.floating)):
        return np.array([value], dtype=float)
    return categorical([value], np.zeros(1, dtype=np.int64))


def derived_column(table: np.ndarray) -> tuple[str, Any]:
    """A derived key's value table as ``('num', table)`` or ``('cat', (categories, code table))``."""
    if table.dtype != object:
        return "num", table
    kind, spec = column_array(table.reshape(-1).tolist())
    if kind != "cat":
        return "num", spec.reshape(table.shape)
    cats, codes = spec
    return "cat", (cats, codes.reshape(table.shape))


def as_column(vals: np.ndarray):
    """Object array of derived values -> int / float array where they are all numbers."""
    kind = numeric_kind(vals.tolist())
    if kind == "int":
        return vals.astype(np.int64)
    return floats(vals.tolist()) if kind == "float" else vals


__all__ = ["as_column", "categorical", "codes_dtype", "column_array", "constant_column", "derived_column", "floats",
           "numeric_kind", "objects"]
