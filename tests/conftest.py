"""Shared fixtures: the real external data, and helpers that write small CSVs in tmp dirs."""

import csv
from pathlib import Path

import pytest

from perfzoo.datasets import external_data_dir
from perfzoo.external import PUBLISHED_COLUMNS


@pytest.fixture(scope="session")
def external() -> Path:
    """The external-data directory (``$PERFZOO_EXTERNAL_DATA`` or ../shared/external)."""
    directory = external_data_dir()
    assert (directory / "SOURCES.md").is_file(), f"the external data is missing from {directory}"
    return directory


@pytest.fixture
def write_published():
    """``write_published(path, rows)``: a published-table CSV whose rows are dicts of cells."""

    def write(path: Path, rows: list[dict]) -> Path:
        with open(path, "w", newline="", encoding="utf-8") as f:
            writer = csv.DictWriter(f, fieldnames=PUBLISHED_COLUMNS)
            writer.writeheader()
            writer.writerows(rows)
        return path

    return write
