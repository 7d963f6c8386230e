"""What every searcher maximises, and what every searcher returns.

:class:`Objective` scores index rows of a space (see :mod:`perfzoo.spaces.codec`) with a
predictor: the predicted throughput, P(success) from an optional ``failure`` predictor, and
the reward ``normalised prediction x P(success)``. A zoo predictor reads the rows as
:class:`~perfzoo.records.columns.Columns` (arrays; the predictor and the failure classifier share one
when they read the same columns, so each chunk's analytic estimates are computed once); any
other model gets a DataFrame. The prediction is normalised by the
predictions on a fixed reference sample of random valid configs (throughput predictors: by
their maximum; ranking-score predictors: min-max to [0, 1]) so rewards are comparable across
predictors and Adam's learning rate means the same thing everywhere. Invalid configs get
``invalid_reward`` (0: the lowest reward there is), so REINFORCE learns to avoid them.

:class:`SearchResult` holds the top-k distinct configurations a searcher found, none of
them in ``exclude`` (the configs already measured), with predicted value, std (where the
predictor has ``predict_std``) and P(success); ``write_jsonl`` writes the proposals file
``python -m perfzoo.collect --configs`` runs.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Optional, Protocol, Sequence, Union

import numpy as np
import pandas as pd

from perfzoo.console import InputError
from perfzoo.records.columns import Columns
from perfzoo.search.treegrid import grid_values
from perfzoo.spaces import Space
from perfzoo.spaces.codec import SpaceCodec
from perfzoo.zoo.base import Predictor, input_columns

if TYPE_CHECKING:  # an annotation only: the classifier's module loads scipy, which a search without one never needs
    from perfzoo.zoo.failure import FailurePredictor


class Model(Protocol):
    """What a search scores configs with: a fitted zoo predictor (:mod:`perfzoo.zoo`) or a
    :class:`Formula`. ``output``: ``'throughput'`` or ``'score'`` (only order counts);
    ``has_std``: whether it offers ``predict_std(X)``."""

    output: str
    has_std: bool

    def predict(self, X: pd.DataFrame) -> np.ndarray: ...


@dataclass(frozen=True)
class Formula:
    """A function of a config frame as a :class:`Model`: a toy objective, a user's formula.

    >>> Formula(lambda X: 2.0 * X["config.a"]).predict(pd.DataFrame({"config.a": [1, 2]})).tolist()
    [2.0, 4.0]
    """

    fn: Callable[[pd.DataFrame], np.ndarray]
    output: str = "throughput"
    has_std: bool = False

    def predict(self, X: pd.DataFrame) -> np.ndarray:
        return np.asarray(self.fn(X), dtype=float)


def check_inputs(codec: SpaceCodec, columns: Optional[Sequence[str]]) -> list[str]:
    """The space's dimensions the predictor does not read (a ``ValueError`` if it reads none).

    A predictor fitted on another workload's data reads none of the knobs a search varies: every
    proposal would get the same prediction, so that is an error naming both sides.
    """
    if columns is None:
        return []
    dims = [f"config.{d.name}" for d in codec.dims if len(d) > 1]
    unread = [c for c in dims if c not in columns]
    if dims and len(unread) == len(dims):
        inputs = [c for c in columns if c.startswith("config.")]
        raise InputError(f"the predictor reads none of the knobs space '{codec.space.name}' varies "
                         f"({', '.join(c[7:] for c in dims[:6])}{', ...' if len(dims) > 6 else ''}); its config "
                         f"inputs are {', '.join(c[7:] for c in inputs[:6]) or 'none'}"
                         f"{', ...' if len(inputs) > 6 else ''}: fit it on a dataset measured in this space")
    return unread


class Objective:
    """Predicted throughput, P(success) and reward of index rows of a space.

    Parameters
    ----------
    codec : the :class:`~perfzoo.spaces.codec.SpaceCodec` of the space searched.
    predictor : the :class:`Model` (a fitted zoo predictor or a :class:`Formula`); higher is
        better. ``predictor.output == 'score'`` marks a ranking score (only order counts).
    failure : optional fitted ``failure`` predictor (``predict_failure(X)`` = P(fail)).
    columns, failure_columns : the input columns each model takes (default: what it was
        fitted on, ``input_columns_``); ``fixed`` fills columns outside the space
        (``{'hardware.accelerator': 'cpu'}``).
    failure_mode : ``'expected'`` (reward = normalised prediction x P(success)) or
        ``'filter'`` (reward = normalised prediction where P(success) >= ``min_success``, else 0).
    n_reference, seed : the reference sample the prediction is normalised by.
    """

    def __init__(self, codec: SpaceCodec, predictor: Model, failure: Optional[FailurePredictor] = None, *, columns: Optional[Sequence[str]] = None,
                 failure_columns: Optional[Sequence[str]] = None, fixed: Optional[dict] = None,
                 failure_mode: str = "expected", min_success: float = 0.5, invalid_reward: float = 0.0,
                 n_reference: int = 1000, seed: int = 0):
        self.codec = codec
        if failure_mode not in ("expected", "filter"):
            raise InputError(f"failure_mode must be 'expected' or 'filter', got {failure_mode!r}")
        self.predictor = predictor
        self.failure = failure
        self.columns = list(columns) if columns is not None else input_columns(predictor)
        self.failure_columns = (list(failure_columns) if failure_columns is not None
                                else input_columns(failure) if failure is not None else None)
        self.fixed = dict(fixed or {})
        check_inputs(self.codec, self.columns)
        self.failure_mode = failure_mode
        self.min_success = min_success
        self.invalid_reward = float(invalid_reward)
        self.output = predictor.output
        self.has_std = predictor.has_std
        self.n_predicted = 0
        self.predict_seconds = 0.0
        self._lock = threading.Lock()
        self.grid_reason: Optional[str] = None  # why grid() found no fast path, once it was tried
        self._cache: dict[int, tuple[float, float, float]] = {}
        ref = self.codec.sample(n_reference, seed=np.random.default_rng([seed, 7919]))
        p = self._raw_predict(self.inputs(ref)[0])
        p = p[np.isfinite(p)]
        if len(p) == 0:
            self.lo, self.hi = 0.0, 1.0
        else:
            self.lo, self.hi = float(p.min()), float(p.max())
        self.positive = self.output == "throughput" and len(p) > 0 and self.lo > 0
        self.scale = self.hi if self.positive and self.hi > 0 else max(self.hi - self.lo, 1e-12)

    # -- raw model calls -------------------------------------------------------------------
    def frame(self, idx: np.ndarray, columns: Optional[Sequence[str]] = None, categorical: bool = True) -> pd.DataFrame:
        return self.codec.frame(idx, columns=columns, fixed=self.fixed, categorical=categorical)

    def inputs(self, idx: np.ndarray) -> tuple[Any, Any]:
        """The predictor's and the failure classifier's inputs for index rows: one
        :class:`~perfzoo.records.columns.Columns` each (the same one when they read the same columns, so
        the analytic estimates are computed once), or a DataFrame for a model that is no zoo
        predictor (a :class:`Formula`)."""
        cols = self.codec.columns(idx, self.columns, fixed=self.fixed)
        if self.failure is None:
            return _as_input(self.predictor, cols), None
        same = self.failure_columns == self.columns
        fcols = cols if same else self.codec.columns(idx, self.failure_columns, fixed=self.fixed)
        return _as_input(self.predictor, cols), _as_input(self.failure, fcols)

    def _raw_predict(self, X: Any) -> np.ndarray:
        if len(X) == 0:
            return np.zeros(0)
        t0 = time.perf_counter()
        out = np.asarray(self.predictor.predict(X), dtype=float).reshape(-1)
        with self._lock:  # searchers may score chunks in several threads (Exhaustive's n_jobs)
            self.predict_seconds += time.perf_counter() - t0
            self.n_predicted += len(X)
        return out

    def p_success(self, X: Any) -> np.ndarray:
        """P(success) of the configs in the failure classifier's input ``X`` (1 without one)."""
        if self.failure is None or len(X) == 0:
            return np.ones(len(X))
        return 1.0 - np.asarray(self.failure.predict_failure(X), dtype=float).reshape(-1)

    def normalise(self, pred: np.ndarray) -> np.ndarray:
        if self.positive:
            return pred / self.scale
        return np.clip((pred - self.lo) / self.scale, 0.0, None)

    # -- scoring ---------------------------------------------------------------------------
    def score(self, idx: np.ndarray, valid: Optional[np.ndarray] = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(predicted, p_success, reward)`` of index rows (NaN / 0 / ``invalid_reward`` where invalid)."""
        idx = np.asarray(idx, dtype=np.int64)
        n = len(idx)
        valid = self.codec.valid(idx) if valid is None else valid
        if n and valid.all():
            X, F = self.inputs(idx)
            pred = self._raw_predict(X)
            ps = self.p_success(F) if F is not None else np.ones(n)
            return pred, ps, self.reward(pred, ps)
        pred = np.full(n, np.nan)
        ps = np.zeros(n)
        reward = np.full(n, self.invalid_reward)
        if valid.any():
            X, F = self.inputs(idx[valid])
            p = self._raw_predict(X)
            s = self.p_success(F) if F is not None else np.ones(len(p))
            pred[valid], ps[valid] = p, s
            reward[valid] = self.reward(p, s)
        return pred, ps, reward

    def reward(self, pred: np.ndarray, p_success: np.ndarray) -> np.ndarray:
        r = self.normalise(pred)
        r = np.where(np.isfinite(r), r, self.invalid_reward)
        if self.failure is None:
            return r
        if self.failure_mode == "filter":
            return np.where(p_success >= self.min_success, r, self.invalid_reward)
        return r * p_success

    def predicted(self, idx: np.ndarray) -> np.ndarray:
        """The predictor's value on valid index rows (no failure classifier)."""
        return self._raw_predict(_as_input(self.predictor, self.codec.columns(idx, self.columns, fixed=self.fixed)))

    def success(self, idx: np.ndarray) -> np.ndarray:
        """P(success) of valid index rows (1 without a failure classifier)."""
        if self.failure is None:
            return np.ones(len(idx))
        return self.p_success(_as_input(self.failure, self.codec.columns(idx, self.failure_columns, fixed=self.fixed)))

    def reward_bound(self, pred: np.ndarray) -> np.ndarray:
        """The most :meth:`reward` can be for these predictions, whatever P(success) turns out to
        be: configs whose bound is below the k-th best reward found need no failure classifier.

        >>> from perfzoo.spaces import get
        >>> obj = Objective(SpaceCodec(get("llm-small")), Formula(lambda X: X["config.n_layers"] * 1.0), n_reference=50)
        >>> bool((obj.reward_bound(np.array([2.0, 4.0])) >= obj.reward(np.array([2.0, 4.0]), np.ones(2))).all())
        True
        """
        r = self.normalise(pred)
        r = np.where(np.isfinite(r), r, self.invalid_reward)
        if self.failure is None:
            return r
        if self.failure_mode == "filter":
            return np.maximum(r, self.invalid_reward)
        return np.maximum(r, 0.0)  # r x P(success), P(success) in [0, 1]

    def score_cached(self, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """As :meth:`score`, predicting each distinct config once; also returns the keys."""
        idx = np.asarray(idx, dtype=np.int64)
        keys = self.codec.keys(idx)
        uniq, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
        todo = [j for j, k in enumerate(uniq.tolist()) if k not in self._cache]
        if todo:
            rows = idx[first[todo]]
            p, s, r = self.score(rows)
            for j, a, b, c in zip(todo, p.tolist(), s.tolist(), r.tolist()):
                self._cache[int(uniq[j])] = (a, b, c)
        table = np.array([self._cache[int(k)] for k in uniq.tolist()], dtype=float).reshape(-1, 3)
        out = table[inverse.reshape(-1)]
        return out[:, 0], out[:, 1], out[:, 2], keys

    def grid(self) -> Optional[tuple[np.ndarray, np.ndarray]]:
        """``(predicted, p_success)`` on every grid point (index = config key) when both models
        allow exact tree-by-tree evaluation (:mod:`perfzoo.search.treegrid`), else None."""
        t0 = time.perf_counter()
        why: list[str] = []
        pred = grid_values(self.predictor, self.codec, lambda idx: self.frame(idx, self.columns), "predict", why=why)
        if pred is None:
            self.grid_reason = "predictor: " + (why[0] if why else "not supported")
            return None
        if self.failure is None:
            ps = np.ones(self.codec.size)
        else:
            ps = grid_values(self.failure, self.codec, lambda idx: self.frame(idx, self.failure_columns), "success",
                             why=why)
            if ps is None:
                self.grid_reason = "failure classifier: " + (why[0] if why else "not supported")
                return None
        self.predict_seconds += time.perf_counter() - t0
        self.n_predicted += self.codec.size
        return pred, ps

    def std(self, idx: np.ndarray) -> Optional[np.ndarray]:
        if not self.has_std or len(idx) == 0:
            return None
        try:
            return np.asarray(self.predictor.predict_std(self.frame(idx, self.columns)), dtype=float).reshape(-1)
        except Exception:  # a predictor whose std is unavailable for this input
            return None


@dataclass
class SearchResult:
    """The top-k distinct, not-yet-measured configurations a searcher found.

    ``configs`` are complete configs (constants and derived keys filled in), best first;
    ``predicted`` the predictor's value, ``std`` its spread (None when the predictor has
    none), ``p_success`` P(success) (1 when no failure predictor), ``reward`` what was
    maximised. ``stats`` says how much work it took.
    """

    method: str
    space: Space
    configs: list[dict]
    keys: np.ndarray
    predicted: np.ndarray
    reward: np.ndarray
    p_success: np.ndarray
    std: Optional[np.ndarray] = None
    stats: dict = field(default_factory=dict)
    history: Optional[np.ndarray] = None  # REINFORCE: mean batch reward per step, one row per restart

    def __len__(self) -> int:
        return len(self.configs)

    def _tie_key(self) -> np.ndarray:
        """Rewards rounded to 0.1% of the best: closer than that, two proposals are tied (the
        measurements they predict differ by more than that from one repeat to the next)."""
        reward = np.asarray(self.reward, dtype=float)
        scale = np.nanmax(np.abs(reward)) if len(reward) and np.isfinite(reward).any() else 1.0
        return np.round(reward / (scale or 1.0), 3)

    def tied(self, k: int) -> int:
        """How many distinct rewards (within 0.1%) the first ``k`` proposals have (``k``: no ties)."""
        return len(np.unique(self._tie_key()[:k]))

    def break_ties(self, secondary: np.ndarray, k: int) -> "SearchResult":
        """The best ``k``, ordered by reward, then by ``secondary`` (one score per proposal,
        higher first) among rewards within 0.1%: a second predictor decides what the first cannot."""
        reward = self._tie_key()
        order = np.lexsort((-np.asarray(secondary, dtype=float), -reward))[:k]
        pick = (lambda a: None if a is None else np.asarray(a)[order])
        return SearchResult(method=self.method, space=self.space, configs=[self.configs[i] for i in order],
                            keys=pick(self.keys), predicted=pick(self.predicted), reward=pick(self.reward),
                            p_success=pick(self.p_success), std=pick(self.std),
                            stats={**self.stats, "tie_break": True}, history=self.history)

    def to_frame(self) -> pd.DataFrame:
        """One row per proposal: rank, predicted, std, p_success, reward and the knobs."""
        rows = []
        for i, cfg in enumerate(self.configs):
            rows.append({"rank": i + 1, "predicted": self.predicted[i],
                         "std": None if self.std is None else self.std[i],
                         "p_success": self.p_success[i], "reward": self.reward[i], **cfg})
        return pd.DataFrame(rows)

    def records(self) -> list[dict]:
        """The proposal lines: ``{"config": {...}, "rank", "predicted", "std", "p_success", ...}``."""
        out = []
        for i, cfg in enumerate(self.configs):
            out.append({"config": cfg, "rank": i + 1, "method": self.method, "space": self.space.name,
                        "predicted": _num(self.predicted[i]),
                        "std": None if self.std is None else _num(self.std[i]),
                        "p_success": _num(self.p_success[i]), "reward": _num(self.reward[i])})
        return out

    def write_jsonl(self, path: Union[str, Path]) -> Path:
        """Write the proposals file (readable by ``python -m perfzoo.collect --configs``)."""
        path = Path(path)
        tmp = path.with_name(path.name + ".tmp")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_text("".join(json.dumps(r, sort_keys=False) + "\n" for r in self.records()))
            tmp.replace(path)
        except OSError as exc:  # named as given, not by the temporary file it goes through
            raise OSError(exc.errno, exc.strerror, str(path)) from None
        return path


def top_rows(keys: np.ndarray, pred: np.ndarray, reward: np.ndarray, keep: int) -> np.ndarray:
    """Positions of the best ``keep`` rows in :func:`select_top`'s order (reward, prediction,
    smaller key), found without sorting them all: what a searcher keeps of each chunk, so that
    what it proposes does not depend on how the rows were chunked.

    >>> top_rows(np.array([7, 3, 5, 9]), np.array([1.0, 1.0, 2.0, 0.0]), np.array([0.5, 0.5, 0.5, 0.9]), 2).tolist()
    [3, 2]
    """
    if len(keys) <= keep:
        return np.arange(len(keys))
    kth = np.partition(-reward, keep - 1)[keep - 1]
    rows = np.flatnonzero(-reward <= kth)  # as good as the keep-th by reward, ties included
    if len(rows) > keep:
        rows = rows[np.lexsort((keys[rows], -pred[rows], -reward[rows]))[:keep]]
    return rows


def _as_input(model: Any, cols: Columns) -> Any:
    """What ``model`` predicts from: the Columns for a zoo predictor, a DataFrame for anything else."""
    return cols if isinstance(model, Predictor) else cols.to_frame()


def _num(v: Any) -> Optional[float]:
    v = float(v)
    return v if np.isfinite(v) else None


def select_top(objective: Objective, keys: np.ndarray, pred: np.ndarray, ps: np.ndarray, reward: np.ndarray,
               top_k: int, exclude: np.ndarray, method: str, stats: Optional[dict] = None) -> SearchResult:
    """The ``top_k`` best distinct keys by reward (ties: prediction, then the smaller key: one
    order, whatever order the rows came in), leaving out ``exclude`` and invalid rows; builds
    the :class:`SearchResult`."""
    codec = objective.codec
    keep = np.isfinite(pred)
    if len(exclude):
        keep &= ~np.isin(keys, exclude)
    keys, pred, ps, reward = keys[keep], pred[keep], ps[keep], reward[keep]
    order = np.lexsort((keys, -pred, -reward))
    keys, pred, ps, reward = keys[order], pred[order], ps[order], reward[order]
    _, first = np.unique(keys, return_index=True)
    first = np.sort(first)[:top_k]
    keys, pred, ps, reward = keys[first], pred[first], ps[first], reward[first]
    idx = codec.decode(keys)
    stats = dict(stats or {})
    stats.setdefault("returned", int(len(keys)))
    return SearchResult(method=method, space=codec.space, configs=codec.configs(idx), keys=keys,
                        predicted=pred, reward=reward, p_success=ps, std=objective.std(idx), stats=stats)


__all__ = ["Formula", "Model", "Objective", "SearchResult", "check_inputs", "select_top", "top_rows"]
