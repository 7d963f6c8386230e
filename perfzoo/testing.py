"""Conformance checks for your own predictor or searcher, like scikit-learn's ``check_estimator``.

The zoo's members and the built-in searchers pass these in perfzoo's own tests
(``tests/test_zoo.py``, ``tests/test_search.py``); a new member or searcher passes them too
before it joins, and so can one of yours::

    from perfzoo.testing import check_predictor, check_searcher
    check_predictor(MyPredictor(), X, y, X_test, y_test, tmp_dir)   # raises AssertionError naming the check
    check_searcher(MySearcher(n_samples=400))                       # a perfzoo.search.Searcher

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

import numpy as np
import pandas as pd
from sklearn.base import clone

from perfzoo.evaluation.metrics import coverage, kendall
from perfzoo.search import Exhaustive, Formula, Searcher, SearchResult, propose
from perfzoo.spaces import Categorical, Constraint, Space
from perfzoo import zoo
from perfzoo.zoo.base import Predictor


def check_predictor(model: Predictor, X: pd.DataFrame, y: np.ndarray, X_test: pd.DataFrame, y_test: np.ndarray,
                    tmp_dir: Path, dataset: str = "check", min_kendall: float = 0.3) -> None:
    """The estimator contract every zoo member keeps, on real data: parameters and ``clone``,
    ``fit`` returns self, one finite float per row, the same seed gives the same predictions,
    ``save``/``load`` round trip with metadata, one row predicts as inside a frame, unseen
    categories and a missing optional column are unknowns, a constant target does not crash,
    ``predict_std`` where offered, a ``throughput`` member's 80% interval (``fit_interval``,
    ``predict_interval``; 3 folds) covers at least 65% of the held-out rows, and at most 97% unless
    it is narrow (median high/low <= 1.25: the folds' fits saw a third fewer rows than the member, so
    a member whose error falls fast with more rows, e.g. ``gp`` at +-2%, is conservative) and
    survives ``save``/``load``,
    and a non-floor member ranks held-out rows (Kendall tau above ``min_kendall``). ``y`` may hold
    NaN for failed jobs (the ``failure`` member's labels)."""
    name = model.name
    params = model.get_params()
    twin = clone(model)
    assert twin.get_params() == params, f"{name}: clone changed the parameters"
    assert model.set_params(**params) is model, f"{name}: set_params must return self"

    assert model.fit(X, y, dataset=dataset) is model, f"{name}: fit must return self"
    pred = model.predict(X_test)
    assert pred.shape == (len(X_test),) and pred.dtype == float, f"{name}: predict must give one float per row"
    assert np.isfinite(pred).all(), f"{name}: non-finite predictions"
    np.testing.assert_allclose(twin.fit(X, y).predict(X_test), pred, rtol=1e-7, atol=1e-10,
                               err_msg=f"{name}: refit with the same seed differs")

    path = model.save(Path(tmp_dir) / name)
    loaded = zoo.load(path)
    assert type(loaded) is type(model), f"{name}: load gave {type(loaded).__name__}"
    np.testing.assert_allclose(loaded.predict(X_test), pred, rtol=1e-12, err_msg=f"{name}: save/load changed it")
    meta = json.loads((path / "metadata.json").read_text())
    n_fit = len(y) - (int(np.isnan(y).sum()) if model.output != "probability" else 0)
    assert meta["name"] == name and meta["dataset"] == dataset and meta["n_train"] == n_fit, f"{name}: metadata"
    assert meta["perfzoo_version"] and meta["fit_time_s"] >= 0 and meta["params"] == json.loads(
        json.dumps(model.get_params(), default=repr)), f"{name}: metadata parameters"
    assert set(meta["input_columns"]) == set(X.columns), f"{name}: metadata input columns"

    np.testing.assert_allclose(model.predict(X_test.iloc[[3]]), pred[[3]], rtol=1e-9,
                               err_msg=f"{name}: one row predicts differently than inside a frame")
    categorical = [c for c in X_test.columns if X_test[c].dtype == object]
    unseen = X_test.iloc[:20].assign(**{c: "never-seen" for c in categorical}, **{"config.not_a_knob": 1})
    out = model.predict(unseen)
    assert out.shape == (20,) and np.isfinite(out).all(), f"{name}: unseen category or an extra column"
    optional = [c for c in X_test.columns if c.startswith("hardware.")]
    if optional:
        out = model.predict(X_test.iloc[:20].drop(columns=optional[:1]))
        assert out.shape == (20,) and np.isfinite(out).all(), f"{name}: missing optional column {optional[0]}"
    out = clone(model).fit(X, np.full(len(X), 1234.0)).predict(X_test)
    assert out.shape == (len(X_test),) and np.isfinite(out).all(), f"{name}: constant target"

    if model.output == "throughput":
        assert model.fit_interval(X, y, folds=3) is model, f"{name}: fit_interval must return self"
        low, high = model.predict_interval(X_test, alpha=0.2)
        assert low.shape == high.shape == (len(X_test),), f"{name}: one interval per row"
        assert np.isfinite(low).all() and np.isfinite(high).all() and (0 < low).all() and (low <= high).all(), \
            f"{name}: intervals must be finite, positive and ordered"
        cover = coverage(y_test, low, high)
        width = float(np.median(high / low))
        assert cover >= 0.65, f"{name}: the 80% interval covers {cover:.0%} of held-out rows (at least 65% expected)"
        assert cover <= 0.97 or width <= 1.25, (f"{name}: the 80% interval covers {cover:.0%} of held-out rows with a "
                                                f"median width of {width:.2f}x: too wide")
        wide_low, wide_high = model.predict_interval(X_test, alpha=0.05)
        assert (wide_low <= low).all() and (high <= wide_high).all(), f"{name}: a 95% interval must hold the 80% one"
        np.testing.assert_allclose(zoo.load(model.save(Path(tmp_dir) / f"{name}-interval")).predict_interval(X_test)[1],
                                   high, rtol=1e-12, err_msg=f"{name}: save/load lost the interval")

    if model.has_std:
        std = model.predict_std(X_test)
        assert std.shape == (len(X_test),) and np.isfinite(std).all() and (std >= 0).all(), f"{name}: predict_std"
    if model.output == "probability":
        proba = model.predict_proba(X_test)
        assert proba.shape == (len(X_test), 2) and np.allclose(proba.sum(axis=1), 1.0), f"{name}: predict_proba"
        np.testing.assert_allclose(proba[:, 0], pred, err_msg=f"{name}: predict must be P(success)")
    tau = kendall(y_test, pred)
    if model.floor:
        assert name == "constant" or np.isfinite(tau), f"{name}: Kendall tau is not finite"
    else:
        assert tau > min_kendall, f"{name}: Kendall tau {tau:.3f} on held-out rows is not above {min_kendall}"


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
