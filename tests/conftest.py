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

In parallel. The suite runs on one pytest-xdist worker per core and one more (``-n auto``,
``pyproject.toml``), so a job a test launches shares the machine with other tests: it does not wait for a quiet
machine (``$PERFZOO_QUIET_WAIT_S`` is 0; the protocol's own tests give ``--quiet-wait``), the
Slurm tests, which start one Slurm cluster and its munged, all run on one worker
(:class:`_SlurmTogether`), and the longest tests start first.
"""

import csv
import os
from pathlib import Path

import pytest
from xdist.scheduler import LoadScopeScheduling

from harness.environment import cpu_cores
from harness.protocol import QUIET_WAIT_ENV
from perfzoo.datasets import ENV_EXTERNAL, external_data_dir
from perfzoo.datasets.sources.published import PUBLISHED_COLUMNS

SYNTHETIC = Path(__file__).parent / "data" / "external"
# the real directory, read before the session hides it; pytest-xdist's workers inherit the hidden
# one from the session that starts them, and read the real one from _SEEN
_SEEN = "PERFZOO_TEST_EXTERNAL_DATA"
EXTERNAL_DIR = Path(os.environ[_SEEN]) if _SEEN in os.environ else external_data_dir()
# what the session sees as the external-data directory: absent, and saying why in any error
HIDDEN = Path(__file__).parent / "data" / "no-external-data-here-mark-the-test-external"
SLURM_FILE = "tests/test_slurm.py"  # its slurm-marked tests start the one Slurm cluster a machine can run


def pytest_configure(config):
    os.environ[_SEEN] = str(EXTERNAL_DIR)
    os.environ[ENV_EXTERNAL] = str(HIDDEN)
    os.environ[QUIET_WAIT_ENV] = "0"


def pytest_collection_modifyitems(items):
    for item in items:
        if "external" in item.fixturenames:
            item.add_marker(pytest.mark.external)
    # the longest first, so that no worker is left with one at the end: the Slurm tests (one worker
    # waits on Slurm's queue and time limits while the others go on), then the real launches
    items.sort(key=lambda item: (item.get_closest_marker("slurm") is None, item.get_closest_marker("slow") is None))


class _SlurmTogether(LoadScopeScheduling):
    """pytest-xdist's load scheduling, but every test of :data:`SLURM_FILE` on one worker: its
    cluster and munged are one per machine. (xdist's own ``--dist loadgroup`` reads ``xdist_group``
    marks into node ids that pytest 9.2 no longer takes.)"""

    def _split_scope(self, nodeid: str) -> str:
        return SLURM_FILE if nodeid.startswith(SLURM_FILE + "::") else nodeid


def pytest_xdist_make_scheduler(config, log):
    return _SlurmTogether(config, log) if config.getvalue("dist") == "load" else None


def pytest_xdist_auto_num_workers(config):
    """``-n auto``: a worker per core (at most 8: each holds torch and the zoo's libraries, ~1 GiB),
    and one more, since the Slurm tests' worker mostly waits on Slurm's queue."""
    return min(cpu_cores(), 8) + 1


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
