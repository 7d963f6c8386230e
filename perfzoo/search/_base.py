"""The searcher protocol, as Optuna's ``BaseSampler``: settings in the constructor, one method.

A searcher is a small dataclass holding only its own settings (``Reinforce(lr=0.1, seed=3)``)
with one method, :meth:`Searcher.propose`: given an :class:`~perfzoo.search.objective.Objective`
(the space's codec and the predictor's reward), return the ``top_k`` best distinct valid
configs it found, none of them among the ``exclude`` keys, as a
:class:`~perfzoo.search.objective.SearchResult` (``select_top`` builds one from scored keys).

>>> from dataclasses import dataclass
>>> import numpy as np
>>> from perfzoo.search.objective import Objective, select_top
>>> @dataclass(frozen=True, kw_only=True)
... class FirstValid(Searcher):
...     name = "first-valid"
...     n: int = 100
...     def propose(self, objective, top_k, exclude=NO_KEYS):
...         idx = objective.codec.sample(self.n, seed=self.seed)
...         pred, ps, reward = objective.score(idx)
...         return select_top(objective, objective.codec.keys(idx), pred, ps, reward, top_k, exclude, self.name)
>>> FirstValid(n=10).settings()
['seed', 'n']
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from perfzoo.search.objective import Objective, SearchResult

NO_KEYS = np.zeros(0, dtype=np.int64)


@dataclass(frozen=True, kw_only=True)
class Searcher:
    """Base class of the searchers; a subclass is a ``@dataclass(frozen=True, kw_only=True)``
    declaring ``name`` and its settings (each with its default), and implements :meth:`propose`.

    ``seed`` seeds the searcher and the objective's reference sample (:func:`perfzoo.search.propose`);
    a deterministic searcher ignores it.
    """

    name: ClassVar[str]
    seed: int = 0

    def propose(self, objective: Objective, top_k: int, exclude: np.ndarray = NO_KEYS) -> SearchResult:
        """The ``top_k`` best distinct valid configs found for ``objective``, best first; none of
        them has a key in ``exclude`` (int64 config keys, ``objective.codec.keys_of(configs)``)."""
        raise NotImplementedError

    @classmethod
    def settings(cls) -> list[str]:
        """The names of the settings the constructor takes."""
        return [f.name for f in dataclasses.fields(cls)]


__all__ = ["NO_KEYS", "Searcher"]
