"""Dataset sources: one :class:`Source` per layout of dataset files, in one registry.

A source recognises its layout (:meth:`Source.detect`), reads files into job records with a
load report per file where it keeps one (:meth:`Source.read`), and names the target, scale
and group columns a dataset in its layout gets by default (:meth:`Source.metadata`).
:mod:`perfzoo.datasets` finds every dataset through :data:`SOURCES`.

>>> [source.name for source in SOURCES.values()]
['store', 'vtrain', 'published', 'runs']
>>> from perfzoo.datasets import external_data_dir
>>> detect(external_data_dir() / "torchtitan_benchmarks.csv").name
'published'

Sources (:data:`SOURCES`, in the order :func:`detect` asks them)
-----------------------------------------------------------------
``store``      a record-store folder (:mod:`perfzoo.datasets.sources.store`), or its ``records.jsonl``
``vtrain``     the vTrain ground-truth CSV (:mod:`perfzoo.datasets.sources.vtrain`)
``published``  the published-table CSV of ``SOURCES.md`` (:mod:`perfzoo.datasets.sources.published`)
``runs``       a user's measured runs in the keys ``predict`` takes (:mod:`perfzoo.datasets.sources.runs`)

A new CSV layout is one module (a :class:`CsvSource` subclass: ``name``, ``title``,
``describe``, ``columns``, the default columns and ``read``) and one line in :data:`SOURCES`.
"""

from __future__ import annotations

from pathlib import Path

from perfzoo.console import DataError
from perfzoo.datasets.sources._base import Load, LoadReport, Source, file_dataset_name
from perfzoo.datasets.sources._csv import CsvSource, header
from perfzoo.datasets.sources._llm import config_key
from perfzoo.datasets.sources.published import PublishedSource, read_architectures, read_published
from perfzoo.datasets.sources.runs import RunsSource
from perfzoo.datasets.sources.store import RecordStoreSource
from perfzoo.datasets.sources.vtrain import VTrainSource, read_vtrain

SOURCES: dict[str, Source] = {
    source.name: source
    for source in (RecordStoreSource(), VTrainSource(), PublishedSource(), RunsSource())
}


def detect(path: Path) -> Source:
    """The source whose layout ``path`` is in, asking :data:`SOURCES` in order.

    Raises :class:`DataError` naming the layouts perfzoo reads when none claims the path (or
    the file cannot be read at all: empty, not CSV).
    """
    for source in SOURCES.values():
        if source.detect(path):
            return source
    csv = [source for source in SOURCES.values() if isinstance(source, CsvSource)]
    if path.suffix.lower() == ".csv":
        found = header(path)
        layouts = [source.describe for source in csv]
        listed = f"{', '.join(layouts[:-1])} and {layouts[-1]}" if len(layouts) > 1 else layouts[0]
        raise DataError(f"{path}: not a known CSV layout (header: {', '.join(found)}). perfzoo reads {listed}")
    others = [source.describe for source in SOURCES.values() if source not in csv]
    raise DataError(f"{path}: not a dataset perfzoo can read; give a .csv file "
                    f"({' or '.join(source.title for source in csv)} layout), {', '.join(others)}")


def get(name: str) -> Source:
    """The source registered under ``name``."""
    try:
        return SOURCES[name]
    except KeyError:
        raise KeyError(f"unknown source {name!r}; registered: {', '.join(SOURCES)}") from None


__all__ = ["SOURCES", "DataError", "Load", "LoadReport", "Source", "CsvSource", "detect", "get",
           "file_dataset_name", "config_key", "read_vtrain", "read_published", "read_architectures",
           "VTrainSource", "PublishedSource", "RecordStoreSource", "RunsSource"]
