"""What the commands feed a predictor or a launcher: configs read from files, and the columns a
fitted predictor reads.

One reader for every command that takes configs from a file (collect's ``--configs``, predict's
``--configs``, tune's ``--baseline``): a JSON file holding one config (or a list of them), a
JSONL file of configs or of the searcher's ``{"config": {...}}`` lines, or a CSV with one config
per row (blank cells left out). A mistake names the file, the line and the fix.

>>> import tempfile
>>> f = tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False)
>>> _ = f.write('{"config": {"tp": 8}}\\n# a comment\\n{"tp": 4}\\n'); f.close()
>>> [(where.split()[-2:], cfg) for where, cfg in read_located(f.name)]
[(['line', '1'], {'tp': 8}), (['line', '3'], {'tp': 4})]
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any, Optional

import numpy as np
import pandas as pd

from perfzoo._cli import UsageError


def read_text(path: str | Path, what: str) -> str:
    """The text of the file at ``path`` (UTF-8); one that is not text is a :class:`UsageError`
    naming it (``what``: the flag or role it was given as) and the first byte that is not.

    >>> import tempfile
    >>> f = tempfile.NamedTemporaryFile("wb", suffix=".csv", delete=False); _ = f.write(b"tp\\n\\xff\\n"); f.close()
    >>> read_text(f.name, "--configs")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    perfzoo._cli.UsageError: --configs /...csv: not UTF-8 text (byte 3 is 0xff); save it as UTF-8
    """
    raw = Path(path).read_bytes()
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(f"{what} {path}: not UTF-8 text (byte {exc.start} is 0x{raw[exc.start]:02x}); save it as "
                         "UTF-8") from None


def read_located(path: str, flag: str = "--configs") -> list[tuple[str, dict]]:
    """``[(where, config)]`` from ``path`` (see the module docstring); ``where`` names the file and
    its line (``FILE line 3``, ``FILE row 2`` of a CSV). A :class:`UsageError` names what is wrong."""
    p = Path(path)
    if not p.is_file():
        raise UsageError(f"{flag} {path}: no such file")
    if p.suffix.lower() == ".csv":
        rows = pd.read_csv(io.StringIO(read_text(p, flag))).to_dict("records")
        out = [(f"{path} row {i}", {k: v for k, v in row.items() if not (isinstance(v, float) and np.isnan(v))})
               for i, row in enumerate(rows, 1)]
    else:
        out = _json_configs(p, path, flag)
    if not out:
        raise UsageError(f"{flag} {path}: the file holds no configs")
    return out


def read_configs(path: str, flag: str = "--configs") -> list[dict]:
    """The configs in ``path`` (:func:`read_located` without the places)."""
    return [cfg for _, cfg in read_located(path, flag)]


def _json_configs(p: Path, path: str, flag: str) -> list[tuple[str, dict]]:
    text = read_text(p, flag)
    try:  # one JSON document: a config (pretty-printed or not), or a list of them
        whole = json.loads(text)
    except json.JSONDecodeError:
        whole = None
    if isinstance(whole, list):
        return [(f"{path} item {i}", _config(obj, f"{path} item {i}")) for i, obj in enumerate(whole, 1)]
    if isinstance(whole, dict):
        return [(f"{path} line 1", _config(whole, f"{path} line 1"))]
    out = []
    for i, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        where = f"{path} line {i}"
        try:
            obj = json.loads(s)
        except json.JSONDecodeError as exc:
            raise UsageError(f"{where}: not valid JSON ({exc.msg} at column {exc.colno})") from None
        out.append((where, _config(obj, where)))
    return out


def _config(obj: Any, where: str) -> dict:
    if isinstance(obj, dict) and isinstance(obj.get("config"), dict):
        obj = obj["config"]
    if not isinstance(obj, dict):
        raise UsageError(f"{where}: expected a JSON object of knobs or {{\"config\": {{...}}}}")
    return obj


def input_columns(model: Any) -> Optional[list[str]]:
    """The columns a fitted zoo predictor was trained on (its ``input_columns_``; None for a
    model without them, e.g. a :class:`~perfzoo.search.Formula`).

    >>> input_columns(object()) is None
    True
    """
    cols = getattr(model, "input_columns_", None)
    return None if cols is None else [str(c) for c in cols]


__all__ = ["input_columns", "read_configs", "read_located"]
