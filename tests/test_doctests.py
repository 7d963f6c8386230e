"""The examples in the package's docstrings run and print what they say (``python -m pytest
--doctest-modules perfzoo harness`` does the same)."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import harness
import perfzoo


# modules whose examples load the public tables of ../shared/external (the `external` tier)
READ_EXTERNAL = {"perfzoo.datasets.dataset", "perfzoo.datasets.registry", "perfzoo.evaluation.tasks",
                 "perfzoo.datasets.sources", "perfzoo.datasets.sources.published", "perfzoo.datasets.sources.vtrain"}


def _modules() -> list:
    names = []
    for package in (perfzoo, harness):
        names.append(package.__name__)
        names += [info.name for info in pkgutil.walk_packages(package.__path__, package.__name__ + ".")
                  if not info.name.endswith("__main__")]
    return [pytest.param(n, marks=pytest.mark.external) if n in READ_EXTERNAL else n for n in names]


@pytest.mark.parametrize("name", _modules())
def test_docstring_examples_run(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} docstring examples in {name} failed (run pytest --doctest-modules {module.__file__})"
