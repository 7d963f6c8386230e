"""Conformance checks for your own predictor or searcher, like scikit-learn's ``check_estimator``.

The zoo's members and the built-in searchers pass these in perfzoo's own tests
(``tests/test_zoo.py``, ``tests/test_search.py``); a new member or searcher passes them too
before it joins, and so can one of yours::

    from perfzoo.testing import check_predictor, check_searcher, predictor_failures
    predictor_failures(MyPredictor(), X, y, X_test, y_test, tmp_dir)  # [] or one line per failure
    check_predictor(MyPredictor(), X, y, X_test, y_test, tmp_dir)     # raises AssertionError listing them
    check_searcher(MySearcher(n_samples=400))                         # a perfzoo.search.Searcher

where ``X, y, X_test, y_test`` are two sides of a dataset, e.g. of a bundled one::

    from perfzoo.datasets import load_dataset
    from perfzoo.evaluation.splits import random_split
    ds = load_dataset("llm-h100").labelled()
    sp = random_split(ds, seed=0)
    X, y, X_test, y_test = ds.X.iloc[sp.train], ds.y[sp.train], ds.X.iloc[sp.test], ds.y[sp.test]

or, as Optuna's ``BasicSamplerTestCase``, one pytest test per check: subclass
:class:`SearcherTestKit` and give it a ``searcher`` fixture::

    class TestMySearcher(SearcherTestKit):
        @pytest.fixture
        def searcher(self):
            return MySearcher(n_samples=400)
"""

from __future__ import annotations

import json
from pathlib import Path
from dataclasses import replace
from functools import lru_cache
from typing import Callable

import numpy as np
import pandas as pd
from sklearn.base import clone

from perfzoo import zoo
from perfzoo.console import one_line
from perfzoo.evaluation.metrics import coverage, kendall
from perfzoo.search import Exhaustive, Formula, Searcher, SearchResult, propose
from perfzoo.spaces import Categorical, Constraint, Space
from perfzoo.zoo.base import Predictor
from perfzoo.zoo.interval import Interval
from perfzoo.zoo.plugin import instance_problems


def check_predictor(model: Predictor, X: pd.DataFrame, y: np.ndarray, X_test: pd.DataFrame, y_test: np.ndarray,
                    tmp_dir: Path, dataset: str = "check", min_kendall: float = 0.3) -> None:
    """Every check of :func:`predictor_failures`; an ``AssertionError`` lists the failures, one per line."""
    failures = predictor_failures(model, X, y, X_test, y_test, tmp_dir, dataset, min_kendall)
    assert not failures, "\n".join(failures)


def predictor_failures(model: Predictor, X: pd.DataFrame, y: np.ndarray, X_test: pd.DataFrame, y_test: np.ndarray,
                       tmp_dir: Path, dataset: str = "check", min_kendall: float = 0.3) -> list[str]:
    """What ``model`` lacks of the contract every zoo member keeps, one line per failure (``[]``:
    none). First without data (:func:`perfzoo.zoo.plugin.instance_problems`: a ``Predictor`` with
    a name, valid tags, ``_fit``/``_predict``, a constructor that stores its parameters), then on
    ``X, y`` (training) and ``X_test, y_test`` (held out): parameters and ``clone``, ``fit``
    returns self, one finite float per row, the same seed gives the same predictions,
    ``save``/``load`` round trip with metadata, one row predicts as inside a frame, unseen
    categories and a missing optional column are unknowns, a constant target does not crash,
    ``predict_std`` where offered, the member wrapped in :class:`~perfzoo.zoo.interval.Interval`
    (3 folds; refused for a member whose outputs are not throughput) predicts as the member, offers
    its tags, ``predict_std`` and ``relative`` factors, and its 80% interval covers at least 65% of
    the held-out rows, and at most 97% unless it is narrow (median high/low <= 1.25: the folds' fits
    saw a third fewer rows than the member, so a member whose error falls fast with more rows, e.g.
    ``gp`` at +-2%, is conservative), holds in the 95% one and survives ``save``/``load``, and a
    non-floor member ranks held-out rows (Kendall tau above ``min_kendall``). ``y`` may hold NaN for failed jobs (the ``failure`` member's labels). A check
    that raises is a failure naming the exception; after a failed fit nothing else is checked."""
    name = getattr(model, "name", None)
    label = name if isinstance(name, str) and name != Predictor.name else type(model).__name__
    static = instance_problems(model, label)
    if static:
        return static
    checks = _PredictorChecks(model, X, y, X_test, y_test, Path(tmp_dir), dataset, min_kendall)
    failures = []
    for check in checks.all():
        try:
            check()
        except AssertionError as exc:
            failures.append(one_line(exc))
        except Exception as exc:
            failures.append(f"{label}: {check.__doc__} raised {type(exc).__name__}: {one_line(exc)}")
        else:
            continue
        if check.__name__ in _PredictorChecks.ESSENTIAL:
            break
    return failures


def _values(model: Predictor) -> dict:
    """``model``'s parameters, a nested estimator's as its own parameters (clones compare equal)."""
    return {k: v for k, v in model.get_params(deep=True).items() if not hasattr(v, "get_params")}


def _close(actual: np.ndarray, expected: np.ndarray, rtol: float, atol: float, message: str) -> None:
    """An ``AssertionError`` of one line (``message`` and the largest difference) unless the arrays agree."""
    actual, expected = np.asarray(actual, dtype=float), np.asarray(expected, dtype=float)
    assert actual.shape == expected.shape, f"{message} (shape {actual.shape} against {expected.shape})"
    if not np.allclose(actual, expected, rtol=rtol, atol=atol, equal_nan=True):
        worst = float(np.nanmax(np.abs(actual - expected) / np.maximum(np.abs(expected), 1e-300)))
        raise AssertionError(f"{message} (largest relative difference {worst:.3g})")


class _PredictorChecks:
    """The checks of :func:`predictor_failures` on data, in order; each raises ``AssertionError``
    naming the member and what failed. A check named in :data:`ESSENTIAL` that fails ends the run
    (every later check needs its result)."""

    ESSENTIAL = ("check_fit", "check_predictions")

    def __init__(self, model: Predictor, X, y, X_test, y_test, tmp_dir: Path, dataset: str, min_kendall: float):
        self.model, self.X, self.y, self.X_test, self.y_test = model, X, y, X_test, y_test
        self.tmp_dir, self.dataset, self.min_kendall = tmp_dir, dataset, min_kendall
        self.name = model.name
        self.twin = clone(model)

    def all(self) -> list[Callable[[], None]]:
        return [self.check_parameters, self.check_fit, self.check_fit_returns_self, self.check_predictions,
                self.check_refit, self.check_save_load,
                self.check_one_row, self.check_unseen_values, self.check_missing_optional_column,
                self.check_constant_target, self.check_interval, self.check_std, self.check_proba, self.check_ranks]

    def check_parameters(self) -> None:
        """checking get_params, clone and set_params"""
        assert _values(self.twin) == _values(self.model), f"{self.name}: clone changed the parameters"
        params = self.model.get_params(deep=False)
        assert self.model.set_params(**params) is self.model, f"{self.name}: set_params must return self"

    def check_fit(self) -> None:
        """fit(X, y)"""
        self.returned = self.model.fit(self.X, self.y, dataset=self.dataset)
        self.pred = self.model.predict(self.X_test)

    def check_fit_returns_self(self) -> None:
        """fit(X, y)"""
        assert self.returned is self.model, f"{self.name}: fit must return self"

    def check_predictions(self) -> None:
        """predict(X)"""
        pred = self.pred
        assert isinstance(pred, np.ndarray) and pred.shape == (len(self.X_test),) and pred.dtype == float, \
            f"{self.name}: predict must give one float per row (a numpy array of shape ({len(self.X_test)},))"
        assert np.isfinite(pred).all(), f"{self.name}: non-finite predictions"

    def check_refit(self) -> None:
        """refitting a clone"""
        self.twin.fit(self.X, self.y)
        _close(self.twin.predict(self.X_test), self.pred, 1e-7, 1e-10, f"{self.name}: refit with the same seed differs")

    def check_save_load(self) -> None:
        """save and zoo.load"""
        model, name = self.model, self.name
        path = model.save(self.tmp_dir / name)
        loaded = zoo.load(path)
        assert type(loaded) is type(model), f"{name}: load gave {type(loaded).__name__}"
        _close(loaded.predict(self.X_test), self.pred, 1e-12, 0.0, f"{name}: save/load changed it")
        meta = json.loads((path / "metadata.json").read_text())
        y = self.y
        n_fit = len(y) - (int(np.isnan(y).sum()) if model.output != "probability" else 0)
        assert meta["name"] == name and meta["dataset"] == self.dataset and meta["n_train"] == n_fit, \
            f"{name}: metadata name, dataset or n_train"
        assert meta["perfzoo_version"] and meta["fit_time_s"] >= 0 and meta["params"] == json.loads(
            json.dumps(model.get_params(deep=False), default=repr)), f"{name}: metadata parameters"
        assert set(meta["input_columns"]) == set(self.X.columns), f"{name}: metadata input columns"

    def check_one_row(self) -> None:
        """predicting one row"""
        _close(self.model.predict(self.X_test.iloc[[3]]), self.pred[[3]], 1e-9, 0.0,
               f"{self.name}: one row predicts differently than inside a frame")

    def check_unseen_values(self) -> None:
        """predicting unseen categories and an extra column"""
        categorical = [c for c in self.X_test.columns if self.X_test[c].dtype == object]
        unseen = self.X_test.iloc[:20].assign(**{c: "never-seen" for c in categorical}, **{"config.not_a_knob": 1})
        out = self.model.predict(unseen)
        assert out.shape == (20,) and np.isfinite(out).all(), f"{self.name}: unseen category or an extra column"

    def check_missing_optional_column(self) -> None:
        """predicting without an optional column"""
        optional = [c for c in self.X_test.columns if c.startswith("hardware.")]
        if optional:
            out = self.model.predict(self.X_test.iloc[:20].drop(columns=optional[:1]))
            assert out.shape == (20,) and np.isfinite(out).all(), f"{self.name}: missing optional column {optional[0]}"

    def check_constant_target(self) -> None:
        """fitting a constant target"""
        out = clone(self.model).fit(self.X, np.full(len(self.X), 1234.0)).predict(self.X_test)
        assert out.shape == (len(self.X_test),) and np.isfinite(out).all(), f"{self.name}: constant target"

    def check_interval(self) -> None:
        """wrapping it in Interval"""
        model, name, X_test = self.model, self.name, self.X_test
        wrapper = Interval(clone(model), folds=3)
        if model.output != "throughput":
            try:
                wrapper.fit(self.X, self.y)
            except TypeError:
                return
            raise AssertionError(f"{name}: Interval must refuse a member whose outputs are {model.output}s")
        assert wrapper.fit(self.X, self.y, dataset=self.dataset) is wrapper, f"{name}: Interval.fit must return self"
        assert (wrapper.name, wrapper.output, wrapper.has_std, wrapper.dataset_, wrapper.input_columns_) == (
            name, "throughput", model.has_std, self.dataset, model.input_columns_), f"{name}: Interval's tags"
        _close(wrapper.predict(X_test), self.pred, 1e-7, 1e-10, f"{name}: Interval predicts otherwise than its member")
        if model.has_std:
            _close(wrapper.predict_std(X_test), model.predict_std(X_test), 1e-7, 1e-10, f"{name}: Interval's predict_std")
        assert hasattr(wrapper, "predict_std") == model.has_std, f"{name}: Interval offers predict_std unlike its member"
        low, high = wrapper.predict_interval(X_test, alpha=0.2)
        assert low.shape == high.shape == (len(X_test),), f"{name}: one interval per row"
        assert np.isfinite(low).all() and np.isfinite(high).all() and (0 < low).all() and (low <= high).all(), \
            f"{name}: intervals must be finite, positive and ordered"
        cover = coverage(self.y_test, low, high)
        width = float(np.median(high / low))
        assert cover >= 0.65, f"{name}: the 80% interval covers {cover:.0%} of held-out rows (at least 65% expected)"
        assert cover <= 0.97 or width <= 1.25, (f"{name}: the 80% interval covers {cover:.0%} of held-out rows with a "
                                                f"median width of {width:.2f}x: too wide")
        wide_low, wide_high = wrapper.predict_interval(X_test, alpha=0.05)
        assert (wide_low <= low).all() and (high <= wide_high).all(), f"{name}: a 95% interval must hold the 80% one"
        rel_low, rel_high = wrapper.relative()
        assert 0 < rel_low < rel_high < np.inf, f"{name}: relative factors ({rel_low:.3g}, {rel_high:.3g})"
        loaded = zoo.load(wrapper.save(self.tmp_dir / f"{name}-interval"))
        assert type(loaded) is Interval, f"{name}: an Interval saved loads as a {type(loaded).__name__}"
        _close(loaded.predict_interval(X_test)[1], high, 1e-12, 0.0, f"{name}: save/load lost the interval")

    def check_std(self) -> None:
        """predict_std"""
        if self.model.has_std:
            std = self.model.predict_std(self.X_test)
            assert std.shape == (len(self.X_test),) and np.isfinite(std).all() and (std >= 0).all(), \
                f"{self.name}: predict_std"

    def check_proba(self) -> None:
        """predict_proba"""
        if self.model.output == "probability":
            proba = self.model.predict_proba(self.X_test)
            assert proba.shape == (len(self.X_test), 2) and np.allclose(proba.sum(axis=1), 1.0), \
                f"{self.name}: predict_proba"
            _close(proba[:, 0], self.pred, 1e-7, 0.0, f"{self.name}: predict must be P(success)")

    def check_ranks(self) -> None:
        """scoring the held-out rows"""
        tau = kendall(self.y_test, self.pred)
        if self.model.floor:
            assert self.name == "constant" or np.isfinite(tau), f"{self.name}: Kendall tau is not finite"
        else:
            assert tau > self.min_kendall, \
                f"{self.name}: Kendall tau {tau:.3f} on held-out rows is not above {self.min_kendall}"


# --- searchers -----------------------------------------------------------------------------------

K, V = 6, 5  # the toy space: 6 knobs of 5 values


def toy_space() -> Space:
    """6 knobs of 5 values; the pair (k0, k1) may not both take the last value."""
    def pair(c: dict):
        return "k0 and k1 cannot both be the last value" if c["k0"] == c["k1"] == f"v{V - 1}" else None

    return Space(name="toy", workload="fsdp",
                 dimensions=[Categorical(f"k{i}", choices=tuple(f"v{j}" for j in range(V))) for i in range(K)],
                 constraints=[Constraint("pair", pair)])


def toy_reward(seed: int = 1) -> Formula:
    """A predictor over :func:`toy_space` whose unconstrained optimum the constraint forbids."""
    W = np.random.default_rng(seed).normal(size=(K, V))
    W[0, V - 1] = W[0].max() + 0.5
    W[1, V - 1] = W[1].max() + 0.5

    def predictor(X: pd.DataFrame) -> np.ndarray:
        s = np.zeros(len(X))
        for i in range(K):
            s += W[i][np.array([int(str(v)[1:]) for v in X[f"config.k{i}"]])]
        return np.exp(s)

    return Formula(predictor)


@lru_cache(maxsize=None)
def _toy_truth() -> SearchResult:
    """The exhaustive top 20 of :func:`toy_reward` over :func:`toy_space` (the kit's ground truth)."""
    return propose(Exhaustive(), toy_space(), toy_reward(), top_k=20)


EXCLUDED = 5  # the kit excludes the 5 best configs, as if already measured


@lru_cache(maxsize=None)
def _toy_run(searcher: Searcher, top_k: int) -> SearchResult:
    """``searcher`` (its seed set to 3) on the toy problem, the 5 best configs excluded."""
    return propose(replace(searcher, seed=3), toy_space(), toy_reward(), top_k,
                   exclude=_toy_truth().configs[:EXCLUDED])


class SearcherTestKit:
    """The searcher contract, one check per method, on :func:`toy_space` with :func:`toy_reward`
    (whose unconstrained optimum the constraint forbids). Each method takes the searcher
    (a pytest fixture named ``searcher`` in a subclass); :func:`check_searcher` runs them all.
    A searcher with a seed and a proposal count runs with seed 3 and ``top_k`` = 10."""

    top_k = 10

    def test_returns_at_most_top_k_distinct_configs(self, searcher: Searcher) -> None:
        res = _toy_run(searcher, self.top_k)
        assert isinstance(res, SearchResult), f"{searcher.name}: must return a SearchResult"
        assert 0 < len(res) <= self.top_k, f"{searcher.name}: {len(res)} proposals for top_k={self.top_k}"
        assert len(set(res.keys.tolist())) == len(res), f"{searcher.name}: duplicate proposals"
        assert res.space.name == toy_space().name, f"{searcher.name}: the result must carry the space searched"

    def test_proposals_are_valid_configs(self, searcher: Searcher) -> None:
        space, res = toy_space(), _toy_run(searcher, self.top_k)
        assert all(space.validate(c) == c for c in res.configs), f"{searcher.name}: a proposal is not a valid config"

    def test_excluded_configs_are_never_proposed(self, searcher: Searcher) -> None:
        excluded = set(_toy_truth().keys[:EXCLUDED].tolist())
        assert not set(_toy_run(searcher, self.top_k).keys.tolist()) & excluded, \
            f"{searcher.name}: proposed an excluded config"

    def test_best_first_and_never_above_the_optimum(self, searcher: Searcher) -> None:
        res = _toy_run(searcher, self.top_k)
        assert np.all(np.diff(res.reward) <= 1e-12), f"{searcher.name}: proposals are not best first"
        assert res.predicted[0] <= _toy_truth().predicted[0] + 1e-9, \
            f"{searcher.name}: scored above the exhaustive optimum"

    def test_same_seed_same_proposals(self, searcher: Searcher) -> None:
        again = propose(replace(searcher, seed=3), toy_space(), toy_reward(), self.top_k,
                        exclude=_toy_truth().configs[:EXCLUDED])
        assert again.keys.tolist() == _toy_run(searcher, self.top_k).keys.tolist(), \
            f"{searcher.name}: the same seed gave other proposals"


def check_searcher(searcher: Searcher, top_k: int = 10) -> None:
    """Every check of :class:`SearcherTestKit` on ``searcher``: at most ``top_k`` distinct
    configs, each valid in the space (constraints included), none of them excluded, best first,
    never above the exhaustive optimum, the same for the same seed; an ``AssertionError`` names
    the first that fails."""
    kit = SearcherTestKit()
    kit.top_k = top_k
    for name in sorted(n for n in dir(kit) if n.startswith("test_")):
        getattr(kit, name)(searcher)
