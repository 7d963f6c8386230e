"""The zoo's generic conformance test (like scikit-learn's ``check_estimator``), run over
every registered member on real data (``vtrain-a100``), plus the registry and the
failure classifier on real OOM rows.

Members are fitted on a 400-row sample of a seeded 75/25 split (fewer epochs / trees where
a member is slow) and scored on the held-out quarter, so the file runs in a few minutes
on 2 cores.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from perfzoo import zoo
from perfzoo.datasets import load_dataset
from perfzoo.evaluation.splits import random_split
from perfzoo.testing import check_predictor
from perfzoo.zoo import conformal
from perfzoo.zoo.analytic_features import MEMORY_FEATURES, estimates
from perfzoo.zoo.features import FeatureEncoder
from perfzoo.zoo.interval import Interval

REQUIRED_MEMBERS = {
    "constant", "analytic", "ridge", "knn", "random_forest", "gbr", "hist_gbr", "lightgbm", "catboost",
    "lightgbm_rank", "catboost_rank", "mlp_rank_ensemble", "mlp", "gp", "hybrid", "failure",
}

# smaller settings for speed; every other parameter is the member's default
FAST = {
    "random_forest": dict(n_estimators=60),
    "hist_gbr": dict(max_iter=100),
    "lightgbm": dict(n_estimators=150),
    "catboost": dict(iterations=150),
    "lightgbm_rank": dict(n_estimators=150),
    "catboost_rank": dict(iterations=100),
    "mlp_rank_ensemble": dict(n_models=2, epochs=25),
    "mlp": dict(max_iter=300),
    "gp": dict(max_opt_samples=150, max_opt_iter=30),
    "hybrid": dict(n_estimators=150),
    "failure": dict(n_estimators=60),
}
N_TRAIN = 400


@pytest.fixture(scope="module")
def vtrain(external):
    """(X_train, y_train, X_test, y_test): seed-0 random split, 400 training rows sampled."""
    ds = load_dataset("vtrain-a100", external_dir=external).ok()
    X = ds.X  # features, constant ones included: the analytic estimates need them
    y = ds.y
    split = random_split(ds, seed=0)
    train = np.sort(np.random.default_rng(0).choice(split.train, N_TRAIN, replace=False))
    return (X.iloc[train].reset_index(drop=True), y[train],
            X.iloc[split.test].reset_index(drop=True), y[split.test])


def _target(name: str, y: np.ndarray) -> np.ndarray:
    """What a member is fitted on: throughput, or for ``failure`` a stand-in failure label
    (vTrain has no failed jobs): the slowest quarter 'fails' (NaN throughput = failed)."""
    if name != "failure":
        return y
    return np.where(y < np.quantile(y, 0.25), np.nan, y)


def test_registry_has_every_member():
    assert REQUIRED_MEMBERS <= set(zoo.names())
    assert set(zoo.names(floors=False)) == set(zoo.names()) - {"constant", "analytic", "roofline"}
    assert "failure" not in zoo.names(throughput_only=True)
    with pytest.raises(ValueError, match="registered"):
        zoo.make("xgboost")
    with pytest.raises(ValueError, match="takes"):
        zoo.make("lightgbm", n_trees=5)
    with pytest.raises(zoo.NotFittedError):
        zoo.make("ridge").predict(pd.DataFrame({"config.tp": [1]}))
    for name in zoo.names():
        cls = zoo.get(name)
        assert cls.name == name and cls.output in ("throughput", "score", "probability")
        assert cls.encoding in (None, "native", "numeric", "scaled", "onehot")


@pytest.mark.parametrize("name", zoo.names())
def test_conformance(name, vtrain, tmp_path):
    """Every member, and :class:`~perfzoo.zoo.interval.Interval` wrapped around it, passes
    :func:`perfzoo.testing.check_predictor` on real data."""
    X, y, X_test, y_test = vtrain
    params = FAST.get(name, {})
    model = zoo.make(name, **params)
    assert model.get_params() == {**zoo.get(name)().get_params(), **params}  # the constructor stores parameters only
    check_predictor(model, X, _target(name, y), X_test, y_test, tmp_path, dataset="vtrain-a100")


@pytest.mark.external
def test_failure_classifier_on_real_oom_rows():
    ds = load_dataset("published-llm")
    ds = ds.subset(~ds.unlabelled)  # rows with a throughput or a failure
    X, failed = ds.X, ds.failed
    assert failed.any(), "published-llm should hold OOM rows"
    model = zoo.make("failure").fit(X, ds.y)  # dataset.y is NaN where the job failed
    p_fail = model.predict_failure(X)
    assert ((0 <= p_fail) & (p_fail <= 1)).all()
    assert p_fail[failed].mean() > p_fail[~failed].mean()
    model2 = zoo.make("failure").fit(X, ds.frame["status"])  # status strings work too
    np.testing.assert_allclose(model2.predict_failure(X), p_fail)


def test_ranking_members_respect_groups(vtrain):
    X, y, X_test, y_test = vtrain
    groups = np.where(X["config.hidden_dim"] > 1024, "big", "small")
    model = zoo.make("lightgbm_rank", n_estimators=50).fit(X, y, groups=groups)
    assert np.isfinite(model.predict(X_test)).all()


def test_gp_std_of_one_config_given_as_a_dict(vtrain):
    X, y, _, _ = vtrain
    gp = zoo.make("gp", target="per_device").fit(X.iloc[:200], y[:200])
    row = X.iloc[[0]]
    assert gp.predict_std(row.iloc[0].to_dict()) == pytest.approx(gp.predict_std(row))


def test_interval_folds_hold_out_whole_sources_and_deal_small_ones():
    X = pd.DataFrame({"config.tp": np.arange(70) % 35})  # every configuration twice
    groups = ["a.csv"] * 30 + ["b.csv"] * 30 + ["my_runs.csv"] * 10
    fold = conformal.fold_labels(X, groups, folds=5, seed=0)
    assert len(set(fold[:30])) == len(set(fold[30:60])) == 1 and fold[0] != fold[30]  # one fold per large source
    assert set(fold[60:]) == {0, 1}  # the 10 runs, too few to hold out against the rest, dealt over both folds
    alone = conformal.fold_labels(X, None, folds=5, seed=0)  # without sources: by configuration
    assert len(set(alone)) == 5 and all(alone[i] == alone[i + 35] for i in range(35))
    with pytest.raises(ValueError, match="at least two configurations"):
        conformal.fold_labels(X.iloc[[0, 35]], None, folds=5, seed=0)


def test_conformal_quantiles_by_rank():
    r = np.log(np.arange(1, 20, dtype=float))  # 19 residuals: log 1 .. log 19
    # alpha 0.2: the floor(20 x 0.1) = 2nd smallest and the ceil(20 x 0.9) = 18th smallest
    assert np.exp(conformal.conformal_quantiles(r, 0.2)) == pytest.approx((2.0, 18.0))
    # too few residuals for a 99% interval: unbounded, as split-conformal prescribes
    assert conformal.conformal_quantiles(r, 0.01) == (-np.inf, np.inf)
    low, high = conformal.scaled(np.array([10.0]), conformal.quantiles(r, 0.2))
    assert (low[0], high[0]) == pytest.approx((20.0, 180.0))
    with pytest.raises(ValueError, match="strictly between 0 and 1"):
        conformal.conformal_quantiles(r, 1.0)



def test_a_big_source_does_not_set_the_interval_alone():
    # held out in turn, a big source was predicted within 1%, a small one within 50%
    r = np.concatenate([np.linspace(-0.01, 0.01, 270), np.linspace(-0.5, 0.5, 30)])
    X = pd.DataFrame({"config.tp": np.arange(300)})
    w = conformal.group_weights(X, ["big.csv"] * 270 + ["small.csv"] * 30)
    assert w[:270].sum() == pytest.approx(w[270:].sum()) and w.mean() == pytest.approx(1.0)
    assert conformal.group_weights(X, None) == pytest.approx(np.ones(300))  # no sources: every row alike
    small = r[270:]

    def covers(lo, hi):
        return float(np.mean((small >= lo) & (small <= hi)))

    pooled = conformal.conformal_quantiles(r, 0.2)
    assert pooled[1] - pooled[0] < 0.05 and covers(*pooled) < 0.1  # pooled, the rows of the big source decide
    lo, hi = conformal.conformal_quantiles(r, 0.2, weights=w)
    assert 0.5 <= covers(lo, hi) <= 0.7  # each source weighs half: 80% on average over the two
    assert conformal.conformal_quantiles(r, 0.2, weights=np.ones(300)) == conformal.conformal_quantiles(r, 0.2)

def test_an_interval_wraps_a_throughput_member(vtrain):
    X, y, X_test, _ = vtrain
    ridge = zoo.make("ridge").fit(X, y)
    assert not hasattr(ridge, "predict_interval")  # a member predicts; Interval gives it an interval
    with pytest.raises(zoo.NotFittedError, match="not fitted yet"):
        Interval(zoo.make("ridge")).predict_interval(X_test)
    with pytest.raises(TypeError, match="lightgbm_rank: its outputs are scores, not throughput; it has no interval"):
        Interval(zoo.make("lightgbm_rank", n_estimators=20)).fit(X, y)
    with pytest.raises(ValueError, match="folds must be an integer of at least 2"):
        Interval(zoo.make("ridge"), folds=1).fit(X, y)


@pytest.mark.parametrize("name", ["gp", "knn", "mlp"])
def test_a_feature_constant_in_training_cannot_move_a_prediction(name):
    # every training job ran on one card (80 GB): a GP fitted there priced every job of a 141 GB
    # card at the training mean (60 standard deviations of a constant put it beyond every kernel)
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"config.a": rng.uniform(1.0, 8.0, 60), "hardware.accelerator_memory_gib": 80.0,
                      "hardware.accelerator": "H100-80GB"})
    y = np.exp(X["config.a"].to_numpy() / 2)
    model = zoo.make(name).fit(X, y)
    other = X.assign(**{"hardware.accelerator_memory_gib": 141.0, "hardware.accelerator": "H200-141GB"})
    np.testing.assert_allclose(model.predict(other), model.predict(X))
    assert not np.allclose(model.predict(X), model.predict(X)[0])


def test_the_mlp_holds_each_feature_to_its_training_range():
    # a ReLU network goes on linearly outside its training range: fitted on 1-8 GPUs it would
    # price 1,000 GPUs at any size at all; clipped, it prices them as its largest training job
    rng = np.random.default_rng(0)
    a = np.tile(np.arange(1.0, 9.0), 4)
    X = pd.DataFrame({"config.a": a, "config.b": rng.uniform(1.0, 2.0, len(a))})
    y = np.exp(a / 2) * X["config.b"].to_numpy()
    model = zoo.make("mlp", max_iter=300).fit(X, y)
    far, edge = X.head(3).assign(**{"config.a": 1000.0}), X.head(3).assign(**{"config.a": 8.0})
    np.testing.assert_allclose(model.predict(far), model.predict(edge))
    inside = model.predict(X)
    assert np.isfinite(inside).all() and (inside > 0).all() and not np.allclose(inside, inside[0])


def test_hybrid_does_not_learn_throughput_from_whether_a_config_fits(vtrain):
    # split on the memory estimates, the correction learned where each published source's recipes
    # put their memory use and carried that source's efficiency to another's runs
    X, y, X_test, _ = vtrain
    model = zoo.make("hybrid", n_estimators=50).fit(X, y)
    assert not set(model.encoder_.feature_names_) & set(MEMORY_FEATURES)
    assert "analytic.log_throughput" in model.encoder_.feature_names_
    roomier = X_test.assign(**{"hardware.accelerator_memory_gib": 160.0})  # same card, twice the memory
    assert not np.allclose(estimates(roomier)["memory_fraction"], estimates(X_test)["memory_fraction"])
    np.testing.assert_allclose(model.predict(roomier), model.predict(X_test))
    with pytest.raises(ValueError, match="not analytic features"):
        FeatureEncoder("native", exclude_analytic=["analytic.memory_fractions"])


def test_a_predictor_saved_before_its_module_moved_is_refused_in_one_line(tmp_path, monkeypatch):
    import sys
    import types

    import joblib

    from perfzoo.zoo.base import MODEL_FILE, Predictor

    old = types.ModuleType("perfzoo.features_before_the_move")  # where a class lived when it was saved
    exec("class FeatureEncoder:\n    pass\n", old.__dict__)
    old.FeatureEncoder.__module__ = old.__name__
    monkeypatch.setitem(sys.modules, old.__name__, old)
    joblib.dump(old.FeatureEncoder(), tmp_path / MODEL_FILE)
    monkeypatch.delitem(sys.modules, old.__name__)
    with pytest.raises(ValueError, match=r"saved by an older perfzoo: its module perfzoo.features_before_the_move has "
                                         r"moved \(CHANGELOG.md\); fit the predictor again"):
        Predictor.load(tmp_path)
