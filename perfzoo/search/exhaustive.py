"""Exhaustive scoring: every valid configuration of a space through the predictor.

Vectorised and chunked: grid points are enumerated with numpy, checked against the compiled
constraints, turned into :class:`~perfzoo.records.columns.Columns` (arrays, no DataFrame) and predicted
in one call per chunk (``n_jobs`` chunks at once, one thread each, default: every core); each
chunk keeps the key and prediction of its best configs only (as many as could be proposed or
excluded). Then the rewards, in order of the most a config could get, until none left can enter
the top k: with a failure classifier, P(success) is computed only where it can change the top k
(and where the chunks' best are not enough, every config is predicted again and kept).
``fsdp-ads-v3`` (7,971,615 configs) takes seconds with a linear model and a minute with LightGBM
(``python scripts/search_benchmark.py --speed``). The result is also the ground truth for how
close REINFORCE gets to the predictor's own optimum (``stats['max_reward']``).

>>> from perfzoo.search import Formula, propose
>>> from perfzoo.spaces import get
>>> predictor = Formula(lambda X: X["config.local_batch"].to_numpy() * 1.0)
>>> propose(Exhaustive(limit=10**7, chunk_size=2**20), get("fsdp-ads"), predictor, top_k=3).stats["valid"]
7971615
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Callable, Iterable, Iterator, Optional

import numpy as np
from threadpoolctl import threadpool_limits

from harness.environment import cpu_cores
from perfzoo.console import InputError
from perfzoo.search._base import NO_KEYS, Searcher
from perfzoo.search.objective import Objective, SearchResult, select_top, top_rows


@dataclass(frozen=True, kw_only=True)
class Exhaustive(Searcher):
    """Score every valid config of the space; propose the top-k by reward (deterministic: no seed).

    Settings
    --------
    chunk_size : configs per predictor call.
    n_jobs : chunks scored at once, each in its own thread (numpy, pandas and LightGBM release
        the interpreter while they compute; default: the cores this process may use); the
        proposals do not depend on it.
    limit : refuse grids larger than this.
    fast : LightGBM-based predictors: score the grid tree by tree, exactly (see
        :mod:`perfzoo.search.treegrid`); falls back to chunked prediction by itself.
    progress : show a progress bar.

    ``stats`` has ``valid`` (configs scored), ``max_reward`` and ``max_predicted`` over all of
    them (excluded configs included), ``path`` (``treegrid`` or ``chunked``, with ``path_reason``
    saying why the fast path did not apply) and ``seconds``.
    """

    name = "exhaustive"
    chunk_size: int = 2 ** 16
    n_jobs: int = field(default_factory=cpu_cores)
    limit: int = 20_000_000
    fast: bool = True
    progress: bool = False

    def __post_init__(self):
        for name in ("chunk_size", "n_jobs"):
            if int(getattr(self, name)) < 1:
                raise InputError(f"exhaustive: {name} must be at least 1, got {getattr(self, name)}")

    def propose(self, objective: Objective, top_k: int, exclude: np.ndarray = NO_KEYS) -> SearchResult:
        t0 = time.perf_counter()
        codec = objective.codec
        exclude = np.unique(np.asarray(exclude, dtype=np.int64))  # sorted: looked up by bisection
        if codec.size > self.limit:
            raise InputError(f"space {codec.space.name!r} has {codec.size:,} grid points, more than "
                             f"limit={self.limit:,}; use reinforce or raise the limit")
        if self.fast:
            full = objective.grid()
            if full is not None:
                return _from_grid(objective, full, top_k, exclude, self.chunk_size, t0)
        return _chunked(self, objective, top_k, exclude, t0)


def _chunked(settings: Exhaustive, objective: Objective, top_k: int, excl: np.ndarray, t0: float) -> SearchResult:
    """Every valid config's prediction first, chunk by chunk, each chunk keeping only its highest
    reward bounds (the first batch), then the rewards in order of the most each config could get
    (:meth:`Objective.reward_bound`; without a failure classifier, the reward itself), until no config
    left could enter the top k: P(success) is only computed where it can matter. Exact: a config left
    out has a bound, so a reward, below the k-th best reward scored; the maxima in ``stats`` are those
    of every config. Where the first batch is not enough (a failure classifier that lowers the best
    rewards a lot), every prediction is made again, kept this time (:func:`_every_prediction`)."""
    codec, chunk_size = objective.codec, settings.chunk_size
    firsts, ceiling, valid, tops, finite = [], -np.inf, 0, [], False  # `ceiling`: the highest bound left out
    for part in _over_chunks(settings, objective, partial(_predict_chunk, objective, chunk_size, top_k + len(excl))):
        firsts.append((part.keys[part.first], part.pred[part.first]))
        ceiling = max(ceiling, part.after)
        valid += part.valid
        tops += [part.top] if part.top == part.top else []  # NaN: no prediction in the chunk
        finite = finite or part.finite
    keys = np.concatenate([k for k, _ in firsts]) if firsts else np.zeros(0, dtype=np.int64)
    pred = np.concatenate([p for _, p in firsts]) if firsts else np.zeros(0)
    del firsts

    def bound(rows: np.ndarray) -> np.ndarray:  # elementwise: as each chunk computed it
        return objective.reward_bound(pred[rows])

    batch = np.arange(len(keys))
    if objective.failure is not None and len(batch) > chunk_size:  # P(success) costs: the highest bounds first
        first = bound(batch)
        high = first >= np.partition(first, len(first) - chunk_size)[len(first) - chunk_size]
        ceiling = max(ceiling, float(first[~high].max())) if not high.all() else ceiling
        batch = batch[high]
    best = _Best(int(top_k))
    max_reward, scored = -np.inf, 0
    todo: Optional[np.ndarray] = None  # the configs in no batch yet, once the first batch is not enough
    step = max(len(batch), 1)
    with _pool(settings) as pool:
        while True:
            batch = batch[bound(batch) >= best.kth()]
            if len(batch):
                pieces = np.array_split(batch, max(-(-len(batch) // chunk_size), min(settings.n_jobs, len(batch))))
                ps = np.concatenate(list(_map(pool, lambda b: objective.success(codec.decode(keys[b])), pieces)))
                reward = objective.reward(pred[batch], ps)
                scored += len(batch) if objective.failure is not None else 0
                max_reward = max(max_reward, float(np.max(reward)))
                bk, bp, bs, br = keys[batch], pred[batch], ps, reward
                if len(excl):
                    ok = ~_among(bk, excl)
                    bk, bp, bs, br = bk[ok], bp[ok], bs[ok], br[ok]
                best.add(bk, bp, bs, br)
            if ceiling < best.kth() or (todo is not None and not len(todo)):
                break
            if todo is None:  # every config's prediction, the batch just scored left out
                done = keys[batch]
                keys, pred = _every_prediction(settings, objective)
                left = np.ones(len(keys), dtype=bool)
                left[np.searchsorted(keys, done)] = False
                todo = np.flatnonzero(left)
            step *= 2
            if step < len(todo):  # about the `step` highest bounds left: above a quantile of every 64th
                left_bound = bound(todo)
                take = left_bound >= np.quantile(left_bound[::64], 1.0 - step / len(todo))
                batch, todo = todo[take], todo[~take]
            else:
                batch, todo = todo, todo[:0]
            ceiling = float(bound(todo).max()) if len(todo) else -np.inf
    stats = {"grid": codec.size, "valid": valid, "max_reward": max_reward,
             "max_predicted": float(max(tops)) if finite else -np.inf,
             "failure_scored": scored, "chunk_size": chunk_size, "n_jobs": settings.n_jobs,
             "excluded_known": int(len(excl)), "path": "chunked",
             "path_reason": objective.grid_reason if settings.fast else "fast=False"}
    result = select_top(objective, best.keys, best.pred, best.ps, best.reward, top_k, excl, "exhaustive", stats)
    result.stats["seconds"] = round(time.perf_counter() - t0, 3)
    return result


@contextmanager
def _pool(settings: Exhaustive) -> Iterator[Optional[ThreadPoolExecutor]]:
    """``n_jobs`` threads (None for one: the work runs in the caller's), each with a one-thread BLAS
    (threads that each start the machine's BLAS threads oversubscribe the cores: 1.5x slower on 2)."""
    if settings.n_jobs == 1:
        yield None
        return
    with ThreadPoolExecutor(settings.n_jobs) as pool, threadpool_limits(1, user_api="blas"):
        yield pool


def _map(pool: Optional[ThreadPoolExecutor], fn: Callable, items: Iterable) -> Iterator:
    """``fn`` over ``items``, in their order, in the pool's threads if there is one."""
    return pool.map(fn, items) if pool is not None else map(fn, items)


def _over_chunks(settings: Exhaustive, objective: Objective, fn: Callable[[int], Any]) -> Iterator:
    """``fn(start)`` for every chunk of the grid, in grid order (so nothing depends on ``n_jobs``),
    ``n_jobs`` chunks at once; with the progress bar where asked for."""
    codec, chunk_size = objective.codec, settings.chunk_size
    bar = None
    if settings.progress:
        from tqdm import tqdm

        bar = tqdm(total=codec.size, unit="cfg", unit_scale=True, desc="exhaustive", dynamic_ncols=True)
    starts = range(0, codec.size, chunk_size)
    with _pool(settings) as pool:
        for start, part in zip(starts, _map(pool, fn, starts)):
            yield part
            if bar is not None:
                bar.update(min(chunk_size, codec.size - start))
    if bar is not None:
        bar.close()


@dataclass
class _Chunk:
    """A chunk's valid configs: keys and predictions; ``first``: the positions of its highest reward
    bounds (at least as many as there are configs to propose and to exclude, ties included),
    ``after``: the highest bound of the others (-inf if none). Without a failure classifier the
    chunks' first batches hold the top k: each chunk's ``after`` is below the k-th reward they give.
    ``valid``: how many; ``top``: the highest prediction (NaN if none), ``finite``: whether any is."""

    keys: np.ndarray
    pred: np.ndarray
    first: np.ndarray
    after: float
    valid: int
    top: float
    finite: bool


def _predict_chunk(objective: Objective, chunk_size: int, keep: int, start: int) -> _Chunk:
    """The predictor's value on a chunk's valid configs, its ``keep`` highest reward bounds named."""
    codec = objective.codec
    stop = min(start + chunk_size, codec.size)
    idx = codec.all_indices(start, stop)
    valid = codec.valid(idx)
    keys = np.arange(start, stop, dtype=np.int64)
    if not valid.all():
        keys, idx = keys[valid], idx[valid]
    pred = objective.predicted(idx) if len(keys) else np.zeros(0)
    bound = objective.reward_bound(pred)
    seen = ~np.isnan(pred)
    facts = dict(valid=len(keys), top=float(np.max(pred[seen])) if seen.any() else np.nan,
                 finite=bool(np.isfinite(pred).any()))
    if len(bound) <= keep:
        return _Chunk(keys, pred, np.arange(len(bound)), -np.inf, **facts)
    cut = np.partition(bound, len(bound) - keep)[len(bound) - keep]  # the keep-th highest; its ties join it
    high = bound >= cut
    return _Chunk(keys, pred, np.flatnonzero(high), float(bound[~high].max()) if not high.all() else -np.inf, **facts)


def _every_prediction(settings: Exhaustive, objective: Objective) -> tuple[np.ndarray, np.ndarray]:
    """The keys and predictions of every valid config, in grid order (a second pass over the chunks)."""
    parts = list(_over_chunks(settings, objective, partial(_predict_chunk, objective, settings.chunk_size,
                                                           settings.chunk_size)))
    if not parts:
        return np.zeros(0, dtype=np.int64), np.zeros(0)
    return np.concatenate([p.keys for p in parts]), np.concatenate([p.pred for p in parts])


def _among(keys: np.ndarray, sorted_keys: np.ndarray) -> np.ndarray:
    """Mask of the ``keys`` found in ``sorted_keys`` (sorted: what ``codec.keys_of`` returns)."""
    at = np.searchsorted(sorted_keys, keys).clip(max=len(sorted_keys) - 1)
    return sorted_keys[at] == keys


class _Best:
    """The best ``keep`` configs found so far (keys, predictions, P(success), rewards)."""

    def __init__(self, keep: int):
        self.keep = keep
        self.keys = np.zeros(0, dtype=np.int64)
        self.pred = self.ps = self.reward = np.zeros(0)

    def kth(self) -> float:
        """The ``keep``-th best reward so far (-inf while fewer are kept)."""
        return float(self.reward.min()) if len(self.reward) >= self.keep else -np.inf

    def add(self, keys: np.ndarray, pred: np.ndarray, ps: np.ndarray, reward: np.ndarray) -> None:
        self.keys = np.concatenate([self.keys, keys])
        self.pred = np.concatenate([self.pred, pred])
        self.ps = np.concatenate([self.ps, ps])
        self.reward = np.concatenate([self.reward, reward])
        if len(self.keys) > self.keep:
            cut = top_rows(self.keys, self.pred, self.reward, self.keep)
            self.keys, self.pred, self.ps, self.reward = self.keys[cut], self.pred[cut], self.ps[cut], self.reward[cut]


def _from_grid(objective: Objective, full: tuple, top_k: int, excl: np.ndarray, chunk_size: int,
               t0: float) -> SearchResult:
    codec = objective.codec
    pred, ps = full
    reward = objective.reward(pred, ps)
    valid = np.ones(codec.size, dtype=bool)
    if codec.has_constraints:
        for start in range(0, codec.size, chunk_size):
            stop = min(start + chunk_size, codec.size)
            valid[start:stop] = codec.valid(codec.all_indices(start, stop))
        reward = np.where(valid, reward, -np.inf)
    n_valid = int(valid.sum())
    max_reward = float(reward[valid].max()) if n_valid else -np.inf
    max_pred = float(np.nanmax(np.where(valid, pred, np.nan))) if n_valid else -np.inf
    masked = reward.copy()
    if len(excl):
        masked[excl] = -np.inf
    k = min(int(top_k), n_valid)
    if k <= 0:
        keys = np.zeros(0, dtype=np.int64)
    else:
        keys = top_rows(np.arange(codec.size, dtype=np.int64), pred, masked, k).astype(np.int64)
        keys = keys[np.isfinite(masked[keys])]
    stats = {"grid": codec.size, "valid": n_valid, "max_reward": max_reward, "max_predicted": max_pred,
             "chunk_size": chunk_size, "excluded_known": int(len(excl)), "path": "treegrid"}
    result = select_top(objective, keys, pred[keys], ps[keys], reward[keys], top_k, excl, "exhaustive", stats)
    result.stats["seconds"] = round(time.perf_counter() - t0, 3)
    return result


__all__ = ["Exhaustive"]
