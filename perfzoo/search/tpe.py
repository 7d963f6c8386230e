"""Optuna's Tree-structured Parzen Estimator on the predictor's reward.

Ask-and-tell in batches; numeric knobs as ordinal integers, the rest categorical. Optuna is an
optional extra: ``pip install perfzoo[search]``.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass

import numpy as np

from perfzoo.search._base import NO_KEYS, Searcher
from perfzoo.search.objective import Objective, SearchResult, select_top


def _optuna():
    try:
        import optuna
    except ImportError:  # pragma: no cover - depends on the environment
        raise ImportError("the TPE searcher needs Optuna, an optional extra: pip install perfzoo[search] "
                          "(or pip install optuna)") from None
    return optuna


@dataclass(frozen=True, kw_only=True)
class TPE(Searcher):
    """Optuna TPE maximising the objective's reward; proposes the top-k distinct configs it saw.

    ``n_samples`` trials are asked ``batch_size`` at a time and told their reward (invalid
    configs: the lowest reward); ``n_startup_trials`` and ``multivariate`` are
    ``optuna.samplers.TPESampler``'s.
    """

    name = "tpe"
    n_samples: int = 2000
    batch_size: int = 30
    n_startup_trials: int = 30
    multivariate: bool = True

    def propose(self, objective: Objective, top_k: int, exclude: np.ndarray = NO_KEYS) -> SearchResult:
        optuna = _optuna()
        t0 = time.perf_counter()
        codec = objective.codec
        dists = {}
        for name, vals, (kind, _) in zip(codec.names, codec.values, (codec._columns[n] for n in codec.names)):
            if kind in ("int", "float") and None not in vals:
                dists[name] = optuna.distributions.IntDistribution(0, len(vals) - 1)
            else:
                dists[name] = optuna.distributions.CategoricalDistribution(tuple(range(len(vals))))
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # multivariate TPE is marked experimental
            sampler = optuna.samplers.TPESampler(seed=int(self.seed), n_startup_trials=self.n_startup_trials,
                                                 multivariate=self.multivariate)
            study = optuna.create_study(direction="maximize", sampler=sampler)
            all_keys, all_pred, all_ps, all_reward = [], [], [], []
            done = 0
            while done < self.n_samples:
                B = min(self.batch_size, self.n_samples - done)
                trials = [study.ask(dists) for _ in range(B)]
                idx = np.array([[t.params[n] for n in codec.names] for t in trials], dtype=np.int64)
                pred, ps, reward, keys = objective.score_cached(idx)
                for t, r in zip(trials, reward.tolist()):
                    study.tell(t, float(r))
                all_keys.append(keys)
                all_pred.append(pred)
                all_ps.append(ps)
                all_reward.append(reward)
                done += B
        keys = np.concatenate(all_keys)
        res = select_top(objective, keys, np.concatenate(all_pred), np.concatenate(all_ps),
                         np.concatenate(all_reward), top_k, exclude, self.name,
                         {"sampled": int(len(keys)), "distinct": int(len(np.unique(keys))),
                          "excluded_known": int(len(exclude))})
        res.stats["seconds"] = round(time.perf_counter() - t0, 3)
        return res


__all__ = ["TPE"]
