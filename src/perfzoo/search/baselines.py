"""The searchers REINFORCE is compared with: random search and Optuna TPE on the same predictor.

* :func:`random_search`: score ``n_samples`` distinct random valid configs with the
  predictor and keep the best (with ``predictor=None``: just distinct random configs, the
  "launch random jobs" baseline).
* :func:`tpe`: Optuna's Tree-structured Parzen Estimator maximising the same reward
  (ask-and-tell in batches; numeric knobs as ordinal integers, the rest categorical). Optuna
  is an optional extra: ``pip install perfzoo[search]``.
"""

from __future__ import annotations

import time
from typing import Any, Optional, Sequence

import numpy as np

from perfzoo.search.encoding import SpaceCodec
from perfzoo.search.objective import Objective, SearchResult, exclude_keys, make_objective, select_top


def random_search(space: Any, predictor: Any = None, top_k: int = 50, *, failure: Any = None,
                  n_samples: int = 6000, exclude: Any = None, seed: int = 0,
                  columns: Optional[Sequence[str]] = None, fixed: Optional[dict] = None,
                  failure_mode: str = "expected", objective: Optional[Objective] = None) -> SearchResult:
    """The best ``top_k`` of ``n_samples`` distinct random valid configs (not in ``exclude``).

    With ``predictor=None`` (and no ``objective``) nothing is scored: the first ``top_k``
    random configs come back (``predicted`` NaN), i.e. plain random search.
    """
    t0 = time.perf_counter()
    codec = objective.codec if objective is not None else (space if isinstance(space, SpaceCodec) else SpaceCodec(space))
    excl = exclude_keys(codec, exclude)
    rng = np.random.default_rng([int(seed), 104729])
    if predictor is None and objective is None:
        idx = codec.sample(top_k, seed=rng, unique=True, exclude=excl)
        keys = codec.keys(idx)
        nan = np.full(len(idx), np.nan)
        return SearchResult(method="random", space=codec.space.name, configs=codec.configs(idx), keys=keys,
                            predicted=nan, reward=nan.copy(), p_success=nan.copy(),
                            stats={"sampled": len(idx), "seconds": round(time.perf_counter() - t0, 3)})
    obj = make_objective(codec, predictor, failure, objective=objective, columns=columns, fixed=fixed,
                         failure_mode=failure_mode, seed=seed)
    idx = codec.sample(max(n_samples, top_k), seed=rng, unique=True, exclude=excl)
    pred, ps, reward = obj.score(idx, valid=np.ones(len(idx), dtype=bool))
    res = select_top(obj, codec.keys(idx), pred, ps, reward, top_k, excl, "random",
                     {"sampled": int(len(idx)), "excluded_known": int(len(excl))})
    res.stats["seconds"] = round(time.perf_counter() - t0, 3)
    return res


def _optuna():
    try:
        import optuna
    except ImportError:  # pragma: no cover - depends on the environment
        raise ImportError("the TPE searcher needs Optuna, an optional extra: pip install perfzoo[search] "
                          "(or pip install optuna)") from None
    return optuna


def tpe(space: Any, predictor: Any = None, top_k: int = 50, *, failure: Any = None, n_samples: int = 2000,
        batch_size: int = 30, exclude: Any = None, seed: int = 0, n_startup_trials: int = 30,
        multivariate: bool = True, columns: Optional[Sequence[str]] = None, fixed: Optional[dict] = None,
        failure_mode: str = "expected", objective: Optional[Objective] = None) -> SearchResult:
    """Optuna TPE maximising the predictor's reward; returns the top-k distinct configs it saw.

    ``n_samples`` trials are asked ``batch_size`` at a time and told their reward (invalid
    configs: the lowest reward). Requires ``optuna`` (``pip install perfzoo[search]``).
    """
    optuna = _optuna()
    import warnings

    t0 = time.perf_counter()
    obj = make_objective(space, predictor, failure, objective=objective, columns=columns, fixed=fixed,
                         failure_mode=failure_mode, seed=seed)
    codec = obj.codec
    excl = exclude_keys(codec, exclude)
    dists = {}
    for name, vals, (kind, _) in zip(codec.names, codec.values, (codec._columns[n] for n in codec.names)):
        if kind in ("int", "float") and None not in vals:
            dists[name] = optuna.distributions.IntDistribution(0, len(vals) - 1)
        else:
            dists[name] = optuna.distributions.CategoricalDistribution(tuple(range(len(vals))))
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # multivariate TPE is marked experimental
        sampler = optuna.samplers.TPESampler(seed=int(seed), n_startup_trials=n_startup_trials,
                                             multivariate=multivariate)
        study = optuna.create_study(direction="maximize", sampler=sampler)
        all_keys, all_pred, all_ps, all_reward = [], [], [], []
        done = 0
        while done < n_samples:
            B = min(batch_size, n_samples - done)
            trials = [study.ask(dists) for _ in range(B)]
            idx = np.array([[t.params[n] for n in codec.names] for t in trials], dtype=np.int64)
            pred, ps, reward, keys = obj.score_cached(idx)
            for t, r in zip(trials, reward.tolist()):
                study.tell(t, float(r))
            all_keys.append(keys)
            all_pred.append(pred)
            all_ps.append(ps)
            all_reward.append(reward)
            done += B
    keys = np.concatenate(all_keys)
    res = select_top(obj, keys, np.concatenate(all_pred), np.concatenate(all_ps), np.concatenate(all_reward),
                     top_k, excl, "tpe", {"sampled": int(len(keys)), "distinct": int(len(np.unique(keys))),
                                          "excluded_known": int(len(excl))})
    res.stats["seconds"] = round(time.perf_counter() - t0, 3)
    return res


__all__ = ["random_search", "tpe"]
