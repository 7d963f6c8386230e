"""Search configurations with a predictor: REINFORCE (the CubicML searcher) and baselines.

Every searcher takes a space (a :class:`~perfzoo.spaces.Space` or its name), any predictor
(``predict(X)`` on a DataFrame of ``config.*`` columns, higher = faster; or a plain callable),
an optional ``failure`` predictor (reward = predicted throughput x P(success)), ``top_k`` and
``exclude`` (configs already measured), and returns a :class:`SearchResult`: the top-k
distinct configs not yet measured, with predicted value, std where the predictor has one,
and P(success).

==================  ======================================================================
:func:`reinforce`   REINFORCE, one categorical per decision, Adam lr 0.01, batch 30,
                    2,000 samples per restart, 3 restarts pooled (the paper's settings)
:func:`exhaustive`  every valid config, vectorised and chunked (``fsdp-ads``: 8.0M configs)
:func:`random_search`  the best of N random configs (or plain random configs: no predictor)
:func:`tpe`         Optuna TPE on the same reward (``pip install perfzoo[search]``)
==================  ======================================================================

>>> from perfzoo import search, zoo                               # doctest: +SKIP
>>> predictor = zoo.load_best("fsdp-cpu")                         # doctest: +SKIP
>>> result = search.reinforce("fsdp-ads", predictor, top_k=50)    # doctest: +SKIP
>>> result.write_jsonl("proposals.jsonl")                         # doctest: +SKIP

The closed loop (random jobs -> fit -> search -> launch -> refit) is :mod:`perfzoo.search.loop`
(``python -m perfzoo.tune``); the command line is ``python -m perfzoo.search`` (:func:`main`).
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

from perfzoo.search.baselines import random_search, tpe
from perfzoo.search.encoding import SpaceCodec
from perfzoo.search.exhaustive import exhaustive
from perfzoo.search.objective import Objective, SearchResult, exclude_keys
from perfzoo.search.reinforce import reinforce

SEARCHERS = {"reinforce": reinforce, "exhaustive": exhaustive, "random": random_search, "tpe": tpe}


def search(method: str, space: Any, predictor: Any = None, top_k: int = 50, **kwargs) -> SearchResult:
    """Run the searcher called ``method`` (one of :data:`SEARCHERS`)."""
    if method not in SEARCHERS:
        raise ValueError(f"unknown searcher {method!r}; choose one of {sorted(SEARCHERS)}")
    return SEARCHERS[method](space, predictor, top_k, **kwargs)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """``python -m perfzoo.search`` (see :mod:`perfzoo.search.cli`); returns the exit status."""
    from perfzoo.search.cli import main as _main

    return _main(argv)


__all__ = ["reinforce", "exhaustive", "random_search", "tpe", "search", "SEARCHERS", "SearchResult",
           "Objective", "SpaceCodec", "exclude_keys", "main"]
