"""The source interface: one layout of dataset files, how to recognise it and read it.

A :class:`Source` knows one layout (the vTrain CSV, the published-table CSV, a record store).
:meth:`Source.detect` says whether a path is in it; :meth:`Source.read` turns files into job
records and, where the reader keeps one, a :class:`LoadReport` per file; :meth:`Source.metadata`
gives the :meth:`perfzoo.datasets.dataset.Dataset.from_records` keywords a dataset read from those files
gets: the layout's default target, unit, scale and group columns (class attributes; None:
inferred from the frame), a name and provenance. :class:`perfzoo.datasets.sources._csv.CsvSource`
detects a CSV layout by its header, so a CSV layout is its columns, a reader and its defaults.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, NamedTuple, Optional, Sequence

import pandas as pd

from perfzoo.records import JobRecord


@dataclass
class LoadReport:
    """What reading one published-table file did with each of its rows.

    Every row is exactly one of ``labelled`` (a tokens/s target, published or derived),
    ``unlabelled`` (a configuration without a usable target: kept for prediction, left out of
    scoring), ``oom`` or ``skipped`` (cannot be a job: no GPU count, no accelerator; each with
    its line and reason). ``derived`` counts what was computed rather than read, by kind;
    ``superseded`` counts rows a later document version replaced; ``null_cells`` and
    ``unreadable_cells`` count, per column, cells read as unknown. ``derivation_check`` is the
    median of derived / published tokens/s over the rows that publish both (None without).
    ``undated`` lists the lines of rows kept without a date (left out of temporal splits only);
    ``contradictions`` the rows kept as published whose layout or batch contradict themselves (by
    the rules ``predict`` checks a config with, :func:`perfzoo.llmconfig.check`), each with its
    line and the rule.
    """

    file: str
    rows: int = 0
    labelled: int = 0
    unlabelled: int = 0
    oom: int = 0
    superseded: int = 0
    derived: Counter = field(default_factory=Counter)
    skipped: list[tuple[int, str]] = field(default_factory=list)
    null_cells: Counter = field(default_factory=Counter)
    unreadable_cells: Counter = field(default_factory=Counter)
    flop_convention: str = ""
    undated: list[int] = field(default_factory=list)
    contradictions: list[tuple[int, str]] = field(default_factory=list)
    derivation_ratios: list[float] = field(default_factory=list, repr=False)

    @property
    def derivation_check(self) -> Optional[float]:
        return float(pd.Series(self.derivation_ratios).median()) if self.derivation_ratios else None

    def to_dict(self) -> dict:
        """JSON-ready counts (``skipped`` as ``{line: reason}``)."""
        return {"file": self.file, "rows": self.rows, "labelled": self.labelled,
                "unlabelled": self.unlabelled, "oom": self.oom, "skipped": len(self.skipped),
                "superseded": self.superseded, "derived": dict(self.derived),
                "skipped_rows": {str(line): why for line, why in self.skipped},
                "null_cells": dict(self.null_cells), "unreadable_cells": dict(self.unreadable_cells),
                "flop_convention": self.flop_convention, "derivation_check": self.derivation_check,
                "undated_lines": list(self.undated),
                "contradicting_rows": {str(line): why for line, why in self.contradictions}}

    def __str__(self) -> str:
        parts = [f"{self.file}: {self.rows} rows read: {self.labelled} labelled "
                 f"({sum(v for k, v in self.derived.items() if k.startswith('tokens/s'))} of them derived), "
                 f"{self.unlabelled} unlabelled, {self.oom} OOM, {len(self.skipped)} skipped; "
                 f"{self.superseded} superseded variants"]
        if self.derived:
            parts.append("derived: " + ", ".join(f"{k} {v}" for k, v in sorted(self.derived.items())))
        if self.flop_convention:
            parts.append(f"FLOP convention: {self.flop_convention}")
        if self.derivation_check is not None:
            parts.append(f"derived/published tokens/s on rows giving both: median {self.derivation_check:.3f}")
        for line, why in self.skipped:
            parts.append(f"skipped line {line}: {why}")
        for line, why in self.contradictions:
            parts.append(f"kept as published, though it contradicts itself: line {line}: {why}")
        if self.undated:
            parts.append(f"no date, kept (left out of temporal splits): {len(self.undated)} rows, lines "
                         f"{_lines(self.undated)}")
        if self.null_cells:
            parts.append("read as unknown: " + ", ".join(f"{c} {n}" for c, n in sorted(self.null_cells.items())))
        if self.unreadable_cells:
            parts.append("not numbers, kept as text only: " + ", ".join(
                f"{c} {n}" for c, n in sorted(self.unreadable_cells.items())))
        return "\n  ".join(parts)


def _lines(lines: Sequence[int], shown: int = 10) -> str:
    """``2, 3, 5`` (the first ``shown``, then how many more)."""
    more = f" and {len(lines) - shown} more" if len(lines) > shown else ""
    return ", ".join(map(str, lines[:shown])) + more


class Load(NamedTuple):
    """What a source read: the job records, and one :class:`LoadReport` per file where it keeps one."""

    records: list[JobRecord]
    reports: list[LoadReport]


class Source(ABC):
    """One layout of dataset files. Subclasses set ``name``, ``title`` and ``describe`` and
    implement :meth:`detect` and :meth:`read`; the default columns are optional."""

    name: ClassVar[str]  # the registry key ("vtrain")
    title: ClassVar[str]  # the layout in messages ("vTrain")
    describe: ClassVar[str]  # what a file in the layout looks like, for the message naming every layout
    target: ClassVar[Optional[str]] = None
    target_unit: ClassVar[Optional[str]] = None
    scale_column: ClassVar[Optional[str]] = None
    group_columns: ClassVar[Optional[tuple[str, ...]]] = None

    @abstractmethod
    def detect(self, path: Path) -> bool:
        """Whether ``path`` is in this layout (raises :class:`DataError` for a file no layout can read)."""

    @abstractmethod
    def read(self, paths: Sequence[Path]) -> Load:
        """The job records of ``paths`` (files in this layout), with their load reports."""

    def metadata(self, paths: Sequence[Path]) -> dict[str, Any]:
        """:meth:`~perfzoo.datasets.dataset.Dataset.from_records` keywords for a dataset read from
        ``paths``: ``name``, ``provenance`` and the default columns this layout sets."""
        columns = {"target": self.target, "target_unit": self.target_unit,
                   "scale_column": self.scale_column, "group_columns": self.group_columns}
        return {"name": file_dataset_name(paths[0]),
                "provenance": f"{', '.join(map(str, paths))} ({self.name} layout, read in place)",
                **{key: value for key, value in columns.items() if value is not None}}


def file_dataset_name(path: Path) -> str:
    """The name a file is listed under: its stem, underscores as hyphens.

    >>> file_dataset_name(Path("megatron_runs.csv"))
    'megatron-runs'
    """
    return path.stem.replace("_", "-")
