"""Random search on the predictor: the searcher REINFORCE is compared with at equal samples.

>>> from perfzoo.search import Formula, propose
>>> from perfzoo.spaces import get
>>> predictor = Formula(lambda X: X["config.local_batch"].to_numpy() * 1.0)
>>> propose(RandomSearch(n_samples=200), get("fsdp-ads"), predictor, top_k=3).stats["sampled"]
200
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from perfzoo.search._base import NO_KEYS, Searcher
from perfzoo.search.objective import Objective, SearchResult, select_top


@dataclass(frozen=True, kw_only=True)
class RandomSearch(Searcher):
    """The best ``top_k`` of ``n_samples`` distinct random valid configs (none excluded),
    scored by the objective."""

    name = "random"
    n_samples: int = 6000

    def propose(self, objective: Objective, top_k: int, exclude: np.ndarray = NO_KEYS) -> SearchResult:
        t0 = time.perf_counter()
        codec = objective.codec
        rng = np.random.default_rng([int(self.seed), 104729])
        idx = codec.sample(max(self.n_samples, top_k), seed=rng, unique=True, exclude=exclude)
        pred, ps, reward = objective.score(idx, valid=np.ones(len(idx), dtype=bool))
        res = select_top(objective, codec.keys(idx), pred, ps, reward, top_k, exclude, self.name,
                         {"sampled": int(len(idx)), "excluded_known": int(len(exclude))})
        res.stats["seconds"] = round(time.perf_counter() - t0, 3)
        return res


__all__ = ["RandomSearch"]
