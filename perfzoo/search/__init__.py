"""Search configurations with a predictor: REINFORCE (the CubicML searcher) and baselines.

A searcher (:class:`Searcher`, as Optuna's ``BaseSampler``) is a small class holding its own
settings, with one method ``propose(objective, top_k, exclude)``: the :class:`Objective` scores
configs of a space with any predictor (``predict(X)``, higher = faster: a zoo predictor reads
the configs as :class:`~perfzoo.records.columns.Columns` of arrays, anything else as a DataFrame of
``config.*`` columns; or a plain callable) and an optional ``failure`` predictor (reward = predicted
throughput x P(success)); ``exclude`` holds the keys of configs already measured. It returns a
:class:`SearchResult`: the top-k distinct configs not yet measured, with predicted value, std
where the predictor has one, and P(success). :data:`SEARCHERS` registers them by name:

===================  =====================================================================
``reinforce``        :class:`Reinforce`: one categorical per decision, Adam lr 0.01, batch 30,
                     2,000 samples per restart, 3 restarts pooled (the paper's settings)
``exhaustive``       :class:`Exhaustive`: every valid config, vectorised and chunked
                     (``fsdp-ads``: 8.0M configs; ``n_jobs`` threads)
``random``           :class:`RandomSearch`: the best of N random configs
``tpe``              :class:`TPE`: Optuna TPE on the same reward (``pip install perfzoo[search]``)
===================  =====================================================================

:func:`make` builds one by name, :func:`make_searcher` from a command's flags (``search``'s and
``tune``'s); :func:`propose` is the one-call form:

>>> from perfzoo import search, spaces, zoo                        # doctest: +SKIP
>>> predictor = zoo.load_best("fsdp-cpu")                          # doctest: +SKIP
>>> result = search.propose(search.Reinforce(), spaces.get("fsdp-ads"), predictor, top_k=50)  # doctest: +SKIP
>>> result.write_jsonl("proposals.jsonl")                          # doctest: +SKIP

The closed loop (random jobs -> fit -> search -> launch -> refit) is :mod:`perfzoo.loop`
(``python -m perfzoo.tune``); the command line is ``python -m perfzoo.search`` (:mod:`perfzoo.search.cli`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Optional, Sequence

from perfzoo.console import InputError
from perfzoo.search._base import NO_KEYS, Searcher
from perfzoo.search.exhaustive import Exhaustive
from perfzoo.search.objective import Formula, Model, Objective, SearchResult
from perfzoo.search.random_search import RandomSearch
from perfzoo.search.reinforce import Reinforce
from perfzoo.search.tpe import TPE
from perfzoo.spaces import Space
from perfzoo.spaces.codec import SpaceCodec

if TYPE_CHECKING:  # an annotation only: the classifier's module loads scipy, which a search without one never needs
    from perfzoo.zoo.failure import FailurePredictor

SEARCHERS: dict[str, type[Searcher]] = {cls.name: cls for cls in (Reinforce, Exhaustive, RandomSearch, TPE)}


def make(name: str, **settings: Any) -> Searcher:
    """The searcher registered as ``name``, with ``settings`` (its constructor's keywords).

    >>> make("reinforce", lr=0.1)
    Reinforce(seed=0, n_samples=2000, batch_size=30, restarts=3, lr=0.1, entropy_coef=0.01, baseline_decay=0.9, \
normalise_advantage=True, progress=False)
    >>> make("annealing")
    Traceback (most recent call last):
    ...
    perfzoo.console.InputError: unknown searcher 'annealing'; choose one of exhaustive, random, reinforce, tpe
    """
    if name not in SEARCHERS:
        raise InputError(f"unknown searcher {name!r}; choose one of {', '.join(sorted(SEARCHERS))}")
    return SEARCHERS[name](**settings)


def make_searcher(name: str, seed: int, flags: dict[str, Optional[float]], progress: bool = False) -> Searcher:
    """The searcher ``--searcher`` names, with the settings its flags gave (``flags``: a command's
    searcher flags by setting, e.g. ``n_samples``, None where not given) and ``progress`` where it shows one;
    a flag its searcher has no setting for is a :class:`InputError`: how ``python -m perfzoo.search``
    and ``python -m perfzoo.tune`` build theirs.

    >>> make_searcher("exhaustive", 0, {"n_samples": 100})
    Traceback (most recent call last):
    ...
    perfzoo.console.InputError: --n-samples does not apply to --searcher exhaustive
    """
    cls = SEARCHERS[name]
    settings: dict = {flag: value for flag, value in flags.items() if value is not None}
    for flag, value in settings.items():
        if flag not in cls.settings():
            raise InputError(f"--{flag.replace('_', '-')} does not apply to --searcher {name}")
        if value <= 0:
            raise InputError(f"--{flag.replace('_', '-')} must be {'positive' if flag == 'lr' else 'at least 1'}, "
                             f"got {value}")
    if progress and "progress" in cls.settings():
        settings["progress"] = True
    return cls(seed=seed, **settings)


def propose(searcher: Searcher, space: Space, predictor: Model, top_k: int = 50, *,
            failure: Optional[FailurePredictor] = None,
            exclude: Iterable[dict] = (), fixed: Optional[dict] = None,
            columns: Optional[Sequence[str]] = None) -> SearchResult:
    """``searcher.propose`` on the :class:`Objective` of ``predictor`` (and ``failure``) over
    ``space``, leaving out the ``exclude`` configs (those already measured); the objective's
    reference sample is seeded with the searcher's ``seed``. ``fixed`` and ``columns``: see
    :class:`Objective`."""
    codec = SpaceCodec(space)
    objective = Objective(codec, predictor, failure, columns=columns, fixed=fixed, seed=searcher.seed)
    return searcher.propose(objective, top_k, codec.keys_of(exclude))

