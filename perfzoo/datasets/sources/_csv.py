"""Reading CSV text: cells as text, null spellings, numbers with comments, typed rows whose
errors name the file, line, column and value; :class:`CsvSource`, a layout known by its header.

Readers only read: nothing is ever written next to the data.
"""

from __future__ import annotations

import functools
import re
from datetime import datetime, timezone
from pathlib import Path
from typing import ClassVar, Iterable, Optional, Sequence, Union

import pandas as pd

from perfzoo.console import DataError
from perfzoo.datasets.sources._base import Source
from perfzoo.records.vocabulary import CATEGORICAL_RULES, phrase_rules


def read_table(path: Path, what: str, header_only: bool = False) -> pd.DataFrame:
    """Every cell of a CSV as text ('' when blank), header stripped, byte-order mark dropped.

    ``what`` names the layout in error messages. Raises :class:`DataError` for an empty file,
    a file with a header but no rows, or text that is not CSV; ``FileNotFoundError`` and
    ``PermissionError`` name the path. ``header_only`` reads just the header line.
    """
    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False, encoding="utf-8-sig",
                            skipinitialspace=True, nrows=0 if header_only else None)
    except FileNotFoundError:
        raise FileNotFoundError(f"{path}: no such file") from None
    except PermissionError:
        raise PermissionError(f"{path}: not readable (permission denied); check its permissions") from None
    except IsADirectoryError:
        raise DataError(f"{path}: is a directory, expected a {what} CSV file") from None
    except pd.errors.EmptyDataError:
        raise DataError(f"{path}: the file is empty; a {what} CSV needs a header line and rows") from None
    except (pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise DataError(f"{path}: not a readable CSV file ({str(exc).strip()})") from None
    frame.columns = [str(c).strip() for c in frame.columns]
    if frame.empty and not header_only:
        raise DataError(f"{path}: has a header but no rows; a {what} CSV needs at least one row")
    return frame


def header(path: Path, what: str = "data") -> tuple[str, ...]:
    """The header of the CSV at ``path`` (:func:`read_table`'s, ``header_only``), read once per version
    of the file however many layouts ask (its size and modification time key it); the errors are
    :func:`read_table`'s."""
    try:
        stat = Path(path).stat()
    except OSError:
        return tuple(read_table(path, what, header_only=True).columns)  # the error names the path
    return _header(str(path), stat.st_size, stat.st_mtime_ns, what)


@functools.lru_cache(maxsize=256)
def _header(path: str, size: int, mtime_ns: int, what: str) -> tuple[str, ...]:
    return tuple(read_table(Path(path), what, header_only=True).columns)


class CsvSource(Source):
    """A CSV layout, recognised by its header: a ``.csv`` file whose header holds at least half
    of :attr:`columns`. An unreadable ``.csv`` (empty, not CSV) raises :class:`DataError`."""

    columns: ClassVar[tuple[str, ...]]

    def detect(self, path: Path) -> bool:
        if path.suffix.lower() != ".csv":
            return False
        found = header(path)
        return sum(c in found for c in self.columns) / len(self.columns) >= 0.5


def require_columns(frame: pd.DataFrame, path: Path, required: Sequence[str], what: str) -> None:
    """Raise :class:`DataError` naming every required column the file lacks."""
    missing = [c for c in required if c not in frame.columns]
    if missing:
        raise DataError(
            f"{path}: missing column{'s' if len(missing) > 1 else ''} "
            f"{', '.join(repr(c) for c in missing)}; the {what} layout needs the columns "
            f"{', '.join(required)}")


# Spellings of "unknown" that published tables use; such a cell reads as blank. ``none`` is
# not among them for categorical columns (activation checkpointing "none" is a value).
NULL_SPELLINGS = frozenset({"", "n/a", "na", "n.a.", "nan", "null", "-", "--", "\u2014", "\u2013", "?",
                            "unknown", "tbd", "not stated", "not available", "not reported"})
NUMERIC_NULL_SPELLINGS = NULL_SPELLINGS | {"none"}


def is_null(text: Optional[str], numeric: bool = False) -> bool:
    """True when a cell's text spells an unknown value (blank, ``n/a``, ``N/A``, ``-``, ``\u2014``, ...).

    >>> [is_null(t) for t in ("", " N/A ", "\u2014", "none", "8")], is_null("none", numeric=True)
    ([True, True, True, False, False], True)
    """
    return (text or "").strip().lower() in (NUMERIC_NULL_SPELLINGS if numeric else NULL_SPELLINGS)


# a number, its thousands optionally grouped by commas (1,639), then optionally a comment
_NUMBER = re.compile(r"\s*([-+]?(?:\d{1,3}(?:,\d{3})+(?:\.\d*)?|\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)"
                     r"(\s*\(.*\)|\s+[^\d\s].*)?\s*")


def split_number(text: str) -> tuple[Optional[float], str]:
    """``(number, comment)`` for a cell: a number optionally followed by a comment.

    A blank cell, or a null spelling (:func:`is_null`: ``n/a``, ``-``, ...), gives ``(None, '')``;
    text that does not start with a number raises ValueError. Commas group thousands (``1,639``);
    a comma anywhere else (``1,5``) is not a number.

    >>> split_number("256 (doc text also says 512)"), split_number("33.71"), split_number("n/a")
    ((256.0, '(doc text also says 512)'), (33.71, ''), (None, ''))
    >>> split_number("1,639 tok/s"), split_number("12,345.5")
    ((1639.0, 'tok/s'), (12345.5, ''))
    >>> split_number("fast")
    Traceback (most recent call last):
    ValueError: 'fast' is not a number
    """
    if is_null(text, numeric=True):
        return None, ""
    match = _NUMBER.fullmatch(text)
    if not match:
        raise ValueError(f"{text!r} is not a number")
    return float(match.group(1).replace(",", "")), (match.group(2) or "").strip()


class Row:
    """Typed access to the text cells of one CSV row; errors name file, line, column and value.

    Cells whose text was normalised (a number with a comment, a categorical spelling) are
    remembered in :attr:`raw`, so records keep the text they came from. Null spellings
    (:func:`is_null`) read as unknown and are listed in :attr:`nulls`; with ``lenient=True`` a
    cell that holds no number is unknown too, listed in :attr:`unreadable` (and kept in ``raw``).
    """

    def __init__(self, path: Path, line: int, cells: dict[str, str]):
        self.path, self.line, self.cells = path, line, cells
        self.raw: dict[str, str] = {}
        self.nulls: list[str] = []
        self.unreadable: list[str] = []

    @property
    def where(self) -> str:
        return f"{self.path}, line {self.line}"

    def error(self, column: str, problem: str) -> DataError:
        return DataError(f"{self.where}, column '{column}': {problem}")

    def _cell(self, column: str, numeric: bool) -> str:
        """The cell text, '' for a null spelling (noted in :attr:`nulls` unless blank)."""
        text = self.cells.get(column, "")
        if is_null(text, numeric):
            if text.strip():
                self.nulls.append(column)
            return ""
        return text

    def text(self, column: str) -> Optional[str]:
        """The stripped cell text, None when blank, absent or a null spelling."""
        return self._cell(column, numeric=False).strip() or None

    def number(self, column: str, whole: bool = False, required: bool = False,
               lenient: bool = False) -> Union[int, float, None]:
        """The cell as a number (int if ``whole``); None when unknown unless ``required``."""
        text = self._cell(column, numeric=True)
        kind = "a whole number" if whole else "a number"
        try:
            value, comment = split_number(text)
            if value is not None and whole and not value.is_integer():
                raise ValueError(text)
        except ValueError:
            if lenient and not required:
                self.unreadable.append(column)
                self.raw[column] = text.strip()
                return None
            raise self.error(column, f"{text!r} is not {kind}; fix the cell, or leave it blank "
                                     "for unknown") from None
        if value is None:
            if required:
                raise self.error(column, "is blank; every row needs a value here")
            return None
        if comment or "," in text:  # the text as published, where it was more than the number
            self.raw[column] = text.strip()
        return int(value) if whole else value

    def date(self, column: str) -> Optional[datetime]:
        """The cell as a date (``YYYY-MM-DD``, UTC where it names no zone); None where blank or
        where the row has no such column."""
        text = self.text(column) if column in self.cells else None
        if text is None:
            return None
        try:
            when = datetime.fromisoformat(text)
        except ValueError:
            raise self.error(column, f"{text!r} is not a date (expected YYYY-MM-DD)") from None
        return when if when.tzinfo else when.replace(tzinfo=timezone.utc)

    def category(self, column: str) -> object:
        """The cell mapped to the config vocabulary by :data:`perfzoo.records.vocabulary.CATEGORICAL_RULES`
        (None if no rule fits)."""
        text = self.text(column)
        if text is None:
            return None
        value = phrase_rules(text, CATEGORICAL_RULES[column])
        if str(value).lower() != text.lower():
            self.raw[column] = text
        return value


def iter_rows(frame: pd.DataFrame, path: Path) -> Iterable[Row]:
    """One :class:`Row` per data row; line numbers count the header as line 1."""
    for index, cells in enumerate(frame.to_dict("records")):
        yield Row(path, index + 2, cells)

