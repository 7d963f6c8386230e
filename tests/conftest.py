"""Shared fixtures: the real external data, a small synthetic stand-in, and helpers that write
small CSVs in tmp dirs.

Test tiers. Tests that read the real public tables (``../shared/external``, or
``$PERFZOO_EXTERNAL_DATA``) are marked ``external``: by ``@pytest.mark.external``, or
automatically when they ask for the :func:`external` fixture, directly or through another
fixture. The test session runs with ``$PERFZOO_EXTERNAL_DATA`` pointing at a folder that does not
exist; only marked tests see the real directory (and fixtures, which are set up before that,
through the ``external`` fixture). So a test that reads the tables without the mark fails
wherever it runs, and ``pytest -m "not slow and not external"`` needs no external data at all. Loader tests that only
need *a* table in some layout use the synthetic files of ``tests/data/external`` (:func:`synthetic`).
"""

import csv
import os
from pathlib import Path

import pytest

from perfzoo.datasets import ENV_EXTERNAL, external_data_dir
from perfzoo.sources.published import PUBLISHED_COLUMNS

SYNTHETIC = Path(__file__).parent / "data" / "external"
EXTERNAL_DIR = external_data_dir()  # read before the session hides it
# what the session sees as the external-data directory: absent, and saying why in any error
HIDDEN = Path(__file__).parent / "data" / "no-external-data-here-mark-the-test-external"


def pytest_configure(config):
    os.environ[ENV_EXTERNAL] = str(HIDDEN)


def pytest_collection_modifyitems(items):
    for item in items:
        if "external" in item.fixturenames:
            item.add_marker(pytest.mark.external)


@pytest.fixture(autouse=True)
def _external_data_where_marked(request, monkeypatch):
    if request.node.get_closest_marker("external") is not None:
        monkeypatch.setenv(ENV_EXTERNAL, str(EXTERNAL_DIR))


@pytest.fixture(scope="session")
def external() -> Path:
    """The external-data directory (``$PERFZOO_EXTERNAL_DATA`` or ../shared/external, as the
    session found it); a test asking for it, directly or through a fixture, is marked ``external``."""
    assert (EXTERNAL_DIR / "SOURCES.md").is_file(), f"the external data is missing from {EXTERNAL_DIR}"
    return EXTERNAL_DIR


@pytest.fixture(scope="session")
def synthetic() -> Path:
    """``tests/data/external``: a few made-up rows in each CSV layout and an architecture table
    (``lab_benchmarks.csv``, published-table; ``vtrain_sample.csv``, vTrain; ``model_architectures.csv``)."""
    return SYNTHETIC


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
